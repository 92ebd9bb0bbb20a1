// A stateful MCP server over Streamable HTTP on plain node:http: one
// McpServer + transport per session, routed by the Mcp-Session-Id header,
// answering like the SDK's own examples (404 for an unknown session).
//
//   tsx examples/demo-upstream.ts [--port N]
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { createDemoServer, interceptThrowError } from "./demo-server.js";

export interface DemoUpstream {
  url: string;
  /**
   * Forgets every session, as an upstream restart or session expiry would:
   * their servers close (ending their streams and in-flight calls) and later
   * requests with those session ids get 404 -32001 "Session not found".
   */
  dropSessions(): Promise<void>;
  /**
   * What the `touch` tool does, from outside any session: sends
   * notifications/resources/updated {uri} to every session subscribed to `uri`
   * and notifications/resources/list_changed to every session.
   */
  touch(uri: string): Promise<void>;
  /** Every JSON-RPC message POSTed to it, parsed, in order (with `record`; empty otherwise). */
  readonly received: unknown[];
  close(): Promise<void>;
}

export interface DemoUpstreamOptions {
  host?: string;
  port?: number;
  path?: string;
  /**
   * Adds the `touch` tool {uri}: it sends notifications/resources/updated to
   * every session subscribed to `uri` and notifications/resources/list_changed
   * to every session, on their standalone GET streams. Off by default.
   */
  touchTool?: boolean;
  /**
   * Gives every session an in-memory event store, so its SSE streams carry
   * event ids and a client (or a gateway taking over a call) can resume one
   * with GET and Last-Event-ID. Off by default.
   */
  resumable?: boolean;
  /** Keeps every message POSTed to it in `received`, for tests to check the upstream's side. Off by default. */
  record?: boolean;
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  /** URIs this session subscribed to with resources/subscribe. */
  subscriptions: Set<string>;
}

// We parse POST bodies ourselves (to spot `initialize` before a session
// exists), so we also own the size limit the SDK would otherwise apply.
const MAX_BODY_BYTES = 4 * 1024 * 1024;

function sendError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/** Reads the whole body; undefined when it exceeds the limit (the rest is drained so we can still answer). */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size <= MAX_BODY_BYTES ? Buffer.concat(chunks).toString("utf8") : undefined;
}

function formatUrl(host: string, port: number, path: string): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}${path}`;
}

export async function startDemoUpstream(opts: DemoUpstreamOptions = {}): Promise<DemoUpstream> {
  const host = opts.host ?? "127.0.0.1";
  const path = opts.path ?? "/mcp";
  const sessions = new Map<string, Session>();
  const received: unknown[] = [];

  /** `touch`: resources/updated to the sessions subscribed to `uri`, resources/list_changed to all. */
  async function touch(uri: string): Promise<void> {
    // Without relatedRequestId these go to each session's GET stream (and are
    // dropped for a session that has none open).
    await Promise.allSettled(
      [...sessions.values()].map(async (s) => {
        if (s.subscriptions.has(uri)) await s.server.server.sendResourceUpdated({ uri });
        await s.server.server.sendResourceListChanged();
      }),
    );
  }

  async function openSession(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const subscriptions = new Set<string>();
    const server = createDemoServer({ subscriptions, ...(opts.touchTool === true ? { onTouch: touch } : {}) });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      ...(opts.resumable === true && { eventStore: new InMemoryEventStore() }),
      // Registered here, not after handleRequest, so a request racing the
      // initialize response already finds the session.
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport, subscriptions });
      },
    });
    // Set before connect(): the SDK chains its own onclose after ours. Fires on DELETE too.
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    interceptThrowError(transport);
    await transport.handleRequest(req, res, body);
    // The transport refused the initialize (say, a bad Accept header): no
    // session was made, so nothing will ever reach this server again.
    if (transport.sessionId === undefined) await server.close();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? "/", "http://localhost");
    if (pathname !== path) {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not found\n");
      return;
    }
    const header = req.headers["mcp-session-id"];
    const sessionId = typeof header === "string" ? header : undefined;
    const session = sessionId === undefined ? undefined : sessions.get(sessionId);

    if (req.method === "POST") {
      const raw = await readBody(req);
      if (raw === undefined) return sendError(res, 413, ErrorCode.InvalidRequest, "Request body too large");
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        return sendError(res, 400, ErrorCode.ParseError, "Parse error: invalid JSON");
      }
      if (opts.record === true) received.push(body);
      if (session) return session.transport.handleRequest(req, res, body);
      if (sessionId === undefined && isInitializeRequest(body)) return openSession(req, res, body);
    } else if (req.method === "GET" || req.method === "DELETE") {
      if (session) return session.transport.handleRequest(req, res);
    } else {
      res.writeHead(405, { allow: "GET, POST, DELETE" }).end();
      return;
    }
    // Same answers as the SDK's session-aware examples: -32001 is its "Session not found".
    if (sessionId !== undefined) return sendError(res, 404, -32001, "Session not found");
    return sendError(res, 400, -32000, "Bad Request: No valid session ID provided");
  }

  const httpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      console.error("demo-upstream: request failed:", err);
      if (!res.headersSent) sendError(res, 500, ErrorCode.InternalError, "Internal server error");
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(opts.port ?? 0, host, () => {
      httpServer.off("error", reject);
      resolve();
    });
  });
  const { port } = httpServer.address() as AddressInfo;

  async function dropSessions(): Promise<void> {
    const open = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(open.map((s) => s.server.close()));
  }

  let closing: Promise<void> | undefined;
  return {
    url: formatUrl(host, port, path),
    dropSessions,
    touch,
    received,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        const open = [...sessions.values()];
        sessions.clear();
        // Closing a server aborts its in-flight handlers (a 10-minute
        // slow_task included) and ends its SSE streams.
        await Promise.allSettled(open.map((s) => s.server.close()));
        // Keep-alive sockets would otherwise hold close() open for seconds.
        httpServer.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

function parsePort(argv: readonly string[]): number | undefined {
  const i = argv.indexOf("--port");
  if (i === -1) return undefined;
  const port = Number(argv[i + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port needs a number from 0 to 65535, got ${argv[i + 1] ?? "nothing"}`);
  return port;
}

async function main(): Promise<void> {
  const upstream = await startDemoUpstream({ port: parsePort(process.argv.slice(2)) ?? 0 });
  console.log(`demo upstream MCP server listening on ${upstream.url}`);
  console.log("Press Ctrl-C to stop.");
  const stop = (): void => {
    upstream.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
