import type { AddressInfo } from "node:net";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { HttpExchange } from "./sdk-client.js";

export const INIT_REQUEST = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw-fetch-test", version: "1.0.0" },
  },
} as const;

export const MCP_ACCEPT = "application/json, text/event-stream";

/** Parses a JSON-RPC message from either a JSON body or the first SSE data event. */
export function parseJsonOrSse(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) return JSON.parse(trimmed);
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith("data:")) {
      const data = line.slice(5).trim();
      if (data !== "") return JSON.parse(data);
    }
  }
  throw new Error(`no JSON-RPC message in body: ${text}`);
}

/** Exchanges whose JSON request body satisfies `match` (GET/DELETE have no body and never match). */
export function exchangesWithBody(http: readonly HttpExchange[], match: (body: unknown) => boolean): HttpExchange[] {
  return http.filter((x) => {
    if (x.requestBody === undefined) return false;
    try {
      return match(JSON.parse(x.requestBody));
    } catch {
      return false;
    }
  });
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Resolves after `ms` milliseconds (for pacing scripted upstreams, never for assertions). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Waits until an exchange whose JSON body satisfies `match` has been made and
 * answered (the transport may send it a little after the call that caused it settles).
 */
export async function waitForExchange(
  http: readonly HttpExchange[],
  match: (body: unknown) => boolean,
  timeoutMs = 5_000,
): Promise<HttpExchange> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = exchangesWithBody(http, match)[0];
    if (found) {
      await found.responded;
      return found;
    }
    if (Date.now() > deadline) throw new Error(`no matching HTTP exchange within ${timeoutMs} ms`);
    await delay(10);
  }
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One request through node:http, which (unlike fetch) lets a test send
 * hop-by-hop headers such as Connection, Keep-Alive, TE and Upgrade, and see
 * every response header as sent. Uses a fresh connection (no agent).
 */
export async function rawRequest(
  url: string,
  opts: { method: string; headers?: Record<string, string>; body?: string | Buffer; chunks?: Buffer[] },
): Promise<RawResponse> {
  return await new Promise<RawResponse>((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method, headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.once("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.once("error", reject);
    });
    req.once("error", reject);
    if (opts.chunks) {
      for (const c of opts.chunks) req.write(c);
      req.end();
    } else {
      req.end(opts.body);
    }
  });
}

/** Matches a JSON-RPC tools/call request body for the named tool. */
export function isToolsCall(name: string): (body: unknown) => boolean {
  return (b) => isRecord(b) && b.method === "tools/call" && isRecord(b.params) && b.params.name === name;
}

/**
 * A Node server in front of a web-standard fetch handler (an SDK 2.x server's, say). getRequestListener
 * answers a handler's failure with a 500 itself, so the promise it returns is never left to reject.
 */
export function fetchServer(fetch: (request: Request) => Response | Promise<Response>): Server {
  const listener = getRequestListener(fetch);
  return createServer((req, res) => void listener(req, res));
}

/**
 * An SDK 2.x MCP handler (createMcpHandler) served on 127.0.0.1, port 0, at /mcp (it answers any path).
 * close() ends its open exchanges and listens, then its connections, then the server.
 */
export async function serveMcpHandler(handler: {
  fetch(request: Request): Response | Promise<Response>;
  close(): Promise<void>;
}): Promise<{ url: string; close(): Promise<void> }> {
  const http = fetchServer((req) => handler.fetch(req));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
      await handler.close();
      http.closeAllConnections();
      await stopped;
    },
  };
}

/** A legacy (2025-06-18) client's first POST: initialize, with the Accept an MCP client sends. */
export function legacyInitialize(headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    }),
  };
}

/** A caller's POST with its bearer token, on a legacy (2025-06-18) session when `sessionId` is given. */
export function bearerPost(url: string, token: string, body: unknown, sessionId?: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: MCP_ACCEPT,
      authorization: `Bearer ${token}`,
      ...(sessionId && { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" }),
    },
    body: JSON.stringify(body),
  });
}
