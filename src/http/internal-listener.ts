// The internal listener (replicas): other replicas forward tasks/update, tasks/cancel and MRTR retries for the
// tasks this one runs here (forward.ts sends them). It serves the same app, but only to requests that carry a
// valid replica credential: it is no second front door. A request it lets in is marked forwarded, so the
// routes apply it here instead of forwarding it again.
import type { Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";
import { forwardForbidden } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { markForwarded } from "./forward.js";
import { FORWARDED_HEADER, ForwardTokenCheck } from "./forward-token.js";
import { nodeEnv } from "./node-env.js";

/**
 * A Node server (not listening yet) for `app`, behind the replica credential check under `key` (forwardingKey).
 * `tls` (server.internalTls): HTTPS, and only clients whose certificate chains to `ca` get past the handshake.
 */
export function internalListener(
  app: Hono,
  key: Buffer,
  now: () => number,
  tls?: { ca: Buffer; cert: Buffer; key: Buffer },
): Server {
  const check = new ForwardTokenCheck(key);
  return createAdaptorServer({
    ...(tls && {
      createServer: createHttpsServer,
      serverOptions: { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: true },
    }),
    fetch: (req: Request, env: unknown) => {
      const incoming = nodeEnv(env)?.incoming;
      const token = incoming?.headers[FORWARDED_HEADER];
      if (!incoming || !check.verify(typeof token === "string" ? token : undefined, now())) {
        return faultResponse(null, forwardForbidden());
      }
      markForwarded(incoming);
      return app.fetch(req, env);
    },
  }) as Server;
}
