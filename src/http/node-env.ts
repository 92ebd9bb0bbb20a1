// Access to the Node request/response that @hono/node-server passes as `c.env`.
// Reading headers from IncomingMessage directly avoids building a web Headers
// object per request, which the hot path does not need.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";

export interface NodeEnv {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
}

export function nodeEnv(env: unknown): NodeEnv | undefined {
  if (typeof env !== "object" || env === null) return undefined;
  const { incoming, outgoing } = env as Partial<NodeEnv>;
  return incoming && outgoing ? { incoming, outgoing } : undefined;
}

/** One request header (lowercase name), from Node's parsed headers when available. */
export function requestHeader(c: Context, env: NodeEnv | undefined, name: string): string | undefined {
  if (env) {
    const v = env.incoming.headers[name];
    return Array.isArray(v) ? v.join(", ") : v;
  }
  return c.req.header(name);
}

/** Context key of the headers the upstream is to see, when the auth gate changed them (request-auth.ts). */
export const UPSTREAM_HEADERS_KEY = "mcpGatewayUpstreamHeaders";

/**
 * The request's headers as Node's flat rawHeaders list (name, value, …), also on
 * the web path: the client's, or what the auth gate made of them for the
 * upstream (a verified token dropped, an identity header added).
 */
export function rawRequestHeaders(c: Context, env: NodeEnv | undefined): string[] {
  const replaced = c.get(UPSTREAM_HEADERS_KEY) as string[] | undefined;
  return replaced ?? clientRequestHeaders(c, env);
}

/** The headers exactly as the client sent them (what a replica forwards: the other replica authenticates again). */
export function clientRequestHeaders(c: Context, env: NodeEnv | undefined): string[] {
  if (env) return env.incoming.rawHeaders;
  const raw: string[] = [];
  c.req.raw.headers.forEach((value, name) => raw.push(name, value));
  return raw;
}

/** The query string of the request ("" or "?…"), without parsing a URL on the Node path. */
export function requestSearch(c: Context, env: NodeEnv | undefined): string {
  const raw = env ? (env.incoming.url ?? "") : c.req.url;
  const q = raw.indexOf("?");
  if (q === -1) return "";
  const hash = raw.indexOf("#", q);
  return hash === -1 ? raw.slice(q) : raw.slice(q, hash);
}

/**
 * A controller that aborts when the client goes away before its response
 * finished; the gateway may abort it too (shutdown). One controller instead of
 * combining signals, which costs more and, on Node 20, retains more.
 */
export function clientController(c: Context, env: NodeEnv | undefined): AbortController {
  const controller = new AbortController();
  if (env) {
    env.outgoing.once("close", () => {
      if (!env.outgoing.writableFinished) controller.abort();
    });
  } else {
    c.req.raw.signal.addEventListener("abort", () => controller.abort(), { once: true });
  }
  return controller;
}
