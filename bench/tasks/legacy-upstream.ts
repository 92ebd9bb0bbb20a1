// A minimal legacy (2025-11-25) MCP upstream for the Tasks benchmarks, in its
// own process so that it never shares an event loop with the gateway.
//
// It is stateful the way SDK 1.x servers are: `initialize` mints an
// Mcp-Session-Id, every later request must carry a known one (404 otherwise),
// notifications get 202. `tools/call` answers any tool name; its arguments
// choose the answer, so one process serves every scenario:
//   { "size": <bytes of text>, "delayMs": <n> }  JSON result after the delay
//   { "hold": true }                             SSE headers at once, then the call
//                                                stays open until the gateway goes away
//
// GET /stats answers {"held":N,"calls":N,"sessions":N} (not MCP; for the harness).
// POST /control/progress?total=T sends every held call one notifications/progress
// (its k-th, "k/T"); POST /control/complete?size=N answers every held call with a
// result of N bytes and ends it. Both answer {"calls":N} (the shared-state bench).
//
// `tasks/get` (a 2026-07-28 method no legacy server has) is answered without a
// session with one fixed completed task of the same shape and size as the
// gateway's answer: the reference for what node:http alone costs per poll.
//
// Run: node --import tsx bench/tasks/legacy-upstream.ts [--size 1024] [--delay 0] [--tls DIR]
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
//
// --tls DIR: serve HTTPS with DIR/cert.pem and DIR/key.pem through node:http2's secure server,
// which offers h2 first (ALPN) and accepts HTTP/1.1 too (allowHTTP1), with no limit on concurrent
// streams per connection (Node's default); /stats and /control/* answer there as well. Without
// it: plain HTTP/1.1 (node:http), as before.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createSecureServer } from "node:http2";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { announcePort, exitWithParent } from "../lib/child-lifetime.js";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1024" },
    delay: { type: "string", default: "0" },
    port: { type: "string", default: "0" },
    tls: { type: "string" },
  },
});

const defaults = { size: Number(values.size), delayMs: Number(values.delay) };
const PROTOCOL_VERSION = "2025-11-25";

const sessions = new Set<string>();
/** Held calls: their response, JSON-RPC id, progress token and progress notifications sent. */
const held = new Map<ServerResponse, { id: unknown; token: unknown; sent: number }>();
let calls = 0;

// The body after the id is the same for every call of a given size: built once.
const tailCache = new Map<number, Buffer>();
function resultTail(size: number): Buffer {
  let tail = tailCache.get(size);
  if (tail === undefined) {
    const result = { content: [{ type: "text", text: "x".repeat(size) }], isError: false };
    tail = Buffer.from(`,"result":${JSON.stringify(result)}}`);
    tailCache.set(size, tail);
  }
  return tail;
}

// A completed DetailedTask with a 1 KB result, as the gateway answers tasks/get.
const TASK_TAIL = Buffer.from(
  `,"result":${JSON.stringify({
    resultType: "complete",
    taskId: "AAAAAAAAAAAAAAAAAAAAAA",
    status: "completed",
    createdAt: "2026-01-01T00:00:00.000Z",
    lastUpdatedAt: "2026-01-01T00:00:00.001Z",
    ttlMs: 3_600_000,
    pollIntervalMs: 1_000,
    result: { content: [{ type: "text", text: "x".repeat(1024) }], isError: false },
  })}}`,
);

