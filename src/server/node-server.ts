// Node servers for the gateway's web-standard apps (@hono/node-server): the one place below the composition root
// that knows how a fetch-style app is put on a Node listener, so the layers above never import the framework.
import type { Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createAdaptorServer } from "@hono/node-server";
import type { NodeEnv } from "./exchange.js";

export { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";

/** An app as the Node listener calls it: the web Request, and the Node request and response it came as. */
export type NodeFetch = (req: Request, env: NodeEnv) => Response | Promise<Response>;

/** Mutual TLS: the server's certificate and key, and the CA client certificates must chain to. */
export interface MutualTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/**
 * A Node server (not listening yet) for `fetch`. `tls`: HTTPS, and only clients whose certificate chains to its
 * CA get past the handshake.
 */
export function nodeServer(fetch: NodeFetch, tls?: MutualTls): Server {
  return createAdaptorServer({
    ...(tls && {
      createServer: createHttpsServer,
      serverOptions: { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: true },
    }),
    fetch: (req: Request, bindings: unknown) => fetch(req, bindings as NodeEnv),
  }) as Server;
}
