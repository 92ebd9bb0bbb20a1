// The internal listener (replicas), an endpoint of its own: other replicas forward tasks/update, tasks/cancel, MRTR
// retries and requests on sessions held here (forward.ts sends them). It serves the same app, but only to requests
// that carry a valid replica credential bound to them (forward-token.ts): it is no second front door. A request it
// lets in carries its verdict on its Exchange, so the routes apply it here instead of forwarding it again, and do
// not count against rate limits what was counted where it landed.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { forwardForbidden } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { FORWARDED_HEADER, ForwardTokenCheck, type Screened } from "./forward-token.js";
import { Exchange, type NodeEnv } from "../server/exchange.js";
import { readNodeBodyThen, type BodyResult } from "../server/limited-body.js";
import { fetchListener, listenerServer, type MutualTls, type NodeListener } from "../server/node-server.js";

/** The app the listener serves (the gateway's Hono app: anything with its fetch). */
interface App {
  fetch(req: Request, env: NodeEnv): Response | Promise<Response>;
}

/** A forwarded request whose body is being read, with its credential. */
interface Pending {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
  /** The credential as screened before the body was read: parsed once, verified once the body is in. */
  token: Screened;
}

/**
 * The listener's handler for `app`, behind the replica credential check under `key` (forwardingKey). The credential
 * is checked against the request it came with: its method, path and body (read here, bounded by `maxBodyBytes`,
 * and handed on with the request), and used once: every server built on one handler shares its memory of nonces.
 * It runs on the Node request, as the public listener's lean path does (endpoints/task-poll.ts): the check, the
 * body read (a callback, no promise) and the Exchange come before the app's adaptor, which then serves the request
 * as it serves one that came straight from a client. Through the adaptor first it cost the owner 60-140 µs more
 * CPU per forwarded request than per direct one (issue 38).
 */
function checkedListener(app: App, key: Buffer, now: () => number, maxBodyBytes: number): NodeListener {
  const check = new ForwardTokenCheck(key);
  // The app, and a refusal of a body read to its end, get requests whose body is read; a refusal before or while
  // reading lets the adaptor drain (bounded) what is left.
  const next = fetchListener(app.fetch.bind(app), true);
  const refuseRead = fetchListener(() => faultResponse(null, forwardForbidden()), true);
  const refuse = fetchListener(() => faultResponse(null, forwardForbidden()));

  const onBody = (read: BodyResult, { incoming, outgoing, token }: Pending): void => {
    if (!read.ok) return refuse(incoming, outgoing);
    // The path as the app's adaptor reads it (the forwarder sends the route's path, origin-form, no query).
    const path = new URL(`http://localhost${incoming.url ?? ""}`).pathname;
    const verdict = check.verify(token, { method: incoming.method ?? "GET", path, body: read.body }, now());
    if (!verdict) return refuseRead(incoming, outgoing);
    // The request goes on to the app with what the credential proved, and the body it was checked against.
    const ex = Exchange.fromNode(incoming, outgoing, path);
    ex.forwarded = verdict;
    ex.preRead = read;
    ex.carryOn();
    next(incoming, outgoing);
  };

  return (incoming, outgoing) => {
    const header = incoming.headers[FORWARDED_HEADER];
    // Refused before a body is read when it could not be good whatever the body; a request line in any form but
    // the origin-form the forwarder sends (a path) is refused too.
    const token = check.screen(typeof header === "string" ? header : undefined, now());
    if (token === undefined || !incoming.url?.startsWith("/")) return refuse(incoming, outgoing);
    readNodeBodyThen(incoming, maxBodyBytes, incoming.headers["content-length"], onBody, { incoming, outgoing, token });
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
  return listenerServer(checkedListener(app, key, now, maxBodyBytes), tls);
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
  const listener = checkedListener(app, key, now, maxBodyBytes);
  return { tcp: listenerServer(listener, tls), local: local ? listenerServer(listener) : undefined };
}
