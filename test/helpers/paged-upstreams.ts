// Upstreams for the access-rule, reload and audit tests: real SDK peers whose
// tools/list paginates (three pages, one of them holding only `secret_*` tools)
// and that record every JSON-RPC message they receive, so a test can prove a
// denied call never reached them.
//
//   legacy: an SDK 1.x low-level `Server` per session over the SDK's
//           StreamableHTTPServerTransport (2025-11-25, sessions); JSON or SSE
//           answers (`enableJsonResponse`).
//   modern: an SDK 2.x low-level `Server` behind `createMcpHandler`
//           (2026-07-28, dual era), JSON or SSE answers (`responseMode`).
//
// Tools: echo {text}, secret_admin, secret_wipe, hold {key} (waits until the
// test calls release(key), or the call is cancelled), boom (throws: a JSON-RPC
// error), count.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server as LegacyServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { fetchServer } from "./http.js";
import { Server as ModernServer, createMcpHandler } from "@modelcontextprotocol/server";

const schema = (properties: Record<string, { type: string }> = {}) => ({ type: "object" as const, properties });

/** The three pages of tools/list; page 2 holds only a tool the tests deny. */
export const TOOL_PAGES: ReadonlyArray<
  ReadonlyArray<{ name: string; description: string; inputSchema: ReturnType<typeof schema> }>
> = [
  [
    { name: "echo", description: "Returns its text.", inputSchema: schema({ text: { type: "string" } }) },
    { name: "secret_admin", description: "Administers.", inputSchema: schema() },
  ],
  [{ name: "secret_wipe", description: "Wipes.", inputSchema: schema() }],
  [
    {
      name: "hold",
      description: "Waits until the test releases it.",
      inputSchema: schema({ key: { type: "string" } }),
    },
    { name: "boom", description: "Throws.", inputSchema: schema() },
    { name: "count", description: "Counts.", inputSchema: schema() },
  ],
];

/** One JSON-RPC message as the upstream received it. */
interface Received {
  method: string | undefined;
  /** params.name of a tools/call. */
  tool: string | undefined;
  message: Record<string, unknown>;
}

export interface PagedUpstream {
  url: string;
  received: Received[];
  /** tools/call messages received for `tool`. */
  callsOf(tool: string): Received[];
  /** Resolves once a tools/call of hold {key} is running in the upstream. */
  holding(key: string): Promise<void>;
  /** Lets hold {key} answer (now, or as soon as it arrives). */
  release(key: string): void;
  close(): Promise<void>;
}

/** The hold registry and request log both upstream kinds share. */
class Tools {
  readonly received: Received[] = [];
  private readonly gates = new Map<
    string,
    { open: () => void; opened: Promise<void>; arrived: () => void; running: Promise<void> }
  >();

  gate(key: string) {
    let g = this.gates.get(key);
    if (!g) {
      let open = (): void => {};
      let arrived = (): void => {};
      const opened = new Promise<void>((r) => (open = r));
      const running = new Promise<void>((r) => (arrived = r));
      g = { open, opened, arrived, running };
      this.gates.set(key, g);
    }
    return g;
  }

  releaseAll(): void {
    for (const g of this.gates.values()) g.open();
  }

  record(body: unknown): void {
    for (const m of Array.isArray(body) ? body : [body]) {
      if (typeof m !== "object" || m === null) continue;
      const message = m as Record<string, unknown>;
      const method = typeof message.method === "string" ? message.method : undefined;
      const params = message.params as Record<string, unknown> | undefined;
      const tool = method === "tools/call" && typeof params?.name === "string" ? params.name : undefined;
      this.received.push({ method, tool, message });
    }
  }

  list(cursor: string | undefined) {
    const page = cursor === undefined ? 0 : Number(cursor.replace("page-", ""));
    const tools = TOOL_PAGES[page] ?? [];
    return {
      tools: tools.map((t) => ({ ...t })),
      ...(page + 1 < TOOL_PAGES.length && { nextCursor: `page-${page + 1}` }),
    };
  }

