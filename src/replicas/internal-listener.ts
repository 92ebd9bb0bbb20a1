// The internal listener (replicas), an endpoint of its own: other replicas forward tasks/update, tasks/cancel, MRTR
// retries and requests on sessions held here (forward.ts sends them). It serves the same app, but only to requests
// that carry a valid replica credential bound to them (forward-token.ts): it is no second front door. A request it
// lets in carries its verdict on its Exchange, so the routes apply it here instead of forwarding it again, and do
// not count against rate limits what was counted where it landed.
import type { Server } from "node:http";
import { forwardForbidden } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { FORWARDED_HEADER, ForwardTokenCheck } from "./forward-token.js";
import { Exchange, type NodeEnv } from "../server/exchange.js";
import { readNodeBody } from "../server/limited-body.js";
import { nodeServer, type MutualTls, type NodeFetch } from "../server/node-server.js";

/** The app the listener serves (the gateway's Hono app: anything with its fetch). */
interface App {
  fetch(req: Request, env: NodeEnv): Response | Promise<Response>;
}

/**
 * The listener's handler for `app`, behind the replica credential check under `key` (forwardingKey). The credential
 * is checked against the request it came with: its method, path and body (read here, bounded by `maxBodyBytes`,
 * and handed on with the request), and used once: every server built on one handler shares its memory of nonces.
 */
function checkedFetch(app: App, key: Buffer, now: () => number, maxBodyBytes: number): NodeFetch {
  const check = new ForwardTokenCheck(key);
  return async (req, env) => {
    const { incoming, outgoing } = env;
    const header = incoming.headers[FORWARDED_HEADER];
    const token = typeof header === "string" ? header : undefined;
    // Refused before a body is read when it could not be good whatever the body.
    if (!check.plausible(token, now())) return faultResponse(null, forwardForbidden());
    const read = await readNodeBody(incoming, maxBodyBytes, incoming.headers["content-length"]);
    if (!read.ok) return faultResponse(null, forwardForbidden());
    const path = new URL(req.url).pathname;
    const verdict = check.verify(token, { method: incoming.method ?? "GET", path, body: read.body }, now());
    if (!verdict) return faultResponse(null, forwardForbidden());
    // The request goes on to the app with what the credential proved, and the body it was checked against.
    const ex = Exchange.fromNode(incoming, outgoing, path);
    ex.forwarded = verdict;
    ex.preRead = read;
    ex.carryOn();
    return app.fetch(req, env);
  };
}

/**
 * A Node server (not listening yet) for `app`, behind the replica credential check under `key`. `tls`
 * (server.internalTls): HTTPS, and only clients whose certificate chains to `ca` get past the handshake.
 */
export function internalListener(
  app: App,
  key: Buffer,
  now: () => number,
  maxBodyBytes: number,
  tls?: MutualTls,
): Server {
  return nodeServer(checkedFetch(app, key, now, maxBodyBytes), tls);
}

/**
 * The internal listener over TCP (as internalListener) and, with `local` (server.internalSocketDir), a second
 * server for its Unix socket: plain HTTP (the socket never leaves the host, and only this user can reach it), the
 * same credential check, and one memory of nonces for both, so a credential used on one is refused on the other.
 */
export function internalListeners(
  app: App,
  key: Buffer,
  now: () => number,
  maxBodyBytes: number,
  tls: MutualTls | undefined,
  local: boolean,
): { tcp: Server; local: Server | undefined } {
  const fetch = checkedFetch(app, key, now, maxBodyBytes);
  return { tcp: nodeServer(fetch, tls), local: local ? nodeServer(fetch) : undefined };
}