function reply(res: ServerResponse, id: unknown, tail: Buffer, extraHeaders: readonly string[] = []): void {
  const body = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)}`), tail]);
  res.writeHead(200, ["content-type", "application/json", "content-length", String(body.length), ...extraHeaders]);
  res.end(body);
}

function replyResult(res: ServerResponse, id: unknown, result: unknown, extraHeaders: readonly string[] = []): void {
  reply(res, id, Buffer.from(`,"result":${JSON.stringify(result)}}`), extraHeaders);
}

function replyError(res: ServerResponse, status: number, id: unknown, code: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: { code, message } });
  res.writeHead(status, ["content-type", "application/json", "content-length", String(Buffer.byteLength(body))]);
  res.end(body);
}

interface RpcMessage {
  id?: unknown;
  method?: unknown;
  params?: { arguments?: Record<string, unknown>; protocolVersion?: unknown; _meta?: { progressToken?: unknown } };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

function hold(res: ServerResponse, msg: RpcMessage): void {
  // An SSE answer sends its headers at once (as SDK servers do for streamed
  // calls), so the gateway's headers timeout never fires; the body stays open.
  res.writeHead(200, ["content-type", "text/event-stream", "cache-control", "no-cache"]);
  res.flushHeaders();
  held.set(res, { id: msg.id, token: msg.params?._meta?.progressToken, sent: 0 });
  res.once("close", () => held.delete(res));
}

function handle(req: IncomingMessage, res: ServerResponse, msg: RpcMessage): void {
  if (msg.method === "initialize") {
    const sessionId = randomUUID();
    sessions.add(sessionId);
    replyResult(
      res,
      msg.id,
      {
        protocolVersion:
          typeof msg.params?.protocolVersion === "string" ? msg.params.protocolVersion : PROTOCOL_VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: "bench-legacy-upstream", version: "0.0.0" },
      },
      ["mcp-session-id", sessionId],
    );
    return;
  }
  if (msg.method === "tasks/get") {
    reply(res, msg.id, TASK_TAIL);
    return;
  }
  const sessionId = req.headers["mcp-session-id"];
  if (typeof sessionId !== "string" || !sessions.has(sessionId)) {
    replyError(res, 404, msg.id, -32001, "Session not found");
    return;
  }
  if (msg.id === undefined) {
    // A notification (initialized, cancelled): accepted, no body.
    res.writeHead(202).end();
    return;
  }
  switch (msg.method) {
    case "tools/call": {
      calls += 1;
      const args = msg.params?.arguments ?? {};
      if (args["hold"] === true) {
        hold(res, msg);
        return;
      }
      const tail = resultTail(numberOr(args["size"], defaults.size));
      const delayMs = numberOr(args["delayMs"], defaults.delayMs);
      if (delayMs > 0) setTimeout(() => reply(res, msg.id, tail), delayMs);
      else reply(res, msg.id, tail);
      return;
    }
    case "tools/list":
      replyResult(res, msg.id, {
        tools: [
          { name: "bench", description: "Any name works; arguments pick the answer.", inputSchema: { type: "object" } },
        ],
      });
      return;
    case "ping":
      replyResult(res, msg.id, {});
      return;
    default:
      replyError(res, 200, msg.id, -32601, "Method not found");
  }
}

const sse = (message: unknown): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

function control(url: URL, res: ServerResponse): void {
  const calls = [...held];
  if (url.pathname === "/control/progress") {
    const total = Number(url.searchParams.get("total") ?? "1");
    for (const [call, h] of calls) {
      h.sent += 1;
      call.write(
        sse({
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: h.token, progress: h.sent, total, message: `step ${h.sent}` },
        }),
      );
    }
  } else if (url.pathname === "/control/complete") {
    const tail = resultTail(Number(url.searchParams.get("size") ?? String(defaults.size)));
    for (const [call, h] of calls) {
      held.delete(call);
      call.end(sse(JSON.parse(`{"jsonrpc":"2.0","id":${JSON.stringify(h.id ?? null)}${tail.toString()}`)));
    }
  } else {
    res.writeHead(404).end();
    return;
  }
  const body = JSON.stringify({ calls: calls.length });
  res.writeHead(200, ["content-type", "application/json", "content-length", String(Buffer.byteLength(body))]);
  res.end(body);
}

function onRequest(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === "GET" && req.url === "/stats") {
    const body = JSON.stringify({ held: held.size, calls, sessions: sessions.size });
    res.writeHead(200, ["content-type", "application/json", "content-length", String(Buffer.byteLength(body))]);
    res.end(body);
    return;
  }
  if (req.method === "POST" && req.url?.startsWith("/control/") === true) {
    control(new URL(req.url, "http://upstream"), res);
    return;
  }
  if (req.method === "DELETE") {
    const sessionId = req.headers["mcp-session-id"];
    if (typeof sessionId === "string") sessions.delete(sessionId);
    res.writeHead(200).end();
    return;
  }
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST, DELETE" }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    let msg: RpcMessage;
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString()) as RpcMessage;
    } catch {
      replyError(res, 400, null, -32700, "Parse error");
      return;
    }
    handle(req, res, msg);
  });
}

function listening(address: ReturnType<ReturnType<typeof createServer>["address"]>): void {
  if (address === null || typeof address === "string") throw new Error("unexpected server address");
  announcePort(address.port);
}

const listenOptions = { port: Number(values.port), host: "127.0.0.1", backlog: 4096 };
if (values.tls === undefined) {
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    res.sendDate = false;
    onRequest(req, res);
  });
  // Held calls are open requests: no timeout may cut them during a run.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.listen(listenOptions, () => listening(server.address()));
} else {
  // node:http2's compatibility API: requests and responses with the methods used here
  // (headers, data/end, writeHead, flushHeaders, write, end, 'close').
  const server = createSecureServer(
    {
      cert: readFileSync(join(values.tls, "cert.pem")),
      key: readFileSync(join(values.tls, "key.pem")),
      allowHTTP1: true,
    },
    (req, res) => {
      res.sendDate = false;
      onRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    },
  );
  // No idle timeout on sessions: held calls may sit silent for the whole run.
  server.setTimeout(0);
  server.listen(listenOptions, () => listening(server.address()));
}

exitWithParent();