  async call(name: string, args: Record<string, unknown> | undefined, signal: AbortSignal) {
    const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
    switch (name) {
      case "echo":
        return text(String(args?.text ?? ""));
      case "secret_admin":
        return text("admin done");
      case "secret_wipe":
        return text("wiped");
      case "count":
        return text("1 2 3");
      case "boom":
        throw new Error("boom went the tool");
      case "hold": {
        const key = String(args?.key ?? "");
        const g = this.gate(key);
        g.arrived();
        await new Promise<void>((resolve, reject) => {
          void g.opened.then(resolve);
          signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
        });
        return text(`released ${key}`);
      }
      default:
        throw new Error(`unknown tool ${name}`);
    }
  }

  view(): Omit<PagedUpstream, "url" | "close"> {
    return {
      received: this.received,
      callsOf: (tool) => this.received.filter((r) => r.method === "tools/call" && r.tool === tool),
      holding: (key) => this.gate(key).running,
      release: (key) => this.gate(key).open(),
    };
  }
}

async function listen(server: HttpServer): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : (JSON.parse(text) as unknown);
}

function createLegacyServer(tools: Tools): LegacyServer {
  const server = new LegacyServer({ name: "paged-legacy", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (req) => tools.list(req.params?.cursor));
  server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
    tools.call(req.params.name, req.params.arguments, extra.signal),
  );
  return server;
}

/** SDK 1.x, sessions; `json`: answers are single JSON bodies instead of SSE streams. */
export async function startLegacyPagedUpstream(opts: { json?: boolean } = {}): Promise<PagedUpstream> {
  const tools = new Tools();
  const sessions = new Map<string, { server: LegacyServer; transport: StreamableHTTPServerTransport }>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const header = req.headers["mcp-session-id"];
    const session = typeof header === "string" ? sessions.get(header) : undefined;
    if (req.method === "POST") {
      const body = await readJson(req);
      tools.record(body);
      if (session) return session.transport.handleRequest(req, res, body);
      if (header === undefined && isInitializeRequest(body)) {
        const server = createLegacyServer(tools);
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: opts.json === true,
          onsessioninitialized: (id) => void sessions.set(id, { server, transport }),
        });
        transport.onclose = () => {
          if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
        };
        await server.connect(transport);
        return transport.handleRequest(req, res, body);
      }
    } else if (session && (req.method === "GET" || req.method === "DELETE")) {
      return session.transport.handleRequest(req, res);
    }
    res.writeHead(header === undefined ? 400 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  const url = await listen(http);
  let closing: Promise<void> | undefined;
  return {
    url,
    ...tools.view(),
    close() {
      closing ??= (async () => {
        tools.releaseAll();
        const stopped = new Promise<void>((r) => http.close(() => r()));
        const open = [...sessions.values()];
        sessions.clear();
        await Promise.allSettled(open.map((s) => s.server.close()));
        http.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

/** SDK 2.x (2026-07-28, legacy traffic served statelessly); `responseMode` shapes its modern answers. */
export async function startModernPagedUpstream(
  opts: { responseMode?: "json" | "sse" | "auto" } = {},
): Promise<PagedUpstream> {
  const tools = new Tools();
  const handler = createMcpHandler(
    () => {
      const server = new ModernServer({ name: "paged-modern", version: "2.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler("tools/list", (req) => tools.list(req.params?.cursor));
      server.setRequestHandler("tools/call", (req, ctx) =>
        tools.call(req.params.name, req.params.arguments, ctx.mcpReq.signal),
      );
      return server;
    },
    { responseMode: opts.responseMode ?? "auto", keepAliveMs: 0 },
  );
  const http = fetchServer(async (req) => {
    if (req.method === "POST") {
      const text = await req.clone().text();
      try {
        tools.record(JSON.parse(text));
      } catch {
        // Not JSON: the handler answers it.
      }
    }
    return handler.fetch(req);
  });
  const url = await listen(http);
  let closing: Promise<void> | undefined;
  return {
    url,
    ...tools.view(),
    close() {
      closing ??= (async () => {
        tools.releaseAll();
        const stopped = new Promise<void>((r) => http.close(() => r()));
        await handler.close();
        http.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}
