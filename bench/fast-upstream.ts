// A deliberately minimal MCP upstream for the benchmark, so that the upstream
// is never what limits a measurement. It speaks just enough Streamable HTTP to
// answer `initialize`, `tools/list` and `tools/call`, stateless (no session id).
//
// Each `tools/call` chooses its own answer through its arguments, so one process
// serves every scenario and the proxies forward the body untouched:
//   { "size": <bytes of text content>, "format": "json" | "sse", "delayMs": <n> }
//
// Run: node --import tsx bench/fast-upstream.ts [--size 1024] [--format json|sse] [--delay 0] [--tools 1]
// `--tools N` lists N tools (`bench`, then `bench_2` … `bench_N`, all answering as `bench`), for the federated
// list bench (bench/federation.ts).
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import { announcePort, exitWithParent } from "./lib/child-lifetime.js";

type Format = "json" | "sse";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1024" },
    format: { type: "string", default: "json" },
    delay: { type: "string", default: "0" },
    port: { type: "string", default: "0" },
    tools: { type: "string", default: "1" },
  },
});

const defaults: { size: number; format: Format; delayMs: number } = {
  size: Number(values.size),
  format: values.format === "sse" ? "sse" : "json",
  delayMs: Number(values.delay),
};

// The response body after the id is the same for every call of a given size, so
// it is built once; per request we only splice the request's id in front of it.
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

const SSE_HEAD = Buffer.from("event: message\ndata: ");
const SSE_END = Buffer.from("\n\n");

function reply(res: ServerResponse, id: unknown, tail: Buffer, format: Format): void {
  const head = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)}`);
  const chunks = format === "sse" ? [SSE_HEAD, head, tail, SSE_END] : [head, tail];
  const body = Buffer.concat(chunks);
  // The flat array form of writeHead skips node's per-key header object walk.
  res.writeHead(200, [
    "content-type",
    format === "sse" ? "text/event-stream" : "application/json",
    "content-length",
    String(body.length),
  ]);
  res.end(body);
}

const BENCH_TOOL = {
  description: "Returns text of the requested size.",
  inputSchema: {
    type: "object",
    properties: { size: { type: "number" }, format: { type: "string" }, delayMs: { type: "number" } },
  },
};
const TOOLS_LIST = {
  tools: Array.from({ length: Math.max(1, Number(values.tools)) }, (_, i) => ({
    name: i === 0 ? "bench" : `bench_${i + 1}`,
    ...BENCH_TOOL,
  })),
};

function replyObject(res: ServerResponse, id: unknown, result: unknown): void {
  reply(res, id, Buffer.from(`,"result":${JSON.stringify(result)}}`), "json");
}

interface RpcMessage {
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; arguments?: Record<string, unknown>; protocolVersion?: unknown };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

function handleMessage(res: ServerResponse, msg: RpcMessage): void {
  switch (msg.method) {
    case "initialize":
      replyObject(res, msg.id, {
        protocolVersion: typeof msg.params?.protocolVersion === "string" ? msg.params.protocolVersion : "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "bench-fast-upstream", version: "0.0.0" },
      });
      return;
    case "tools/list":
      replyObject(res, msg.id, TOOLS_LIST);
      return;
    case "tools/call": {
      const args = msg.params?.arguments ?? {};
      const size = numberOr(args["size"], defaults.size);
      const format: Format = args["format"] === "sse" ? "sse" : args["format"] === "json" ? "json" : defaults.format;
      const delayMs = numberOr(args["delayMs"], defaults.delayMs);
      const tail = resultTail(size);
      if (delayMs > 0) setTimeout(() => reply(res, msg.id, tail, format), delayMs);
      else reply(res, msg.id, tail, format);
      return;
    }
    case "ping":
      replyObject(res, msg.id, {});
      return;
    default:
      if (msg.id === undefined) {
        // A notification (e.g. notifications/initialized): accepted, no body.
        res.writeHead(202).end();
        return;
      }
      reply(res, msg.id, Buffer.from(`,"error":{"code":-32601,"message":"Method not found"}}`), "json");
  }
}

function onRequest(req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST" }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    let msg: RpcMessage;
    try {
      msg = JSON.parse(
        chunks.length === 1 ? (chunks[0] ?? "").toString() : Buffer.concat(chunks).toString(),
      ) as RpcMessage;
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
      return;
    }
    handleMessage(res, msg);
  });
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.sendDate = false; // formatting a Date header per response is measurable at 40k req/s
  onRequest(req, res);
});
server.listen(Number(values.port), "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("unexpected server address");
  announcePort(address.port);
});

exitWithParent();
