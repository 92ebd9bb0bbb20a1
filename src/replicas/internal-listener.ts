// The internal listener (replicas): other replicas forward tasks/update, tasks/cancel and MRTR retries for the
// tasks this one runs here (forward.ts sends them). It serves the same app, but only to requests that carry a
// valid replica credential: it is no second front door. A request it lets in is marked forwarded, so the
// routes apply it here instead of forwarding it again.
import type { Server } from "node:http";
import { forwardForbidden } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { FORWARDED_HEADER, ForwardTokenCheck } from "./forward-token.js";
import { Exchange, type NodeEnv } from "../server/exchange.js";
import { nodeServer, type MutualTls } from "../server/node-server.js";

/** The app the listener serves (the gateway's Hono app: anything with its fetch). */
interface App {
  fetch(req: Request, env: NodeEnv): Response | Promise<Response>;
}

/**
 * A Node server (not listening yet) for `app`, behind the replica credential check under `key` (forwardingKey).
 * `tls` (server.internalTls): HTTPS, and only clients whose certificate chains to `ca` get past the handshake.
 */
export function internalListener(app: App, key: Buffer, now: () => number, tls?: MutualTls): Server {
  const check = new ForwardTokenCheck(key);
  return nodeServer((req, env) => {
    const { incoming, outgoing } = env;
    const token = incoming.headers[FORWARDED_HEADER];
    if (!check.verify(typeof token === "string" ? token : undefined, now())) {
      return faultResponse(null, forwardForbidden());
    }
    // The request goes on to the app with what the credential proved: the app's steps see it was forwarded.
    const ex = Exchange.fromNode(incoming, outgoing, new URL(req.url).pathname);
    ex.forwarded = { replica: String(token).split(".")[0] ?? "", limitsChecked: true };
    ex.carryOn();
    return app.fetch(req, env);
  }, tls);
}
