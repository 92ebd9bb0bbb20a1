// The catalog on replicas (issue 36): a request on a session another replica holds is mapped where it lands
// (refusals answered there) and forwarded to the owner as the client sent it, since the owner runs the catalog
// step again: a renamed tool's call must reach the owner under its client name, not the upstream's. Two replica
// processes on one Redis (a key prefix of their own), server-everything over stdio (a session the gateway holds),
// a 2025-11-25 session opened on replica a and used through replica b.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { Replicas, type Json, type ReplicaProcess, START_LINE } from "../helpers/replicas.js";
import { everythingCommand } from "../helpers/stdio-servers.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

const replicas = new Replicas();
let redis: TestRedis;
let a: ReplicaProcess;
let b: ReplicaProcess;

function config(prefix: string): Json {
  return {
    upstreams: {
      everything: {
        command: everythingCommand(),
        tools: { "get-sum": { name: "add_five", pin: { b: 5 } } },
        validateArguments: "enforce",
      },
    },
    server: { host: "127.0.0.1", port: 0, shutdownGraceMs: 1_000 },
    tasks: { store: TEST_REDIS_URL, storePrefix: prefix, leaseMs: 1_000, sweepIntervalMs: 500, drainMs: 0 },
    log: { level: "warn" },
  };
}

beforeAll(async () => {
  redis = await testRedis();
  const prefix = redis.freshPrefix();
  [a, b] = await Promise.all([
    replicas.start("a", config(prefix), [], START_LINE),
    replicas.start("b", config(prefix), [], START_LINE),
  ]);
}, 60_000);

afterAll(async () => {
  await replicas.cleanup();
  await redis?.cleanup();
});

/** The JSON-RPC answer in a JSON or SSE body. */
function answerOf(text: string): Record<string, unknown> {
  const data = text
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trim());
  const found = (data.length > 0 ? data : [text]).map((d) => JSON.parse(d) as Record<string, unknown>);
  const answer = found.find((m) => "result" in m || "error" in m);
  if (!answer) throw new Error(`no answer in ${text}`);
  return answer;
}

let nextId = 1;

async function post(url: string, body: Json, sessionId?: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...(sessionId && { "mcp-session-id": sessionId }) },
    body: JSON.stringify(body),
  });
  return answerOf(await res.text());
}

const call = (url: string, sessionId: string, name: string, args: Json): Promise<Record<string, unknown>> =>
  post(url, { jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name, arguments: args } }, sessionId);

describe("a session held by replica a, used through replica b", () => {
  let sessionId: string;
  beforeAll(async () => {
    const res = await fetch(`${a.url}/everything`, {
      method: "POST",
      headers: HEADERS,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "catalog-replicas", version: "1" },
        },
      }),
    });
    await res.text();
    sessionId = res.headers.get("mcp-session-id") ?? "";
    expect(sessionId).not.toBe("");
    await (
      await fetch(`${a.url}/everything`, {
        method: "POST",
        headers: { ...HEADERS, "mcp-session-id": sessionId },
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      })
    ).text();
  });

  it("lists the renamed tool and calls it, the pinned value added on the owner's side", async () => {
    const url = `${b.url}/everything`;
    const list = await post(url, { jsonrpc: "2.0", id: nextId++, method: "tools/list", params: {} }, sessionId);
    const tools = (list.result as { tools: Array<{ name: string; inputSchema: { properties: Json } }> }).tools;
    const sum = tools.find((t) => t.name === "add_five");
    expect(Object.keys(sum?.inputSchema.properties ?? {})).toEqual(["a"]);
    expect(tools.map((t) => t.name)).not.toContain("get-sum");
    const answer = await call(url, sessionId, "add_five", { a: 2 });
    expect(JSON.stringify(answer.result)).toContain("7");
  });

  it("refuses a pinned argument, the upstream's name and invalid arguments where the request lands", async () => {
    const url = `${b.url}/everything`;
    const reasons = await Promise.all([
      call(url, sessionId, "add_five", { a: 2, b: 1 }),
      call(url, sessionId, "get-sum", { a: 2, b: 1 }),
      call(url, sessionId, "add_five", { a: "two" }),
    ]);
    expect(reasons.map((r) => (r.error as { data: { reason: string } }).data.reason)).toEqual([
      "pinned_argument",
      "unknown_tool",
      "invalid_arguments",
    ]);
  });
});
