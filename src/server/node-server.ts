// Node servers for the gateway's web-standard apps (@hono/node-server): the one place below the composition root
// that knows how a fetch-style app is put on a Node listener, so the layers above never import the framework.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { getRequestListener } from "@hono/node-server";
import type { NodeEnv } from "./exchange.js";

export { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";

/** An app as the Node listener calls it: the web Request, and the Node request and response it came as. */
export type NodeFetch = (req: Request, env: NodeEnv) => Response | Promise<Response>;

/** A plain Node request listener. */
export type NodeListener = (incoming: IncomingMessage, outgoing: ServerResponse) => void;

/** Mutual TLS: the server's certificate and key, and the CA client certificates must chain to. */
export interface MutualTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/**
 * `fetch` as a Node listener (@hono/node-server's adaptor): it answers its own failures (500), so the promise it
 * returns never rejects and is not waited for. `bodyRead`: every request reaches it with its body read to the end
 * already, so the adaptor's clean-up of an unread body (an 'end' listener, and after the answer a drain with a
 * timer, since the 'end' it waits for came before it listened) has nothing to do and is left out.
 */
export function fetchListener(fetch: NodeFetch, bodyRead = false): NodeListener {
  const listener = getRequestListener((req: Request, bindings: unknown) => fetch(req, bindings as NodeEnv), {
    autoCleanupIncoming: !bodyRead,
  });
  return (incoming, outgoing) => void listener(incoming, outgoing);
}

/**
 * A Node server (not listening yet) for `listener`. `tls`: HTTPS, and only clients whose certificate chains to its
 * CA get past the handshake.
 */
export function listenerServer(listener: NodeListener, tls?: MutualTls): Server {
  if (!tls) return createServer(listener);
  return createHttpsServer(
    { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: true },
    listener,
  );
}
