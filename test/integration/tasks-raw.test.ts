// The Tasks extension (io.modelcontextprotocol/tasks) on the wire, with raw
// fetch: a real gateway in front of the SDK 1.x demo upstream (legacy,
// 2025-11-25), driven with hand-built 2026-07-28 requests. Replays the spec's
// example flows, hits every protocol error of its Error Handling section, and
// checks the policy modes, caller binding, TTL expiry on an injected clock,
// eviction at the byte budget, cancellation reaching the upstream, an upstream
// dying under a working task, and push on subscriptions/listen.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import { startGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { sseMessages } from "../helpers/compare.js";
import { SseStream } from "../helpers/sse-stream.js";
import { eventually, startRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { delay, INIT_REQUEST, isRecord, MCP_ACCEPT } from "../helpers/http.js";
import { MODERN_VERSION, modernHeaders, modernMeta } from "../helpers/modern-http.js";

type Json = Record<string, unknown>;

const MODERN = MODERN_VERSION;
const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING: Json = { extensions: { [TASKS]: {} }, elicitation: { form: {} } };
const NOT_DECLARING: Json = { elicitation: { form: {} } };
const CLIENT_INFO = { name: "tasks-raw-test", version: "1.0.0" };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const MISSING_CAPABILITY_DATA = {
  reason: "missing_client_capability",
  requiredCapabilities: { extensions: { [TASKS]: {} } },
};
/** The wire fields of a Task (CreateTaskResult minus resultType). */
const TASK_FIELDS = ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"] as const;

// ---------------------------------------------------------------------------
// Raw modern requests

interface RpcOptions {
  id?: string | number;
  /** Mcp-Name header; default: params.name (tools/call) or params.taskId (tasks/*); null: none. */
  name?: string | null;
  caps?: Json;
  headers?: Record<string, string>;
}

interface RpcReply {
  status: number;
  contentType: string | null;
  message: Json;
  result: Json | undefined;
  error: Json | undefined;
}

let nextId = 1;

function modernBody(id: string | number, method: string, params: Json, caps: Json): string {
  const _meta = modernMeta({ version: MODERN, capabilities: caps, clientInfo: CLIENT_INFO });
  return JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta } });
}

function defaultName(method: string, params: Json): string | undefined {
  const v = method === "tools/call" ? params.name : method.startsWith("tasks/") ? params.taskId : undefined;
  return typeof v === "string" ? v : undefined;
}

/** The JSON-RPC response with `id` in a JSON or SSE body. */
function responseIn(text: string, contentType: string | null, id: string | number): Json {
  const messages: unknown[] = contentType?.includes("text/event-stream") ? sseMessages(text) : [JSON.parse(text)];
  const found = messages.find((m) => isRecord(m) && m.id === id && ("result" in m || "error" in m));
  if (!isRecord(found)) throw new Error(`no response with id ${String(id)} in: ${text}`);
  return found;
}

async function rpc(url: string, method: string, params: Json, opts: RpcOptions = {}): Promise<RpcReply> {
  const id = opts.id ?? nextId++;
  const name = opts.name === null ? undefined : (opts.name ?? defaultName(method, params));
  const res = await fetch(url, {
    method: "POST",
    headers: modernHeaders(method, name, opts.headers),
    body: modernBody(id, method, params, opts.caps ?? DECLARING),
  });
  const text = await res.text();
  const contentType = res.headers.get("content-type");
  const message = responseIn(text, contentType, id);
  return {
    status: res.status,
    contentType,
    message,
    result: isRecord(message.result) ? message.result : undefined,
    error: isRecord(message.error) ? message.error : undefined,
  };
}

const callTool = (url: string, name: string, args: Json, opts: RpcOptions = {}): Promise<RpcReply> =>
  rpc(url, "tools/call", { name, arguments: args }, opts);
const getTask = (url: string, taskId: string, opts: RpcOptions = {}): Promise<RpcReply> =>
  rpc(url, "tasks/get", { taskId }, opts);
const updateTask = (url: string, taskId: string, inputResponses: Json, opts: RpcOptions = {}): Promise<RpcReply> =>
  rpc(url, "tasks/update", { taskId, inputResponses }, opts);
const cancelTask = (url: string, taskId: string, opts: RpcOptions = {}): Promise<RpcReply> =>
  rpc(url, "tasks/cancel", { taskId }, opts);

function must<T>(v: T | undefined, what: string): T {
  if (v === undefined) throw new Error(`missing ${what}`);
  return v;
}

/** The CreateTaskResult of a tools/call that must have become a task. */
async function createTask(
  url: string,
  name: string,
  args: Json,
  opts: RpcOptions = {},
): Promise<Json & { taskId: string }> {
  const reply = await callTool(url, name, args, opts);
  const result = must(reply.result, `a result for ${name} (got ${JSON.stringify(reply.message)})`);
  expect(result.resultType).toBe("task");
  const taskId = result.taskId;
  if (typeof taskId !== "string") throw new Error(`no taskId in ${JSON.stringify(result)}`);
  return { ...result, taskId };
}

/** Polls tasks/get until `until` holds; returns every result seen, in order (the last one satisfies `until`). */
async function pollTask(
  url: string,
  taskId: string,
  until: (t: Json) => boolean,
  opts: RpcOptions = {},
  timeoutMs = 10_000,
): Promise<Json[]> {
  const seen: Json[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await getTask(url, taskId, opts);
    const t = must(reply.result, `tasks/get result (got ${JSON.stringify(reply.message)})`);
    seen.push(t);
    if (until(t)) return seen;
    if (Date.now() > deadline)
      throw new Error(`task ${taskId} never reached the expected state; last: ${JSON.stringify(t)}`);
    await delay(15);
  }
}

const isTerminal = (t: Json): boolean => t.status === "completed" || t.status === "failed" || t.status === "cancelled";
const last = <T>(xs: readonly T[]): T => must(xs.at(-1), "a last element");

function textOf(result: unknown): string {
  if (!isRecord(result) || !Array.isArray(result.content)) return "";
  return result.content.map((c) => (isRecord(c) && typeof c.text === "string" ? c.text : "")).join("");
}

function expectTaskShape(t: Json): void {
  for (const k of TASK_FIELDS) expect(t, `field ${k}`).toHaveProperty(k);
  expect(typeof t.taskId).toBe("string");
  expect(Buffer.from(String(t.taskId), "base64url").length).toBeGreaterThanOrEqual(16);
  expect(String(t.createdAt)).toMatch(ISO);
  expect(String(t.lastUpdatedAt)).toMatch(ISO);
  expect(Number.isInteger(t.ttlMs)).toBe(true);
  expect(Number.isInteger(t.pollIntervalMs)).toBe(true);
}

/** -32602 exactly as the gateway answers an id it has never seen, for the same method. */
async function expectUnknownTask(
  url: string,
  method: "tasks/get" | "tasks/update" | "tasks/cancel",
  taskId: string,
  opts: RpcOptions = {},
): Promise<void> {
  const params: Json =
    method === "tasks/update"
      ? { taskId, inputResponses: { "input-1": { action: "accept", content: { name: "x" } } } }
      : { taskId };
  const reply = await rpc(url, method, params, opts);
  expect(reply.result).toBeUndefined();
  expect(reply.error?.code).toBe(-32602);
  const unknownParams: Json = { ...params, taskId: "never-issued-task-id" };
  const reference = await rpc(url, method, unknownParams, opts);
  expect(reply.error).toEqual(reference.error);
  expect(reply.status).toBe(reference.status);
}

// ---------------------------------------------------------------------------
// An SSE body read as it arrives

function openStream(url: string, method: string, params: Json, opts: RpcOptions & { id: string | number }): SseStream {
  const name = opts.name === null ? undefined : (opts.name ?? defaultName(method, params));
  return new SseStream((signal) =>
    fetch(url, {
      method: "POST",
      headers: modernHeaders(method, name, opts.headers),
      body: modernBody(opts.id, method, params, opts.caps ?? DECLARING),
      signal,
    }),
  );
}

const isMethod =
  (method: string) =>
  (m: Json): boolean =>
    m.method === method;

// ---------------------------------------------------------------------------
// Fixtures

const THRESHOLD_MS = 100;
const POLL_MS = 250;
const TTL_MS = 60_000;

let upstream: SdkUpstream;
let proxy: RecordingProxy;
let main: TestGateway;
const closers: Array<() => Promise<unknown>> = [];

async function gatewayFor(
  upstreamUrl: string,
  tasks: GatewayConfigInput["tasks"],
  now?: () => number,
): Promise<TestGateway> {
  const gw = await startGateway(
    { upstream: { url: upstreamUrl }, server: { host: "127.0.0.1", port: 0 }, log: { level: "silent" }, tasks },
    now ? { now } : {},
  );
  closers.push(() => gw.close(0));
  return gw;
}

beforeAll(async () => {
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  // Gateway → recording proxy → upstream: shows what the gateway sends upstream (cancellations).
  proxy = await startRecordingProxy(upstream.url);
  main = await gatewayFor(proxy.url, {
    thresholdMs: THRESHOLD_MS,
    pollIntervalMs: POLL_MS,
    defaultTtlMs: TTL_MS,
    rules: [
      { tool: "ask_user", mode: "always" },
      { tool: "fail", mode: "always" },
      { tool: "throw_error", mode: "always" },
    ],
  });
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await proxy.close();
  await upstream.close();
});

// ---------------------------------------------------------------------------

describe("example message flows (spec: Task Creation, Task Polling, Example Message Flow)", () => {
  it("a slow call becomes a task: flat CreateTaskResult, durable at once, statusMessage follows progress, completed with the result inlined", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 800, steps: 4 });
    // Flat: the Task fields beside resultType "task", nothing else status-specific.
    expectTaskShape(created);
    expect(Object.keys(created).sort()).toEqual(["resultType", ...TASK_FIELDS].sort());
    expect(created).toMatchObject({ resultType: "task", status: "working", ttlMs: TTL_MS, pollIntervalMs: POLL_MS });
    expect(created.createdAt).toBe(created.lastUpdatedAt);

    // Durable creation: a tasks/get sent the moment the CreateTaskResult arrives resolves.
    const first = await getTask(main.url, created.taskId);
    expect(first.status).toBe(200);
    expect(first.error).toBeUndefined();
    expect(first.result).toMatchObject({
      resultType: "complete",
      taskId: created.taskId,
      createdAt: created.createdAt,
      ttlMs: TTL_MS,
    });

    const seen = await pollTask(main.url, created.taskId, isTerminal);
    const working = seen.filter((t) => t.status === "working");
    const progress = working.map((t) => t.statusMessage).filter((m): m is string => typeof m === "string");
    expect(progress.length).toBeGreaterThan(0);
    for (const m of progress) expect(m).toMatch(/^progress [1-4]\/4: step [1-4] of 4$/);
    // Steps only go forward, and so does lastUpdatedAt; createdAt never moves.
    const steps = progress.map((m) => Number(/^progress (\d)/.exec(m)?.[1]));
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    const stamps = seen.map((t) => Date.parse(String(t.lastUpdatedAt)));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    for (const t of seen) {
      expect(t.resultType).toBe("complete");
      expect(t.createdAt).toBe(created.createdAt);
      expect(t).not.toHaveProperty("inputRequests");
    }

    const done = last(seen);
    expect(done.status).toBe("completed");
    expectTaskShape(done);
    expect(done).not.toHaveProperty("error");
    const result = done.result;
    expect(isRecord(result)).toBe(true);
    expect(result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 800 ms in 4 steps" }],
    });
    // Progress is folded into statusMessage, never forwarded as a result field.
    expect(Date.parse(String(done.lastUpdatedAt))).toBeGreaterThanOrEqual(Date.parse(String(created.createdAt)));
  });

  it("hello_world: input_required with an elicitation in inputRequests, the same again on the next poll, tasks/update ack, working, completed", async () => {
    const created = await createTask(main.url, "ask_user", { question: "Please enter your name." });
    expectTaskShape(created);
    expect(created.status).toBe("working");
    // Durable at once.
    const immediate = await getTask(main.url, created.taskId);
    expect(immediate.error).toBeUndefined();
    expect(["working", "input_required"]).toContain(immediate.result?.status);

    const waiting = last(await pollTask(main.url, created.taskId, (t) => t.status === "input_required"));
    expectTaskShape(waiting);
    expect(waiting.resultType).toBe("complete");
    const inputRequests = waiting.inputRequests;
    if (!isRecord(inputRequests)) throw new Error(`no inputRequests in ${JSON.stringify(waiting)}`);
    const keys = Object.keys(inputRequests);
    expect(keys).toHaveLength(1);
    const key = must(keys[0], "an input request key");
    expect(inputRequests[key]).toEqual({
      method: "elicitation/create",
      params: {
        mode: "form",
        message: "Please enter your name.",
        requestedSchema: {
          type: "object",
          properties: { name: { type: "string", title: "Name" } },
          required: ["name"],
        },
      },
    });

    // A second poll before answering: a point-in-time snapshot, the same request under the same key.
    const again = await getTask(main.url, created.taskId);
    expect(again.result?.status).toBe("input_required");
    expect(again.result?.inputRequests).toEqual(inputRequests);

    const ack = await updateTask(main.url, created.taskId, { [key]: { action: "accept", content: { name: "Luca" } } });
    expect(ack.status).toBe(200);
    expect(ack.result).toEqual({ resultType: "complete" });

    const after = await pollTask(main.url, created.taskId, isTerminal);
    // Back to working (unless the tool already finished), never input_required again.
    for (const t of after.slice(0, -1)) expect(t.status).toBe("working");
    const done = last(after);
    expect(done.status).toBe("completed");
    expect(done).not.toHaveProperty("inputRequests");
    expect(done.result).toMatchObject({ resultType: "complete" });
    expect(textOf(done.result)).toBe('action: accept; content: {"name":"Luca"}');
  });

  it("an answer to an unknown key is acknowledged and ignored; the task stays input_required", async () => {
    const created = await createTask(main.url, "ask_user", {});
    const waiting = last(await pollTask(main.url, created.taskId, (t) => t.status === "input_required"));
    const ack = await updateTask(main.url, created.taskId, {
      "no-such-key": { action: "accept", content: { name: "Eve" } },
    });
    expect(ack.result).toEqual({ resultType: "complete" });
    const still = await getTask(main.url, created.taskId);
    expect(still.result?.status).toBe("input_required");
    expect(still.result?.inputRequests).toEqual(waiting.inputRequests);
    // Clean up: decline, then the tool finishes.
    const key = must(Object.keys(isRecord(waiting.inputRequests) ? waiting.inputRequests : {})[0], "key");
    await updateTask(main.url, created.taskId, { [key]: { action: "decline" } });
    const done = last(await pollTask(main.url, created.taskId, isTerminal));
    expect(done.status).toBe("completed");
    expect(textOf(done.result)).toBe("action: decline; content: no content");
  });

  it("a tool result with isError: true is a completed task with that result", async () => {
    const created = await createTask(main.url, "fail", { message: "Failed to process request: invalid input" });
    const done = last(await pollTask(main.url, created.taskId, isTerminal));
    expect(done.status).toBe("completed");
    expect(done).not.toHaveProperty("error");
    expect(done.result).toMatchObject({
      resultType: "complete",
      isError: true,
      content: [{ type: "text", text: "Failed to process request: invalid input" }],
    });
  });

  it("a JSON-RPC error is a failed task with the error inlined and a statusMessage", async () => {
    const created = await createTask(main.url, "throw_error", { message: "API rate limit exceeded" });
    const done = last(await pollTask(main.url, created.taskId, isTerminal));
    expect(done.status).toBe("failed");
    expectTaskShape(done);
    expect(done).not.toHaveProperty("result");
    expect(done.error).toEqual({ code: -32603, message: "API rate limit exceeded" });
    expect(typeof done.statusMessage).toBe("string");
    expect(String(done.statusMessage)).toContain("API rate limit exceeded");
  });
});

describe("protocol errors (spec: Error Handling)", () => {
  it("an unknown taskId is -32602 on tasks/get, tasks/update and tasks/cancel", async () => {
    const get = await getTask(main.url, "no-such-task");
    expect(get.error).toMatchObject({ code: -32602 });
    expect(String(get.error?.message)).toMatch(/not found/i);
    const update = await updateTask(main.url, "no-such-task", { x: { action: "accept" } });
    expect(update.error).toMatchObject({ code: -32602 });
    const cancel = await cancelTask(main.url, "no-such-task");
    expect(cancel.error).toMatchObject({ code: -32602 });
    for (const r of [get, update, cancel]) expect(r.result).toBeUndefined();
  });

  it("-32021 (HTTP 400) with requiredCapabilities for tasks/* from a client that does not declare the extension, even for its own task", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 300, steps: 1 });
    for (const taskId of [created.taskId, "no-such-task"]) {
      const replies = [
        await getTask(main.url, taskId, { caps: NOT_DECLARING }),
        await updateTask(main.url, taskId, { k: { action: "accept" } }, { caps: NOT_DECLARING }),
        await cancelTask(main.url, taskId, { caps: NOT_DECLARING }),
      ];
      for (const r of replies) {
        expect(r.status).toBe(400);
        expect(r.error?.code).toBe(-32021);
        expect(r.error?.data).toEqual(MISSING_CAPABILITY_DATA);
        expect(typeof r.error?.message).toBe("string");
      }
    }
    // The refused cancel did nothing.
    const done = last(await pollTask(main.url, created.taskId, isTerminal));
    expect(done.status).toBe("completed");
  });

  it("-32021 (HTTP 400) for subscriptions/listen asking for task notifications without declaring the extension", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 300, steps: 1 });
    const reply = await rpc(
      main.url,
      "subscriptions/listen",
      { notifications: { taskIds: [created.taskId] } },
      { caps: NOT_DECLARING },
    );
    expect(reply.status).toBe(400);
    expect(reply.error?.code).toBe(-32021);
    expect(reply.error?.data).toEqual(MISSING_CAPABILITY_DATA);
    await pollTask(main.url, created.taskId, isTerminal);
  });

  it("tasks/result and tasks/list do not exist: -32601, HTTP 404", async () => {
    for (const [method, params] of [
      ["tasks/result", { taskId: "x" }],
      ["tasks/list", {}],
    ] as const) {
      const reply = await rpc(main.url, method, params, { name: null });
      expect(reply.status).toBe(404);
      expect(reply.error?.code).toBe(-32601);
    }
  });

  it("Mcp-Name must equal the taskId: -32020 (HTTP 400) on get, update and cancel", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 300, steps: 1 });
    const other = { name: "not-the-task-id" };
    const replies = [
      await getTask(main.url, created.taskId, other),
      await updateTask(main.url, created.taskId, { k: { action: "accept" } }, other),
      await cancelTask(main.url, created.taskId, other),
    ];
    for (const r of replies) {
      expect(r.status).toBe(400);
      expect(r.error?.code).toBe(-32020);
    }
    // A missing Mcp-Name is a mismatch too.
    const missing = await getTask(main.url, created.taskId, { name: null });
    expect(missing.status).toBe(400);
    expect(missing.error?.code).toBe(-32020);
    // None of them touched the task.
    expect(last(await pollTask(main.url, created.taskId, isTerminal)).status).toBe("completed");
  });

  it("server/discover advertises the extension", async () => {
    const reply = await rpc(main.url, "server/discover", {}, { name: null });
    expect(reply.result?.capabilities).toMatchObject({ extensions: { [TASKS]: {} } });
  });
});

describe("policy modes (tasks.rules, tasks.thresholdMs)", () => {
  it("never: a plain result even when the call is slow", async () => {
    const gw = await gatewayFor(upstream.url, { thresholdMs: 10, rules: [{ tool: "slow_*", mode: "never" }] });
    const reply = await callTool(gw.url, "slow_task", { durationMs: 300, steps: 1 });
    expect(reply.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 300 ms in 1 steps" }],
    });
    expect(reply.result).not.toHaveProperty("taskId");
  });

  it("always: a task at once, even for a quick tool", async () => {
    const gw = await gatewayFor(upstream.url, { thresholdMs: 60_000, rules: [{ tool: "echo", mode: "always" }] });
    const created = await createTask(gw.url, "echo", { text: "hi" });
    expect(created.status).toBe("working");
    const done = last(await pollTask(gw.url, created.taskId, isTerminal));
    expect(done).toMatchObject({
      status: "completed",
      result: { resultType: "complete", content: [{ type: "text", text: "hi" }] },
    });
  });

  it("required: -32021 (HTTP 400) with requiredCapabilities for a client that does not declare; a task for one that does", async () => {
    const gw = await gatewayFor(upstream.url, { rules: [{ tool: "echo", mode: "required" }] });
    const refused = await callTool(gw.url, "echo", { text: "hi" }, { caps: NOT_DECLARING });
    expect(refused.status).toBe(400);
    expect(refused.error?.code).toBe(-32021);
    expect(refused.error?.data).toEqual(MISSING_CAPABILITY_DATA);
    const created = await createTask(gw.url, "echo", { text: "hi" });
    const done = last(await pollTask(gw.url, created.taskId, isTerminal));
    expect(textOf(done.result)).toBe("hi");
    // Other tools keep the default (auto).
    const plain = await callTool(gw.url, "add", { a: 1, b: 2 }, { caps: NOT_DECLARING });
    expect(plain.result).toMatchObject({ resultType: "complete", structuredContent: { sum: 3 } });
  });

  it("auto: under tasks.thresholdMs the real result, over it a task", async () => {
    const gw = await gatewayFor(upstream.url, { thresholdMs: 150 });
    const quick = await callTool(gw.url, "echo", { text: "fast" });
    expect(quick.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "fast" }] });
    const slow = await createTask(gw.url, "slow_task", { durationMs: 600, steps: 2 });
    const done = last(await pollTask(gw.url, slow.taskId, isTerminal));
    expect(textOf(done.result)).toBe("done after 600 ms in 2 steps");
  });

  it("auto: a rule's thresholdMs overrides the default", async () => {
    const gw = await gatewayFor(upstream.url, {
      thresholdMs: 10,
      rules: [{ tool: "slow_task", mode: "auto", thresholdMs: 10_000 }],
    });
    const reply = await callTool(gw.url, "slow_task", { durationMs: 300, steps: 1 });
    expect(reply.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 300 ms in 1 steps" }],
    });
  });

  it("a client that does not declare the extension never gets a task (auto and always)", async () => {
    const gw = await gatewayFor(upstream.url, { thresholdMs: 10, rules: [{ tool: "echo", mode: "always" }] });
    const slow = await callTool(gw.url, "slow_task", { durationMs: 300, steps: 1 }, { caps: NOT_DECLARING });
    expect(slow.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 300 ms in 1 steps" }],
    });
    const echo = await callTool(gw.url, "echo", { text: "plain" }, { caps: NOT_DECLARING });
    expect(echo.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "plain" }] });
  });
});

describe("limits", () => {
  it("always: past tasks.maxTasksPerCaller a clear error, and the refused call does not run upstream", async () => {
    const spy = await startRecordingProxy(upstream.url);
    closers.push(() => spy.close());
    const gw = await gatewayFor(spy.url, { maxTasksPerCaller: 1, rules: [{ tool: "slow_task", mode: "always" }] });
    const first = await createTask(gw.url, "slow_task", { durationMs: 800, steps: 1 });
    const refused = await callTool(gw.url, "slow_task", { durationMs: 700, steps: 1 });
    expect(refused.result).toBeUndefined();
    expect(refused.error?.code).toBe(-32603);
    expect(String(refused.error?.message)).toMatch(/tasks\.maxTasksPerCaller/);
    // Another caller is not affected.
    const other = await createTask(
      gw.url,
      "slow_task",
      { durationMs: 300, steps: 1 },
      { headers: { authorization: "Bearer other" } },
    );
    await pollTask(gw.url, other.taskId, isTerminal, { headers: { authorization: "Bearer other" } });
    await pollTask(gw.url, first.taskId, isTerminal);
    // The client was told the call failed: the upstream must not be left doing it anyway.
    const refusedCall = spy
      .posted()
      .find(
        (p) =>
          p.message.method === "tools/call" &&
          isRecord(p.message.params) &&
          isRecord(p.message.params.arguments) &&
          p.message.params.arguments.durationMs === 700,
      );
    if (refusedCall) {
      await eventually(
        () => (refusedCall.exchange.closedByGateway || refusedCall.exchange.finished ? true : undefined),
        "the refused call to end",
      );
      expect(refusedCall.exchange.closedByGateway).toBe(true);
      expect(
        spy
          .posted()
          .some(
            (p) =>
              p.message.method === "notifications/cancelled" &&
              isRecord(p.message.params) &&
              p.message.params.requestId === refusedCall.message.id,
          ),
      ).toBe(true);
    }
    // Once the first task is done the caller may create another.
    const again = await createTask(gw.url, "slow_task", { durationMs: 300, steps: 1 });
    await pollTask(gw.url, again.taskId, isTerminal);
  });

  it("auto: past the limit the call simply stays a plain call", async () => {
    const gw = await gatewayFor(upstream.url, { maxTasksPerCaller: 1, thresholdMs: 50 });
    const first = await createTask(gw.url, "slow_task", { durationMs: 800, steps: 1 });
    const plain = await callTool(gw.url, "slow_task", { durationMs: 300, steps: 1 });
    expect(plain.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 300 ms in 1 steps" }],
    });
    await pollTask(gw.url, first.taskId, isTerminal);
  });
});

describe("2025-11-25: the extension is inert", () => {
  /** initialize, notifications/initialized, then one tools/call with a `task` param: the tools/call answer. */
  async function legacyCall(url: string): Promise<unknown> {
    const headers = { "content-type": "application/json", accept: MCP_ACCEPT };
    const init = await fetch(url, { method: "POST", headers, body: JSON.stringify(INIT_REQUEST) });
    await init.text();
    const session = must(init.headers.get("mcp-session-id") ?? undefined, "a session id");
    const sessionHeaders = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
    const initialized = await fetch(url, {
      method: "POST",
      headers: sessionHeaders,
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    await initialized.arrayBuffer();
    const call = await fetch(url, {
      method: "POST",
      headers: sessionHeaders,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "echo", arguments: { text: "legacy" }, task: { ttl: 60_000 } },
      }),
    });
    const text = await call.text();
    await (await fetch(url, { method: "DELETE", headers: sessionHeaders })).arrayBuffer();
    return responseIn(text, call.headers.get("content-type"), 2);
  }

  it("a legacy tools/call with a `task` param gets exactly the upstream's answer, whatever the policy says", async () => {
    const gw = await gatewayFor(upstream.url, { thresholdMs: 0, rules: [{ tool: "*", mode: "required" }] });
    const direct = await legacyCall(upstream.url);
    const through = await legacyCall(gw.url);
    expect(through).toEqual(direct);
    expect(JSON.stringify(through)).not.toContain('"resultType":"task"');
  });
});

describe("caller binding", () => {
  const A = { authorization: "Bearer A" };
  const B = { authorization: "Bearer B" };

  it("a task created with Bearer A is invisible to Bearer B and to no-auth: -32602 exactly as for an unknown id", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 800, steps: 4 }, { headers: A });
    for (const headers of [B, {}]) {
      for (const method of ["tasks/get", "tasks/update", "tasks/cancel"] as const) {
        await expectUnknownTask(main.url, method, created.taskId, { headers });
      }
    }
    // B's cancel did nothing: A still sees it working, then completed.
    const mine = await getTask(main.url, created.taskId, { headers: A });
    expect(mine.result?.taskId).toBe(created.taskId);
    const done = last(await pollTask(main.url, created.taskId, isTerminal, { headers: A }));
    expect(done.status).toBe("completed");
    // Finished tasks stay private too.
    await expectUnknownTask(main.url, "tasks/get", created.taskId, { headers: B });
  });

  it("a listen from another caller is not acknowledged for the task", async () => {
    const created = await createTask(main.url, "slow_task", { durationMs: 300, steps: 1 }, { headers: A });
    const listen = openStream(
      main.url,
      "subscriptions/listen",
      { notifications: { taskIds: [created.taskId] } },
      { id: "listen-b", headers: B },
    );
    try {
      const ack = await listen.waitFor(isMethod("notifications/subscriptions/acknowledged"), "the acknowledgement");
      const acked =
        isRecord(ack.params) && isRecord(ack.params.notifications) ? ack.params.notifications.taskIds : undefined;
      expect(acked).toEqual([]);
      await pollTask(main.url, created.taskId, isTerminal, { headers: A });
      expect(listen.messages.filter(isMethod("notifications/tasks"))).toEqual([]);
    } finally {
      await listen.close();
    }
  });

  it("with tasks.identityHeader the configured header is the identity, not Authorization", async () => {
    const gw = await gatewayFor(upstream.url, { identityHeader: "x-user", rules: [{ tool: "echo", mode: "always" }] });
    const created = await createTask(
      gw.url,
      "echo",
      { text: "mine" },
      { headers: { "x-user": "alice", authorization: "Bearer shared" } },
    );
    // Same Authorization, another user: invisible.
    for (const method of ["tasks/get", "tasks/update", "tasks/cancel"] as const) {
      await expectUnknownTask(gw.url, method, created.taskId, {
        headers: { "x-user": "bob", authorization: "Bearer shared" },
      });
    }
    // Without the identity header there is no caller to bind to: 401, never a shared anonymous identity.
    // An empty header names nobody either: it must not become one shared identity.
    const anonymous: Array<Record<string, string>> = [{ authorization: "Bearer shared" }, {}, { "x-user": "" }];
    for (const headers of anonymous) {
      const res = await fetch(gw.url, {
        method: "POST",
        headers: { ...modernHeaders("tasks/get", created.taskId), ...headers },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 9,
          method: "tasks/get",
          params: {
            taskId: created.taskId,
            _meta: modernMeta({ capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } }),
          },
        }),
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ id: 9, error: { code: -32600, data: { reason: "no_identity" } } });
    }
    // Same user, other Authorization: visible.
    const done = last(
      await pollTask(gw.url, created.taskId, isTerminal, {
        headers: { "x-user": "alice", authorization: "Bearer other" },
      }),
    );
    expect(textOf(done.result)).toBe("mine");
  });
});

describe("TTL expiry on an injected clock", () => {
  it("a completed task is there until createdAt + ttlMs, then -32602", async () => {
    let fakeNow = Date.parse("2030-01-01T00:00:00.000Z");
    const gw = await gatewayFor(
      upstream.url,
      { rules: [{ tool: "echo", mode: "always", ttlMs: 30_000 }] },
      () => fakeNow,
    );
    const created = await createTask(gw.url, "echo", { text: "short-lived" });
    // The task's timestamps come from the injected clock.
    expect(created.createdAt).toBe("2030-01-01T00:00:00.000Z");
    expect(created.ttlMs).toBe(30_000);
    await pollTask(gw.url, created.taskId, isTerminal);
    fakeNow += 29_000;
    expect((await getTask(gw.url, created.taskId)).result?.status).toBe("completed");
    fakeNow += 1_001;
    // lru-cache caches its clock reading for 1 ms of real time (ttlResolution); see memory-store.test.ts.
    await delay(5);
    await expectUnknownTask(gw.url, "tasks/get", created.taskId);
    await expectUnknownTask(gw.url, "tasks/update", created.taskId);
    await expectUnknownTask(gw.url, "tasks/cancel", created.taskId);
  });

  it("a working task that expires is gone and its upstream call is cancelled", async () => {
    let fakeNow = Date.parse("2030-01-01T00:00:00.000Z");
    const spy = await startRecordingProxy(upstream.url);
    closers.push(() => spy.close());
    const gw = await gatewayFor(
      spy.url,
      { rules: [{ tool: "slow_task", mode: "always", ttlMs: 10_000 }] },
      () => fakeNow,
    );
    const created = await createTask(gw.url, "slow_task", { durationMs: 20_000, steps: 200 });
    // The upstream is working on it (progress arrives every 100 ms).
    await pollTask(gw.url, created.taskId, (t) => typeof t.statusMessage === "string");
    fakeNow += 10_001;
    await delay(5);
    await expectUnknownTask(gw.url, "tasks/get", created.taskId);
    const call = must(
      spy.posted().find((p) => p.message.method === "tools/call"),
      "the upstream tools/call",
    );
    const cancelled = await eventually(
      () => spy.posted().find((p) => p.message.method === "notifications/cancelled"),
      "notifications/cancelled upstream",
    );
    expect(isRecord(cancelled.message.params) && cancelled.message.params.requestId).toBe(call.message.id);
    await eventually(
      () => (call.exchange.closedByGateway || call.exchange.finished ? true : undefined),
      "the upstream call to stop",
    );
    expect(call.exchange.closedByGateway).toBe(true);
  });
});

describe("eviction at the byte budget", () => {
  it("old tasks go first, recent ones stay, and what remains fits the budget", async () => {
    const storeBytes = 64 * 1024;
    const gw = await gatewayFor(upstream.url, {
      storeBytes,
      maxResultBytes: 16 * 1024,
      maxTasksPerCaller: 1_000,
      rules: [{ tool: "echo", mode: "always" }],
    });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const text = `${String(i).padStart(3, "0")}:${"x".repeat(4_000)}`;
      const created = await createTask(gw.url, "echo", { text });
      const done = last(await pollTask(gw.url, created.taskId, isTerminal));
      expect(done.status).toBe("completed");
      ids.push(created.taskId);
    }
    // Newest first, so looking at a task (a use, for the LRU) cannot save an older one.
    const present: Json[] = [];
    const gone: number[] = [];
    for (let i = ids.length - 1; i >= 0; i--) {
      const reply = await getTask(gw.url, must(ids[i], "id"));
      if (reply.result) present.push(reply.result);
      else {
        expect(reply.error?.code).toBe(-32602);
        gone.push(i);
      }
    }
    // The first ones are gone, the last ones are there with their own results.
    expect(gone).toContain(0);
    expect(gone).toContain(1);
    expect(present.length).toBeGreaterThanOrEqual(5);
    const newest = must(present[0], "the newest task");
    expect(textOf(newest.result).startsWith(`${String(ids.length - 1).padStart(3, "0")}:`)).toBe(true);
    // Whatever is gone is a prefix: nothing newer than a surviving task was dropped.
    const oldestPresent = ids.length - present.length;
    expect(gone.every((i) => i < oldestPresent)).toBe(true);
    // Lower bound on what the store holds (each record is at least its wire JSON): within the budget.
    const held = present.reduce((sum, t) => sum + Buffer.byteLength(JSON.stringify(t)), 0);
    expect(held).toBeLessThanOrEqual(storeBytes);
  });

  it("a result past tasks.maxResultBytes fails the task with a clear error", async () => {
    const gw = await gatewayFor(upstream.url, {
      storeBytes: 64 * 1024,
      maxResultBytes: 2_000,
      rules: [{ tool: "echo", mode: "always" }],
    });
    const created = await createTask(gw.url, "echo", { text: "y".repeat(5_000) });
    const done = last(await pollTask(gw.url, created.taskId, isTerminal));
    expect(done.status).toBe("failed");
    expect(done).not.toHaveProperty("result");
    expect(done.error).toMatchObject({ code: -32603, data: { reason: "result_too_large", limit: 2_000 } });
    expect(String(done.statusMessage)).toMatch(/maxResultBytes/);
  });
});

describe("tasks/cancel", () => {
  it("acks, the task is cancelled, and the upstream gets notifications/cancelled for its own request id and stops", async () => {
    // 20 s of work that must not run to the end: the test is over as soon as the cancellation lands.
    const created = await createTask(main.url, "slow_task", { durationMs: 20_000, steps: 200 });
    await pollTask(main.url, created.taskId, (t) => typeof t.statusMessage === "string");
    const call = must(
      proxy
        .posted()
        .find(
          (p) =>
            p.message.method === "tools/call" &&
            isRecord(p.message.params) &&
            isRecord(p.message.params.arguments) &&
            p.message.params.arguments.durationMs === 20_000,
        ),
      "the upstream tools/call",
    );

    const ack = await cancelTask(main.url, created.taskId);
    expect(ack.status).toBe(200);
    expect(ack.result).toEqual({ resultType: "complete" });
    const after = await getTask(main.url, created.taskId);
    expect(after.result?.status).toBe("cancelled");
    expect(after.result).not.toHaveProperty("result");
    expect(after.result).not.toHaveProperty("error");

    const cancelled = await eventually(
      () =>
        proxy
          .posted()
          .find(
            (p) =>
              p.message.method === "notifications/cancelled" &&
              isRecord(p.message.params) &&
              p.message.params.requestId === call.message.id,
          ),
      "notifications/cancelled with the upstream id",
    );
    expect(cancelled.exchange.sessionId).toBe(call.exchange.sessionId);
    // The gateway's id upstream is its own, not the client's.
    expect(typeof call.message.id).toBe("string");
    await eventually(
      () => (call.exchange.closedByGateway || call.exchange.finished ? true : undefined),
      "the upstream call to stop",
    );
    expect(call.exchange.closedByGateway).toBe(true);

    // Cancelled is terminal: a second cancel is acked and changes nothing.
    const again = await cancelTask(main.url, created.taskId);
    expect(again.result).toEqual({ resultType: "complete" });
    expect((await getTask(main.url, created.taskId)).result?.status).toBe("cancelled");
  });

  it("cancelling an input_required task cancels it and withdraws its input requests", async () => {
    const created = await createTask(main.url, "ask_user", {});
    await pollTask(main.url, created.taskId, (t) => t.status === "input_required");
    const ack = await cancelTask(main.url, created.taskId);
    expect(ack.result).toEqual({ resultType: "complete" });
    const after = await getTask(main.url, created.taskId);
    expect(after.result?.status).toBe("cancelled");
    expect(after.result).not.toHaveProperty("inputRequests");
  });
});

describe("fault: the upstream dies under a working task", () => {
  it("the task ends failed, with a statusMessage and error that name the upstream", async () => {
    const doomed = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
    closers.push(() => doomed.close());
    const gw = await gatewayFor(doomed.url, { rules: [{ tool: "slow_task", mode: "always" }] });
    const created = await createTask(gw.url, "slow_task", { durationMs: 20_000, steps: 200 });
    // The upstream is working on it.
    await pollTask(gw.url, created.taskId, (t) => typeof t.statusMessage === "string");
    await doomed.close();
    const done = last(await pollTask(gw.url, created.taskId, isTerminal));
    expect(done.status).toBe("failed");
    const host = new URL(doomed.url).host;
    expect(String(done.statusMessage)).toMatch(/upstream/i);
    // Named as the client knows it (its configured name), never by its address.
    expect(String(done.statusMessage)).toContain("Upstream MCP server default");
    expect(JSON.stringify(done)).not.toContain(host);
    expect(done.error).toMatchObject({ code: -32603 });
    expect(String(isRecord(done.error) ? done.error.message : "")).toMatch(/upstream/i);
  });
});

describe("push: subscriptions/listen with notifications.taskIds", () => {
  const A = { authorization: "Bearer push-A" };
  const B = { authorization: "Bearer push-B" };

  it("acknowledges the caller's own ids, then pushes the full DetailedTask on every change", async () => {
    const mine = await createTask(main.url, "slow_task", { durationMs: 800, steps: 4 }, { headers: A });
    const theirs = await createTask(main.url, "slow_task", { durationMs: 300, steps: 1 }, { headers: B });
    const listen = openStream(
      main.url,
      "subscriptions/listen",
      { notifications: { taskIds: [mine.taskId, theirs.taskId, "no-such-task"] } },
      { id: "listen-a", headers: A },
    );
    try {
      const ack = await listen.waitFor(isMethod("notifications/subscriptions/acknowledged"), "the acknowledgement");
      expect(listen.status).toBe(200);
      expect(listen.contentType).toContain("text/event-stream");
      expect(listen.messages[0]).toBe(ack);
      const params = isRecord(ack.params) ? ack.params : {};
      expect(params.notifications).toEqual({ taskIds: [mine.taskId] });

      const completed = await listen.waitFor(
        (m) => m.method === "notifications/tasks" && isRecord(m.params) && m.params.status === "completed",
        "the completed task",
      );
      const pushes = listen.messages
        .filter(isMethod("notifications/tasks"))
        .map((m) => (isRecord(m.params) ? m.params : {}));
      expect(pushes.length).toBeGreaterThanOrEqual(2);
      for (const p of pushes) {
        expect(p.taskId).toBe(mine.taskId);
        expectTaskShape(p);
        expect(p.createdAt).toBe(mine.createdAt);
      }
      // Progress changes before the end, in order.
      const working = pushes.filter((p) => p.status === "working");
      expect(working.length).toBeGreaterThan(0);
      for (const p of working) expect(String(p.statusMessage)).toMatch(/^progress [1-4]\/4/);
      const stamps = pushes.map((p) => Date.parse(String(p.lastUpdatedAt)));
      expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
      expect(last(pushes).status).toBe("completed");

      // The last push is what tasks/get answers (minus resultType and the subscription stamp).
      const get = must((await getTask(main.url, mine.taskId, { headers: A })).result, "tasks/get");
      const { resultType: _rt, ...getFields } = get;
      const pushed = isRecord(completed.params) ? completed.params : {};
      const { _meta: meta, ...pushFields } = pushed;
      expect(pushFields).toEqual(getFields);
      expect(isRecord(meta) && meta["io.modelcontextprotocol/subscriptionId"]).toBe("listen-a");

      // Another caller's task is never pushed here.
      await pollTask(main.url, theirs.taskId, isTerminal, { headers: B });
      expect(pushes.some((p) => p.taskId === theirs.taskId)).toBe(false);
    } finally {
      await listen.close();
    }
  });

  it("pushes input_required with its inputRequests", async () => {
    const created = await createTask(main.url, "ask_user", {}, { headers: A });
    const listen = openStream(
      main.url,
      "subscriptions/listen",
      { notifications: { taskIds: [created.taskId] } },
      { id: "listen-input", headers: A },
    );
    try {
      await listen.waitFor(isMethod("notifications/subscriptions/acknowledged"), "the acknowledgement");
      const waiting = last(
        await pollTask(main.url, created.taskId, (t) => t.status === "input_required", { headers: A }),
      );
      const inputRequests = isRecord(waiting.inputRequests) ? waiting.inputRequests : {};
      const key = must(Object.keys(inputRequests)[0], "an input request key");
      // The push may have come before the listen was acknowledged; if so, the next change proves delivery.
      await updateTask(
        main.url,
        created.taskId,
        { [key]: { action: "accept", content: { name: "Ada" } } },
        { headers: A },
      );
      const done = await listen.waitFor(
        (m) => m.method === "notifications/tasks" && isRecord(m.params) && m.params.status === "completed",
        "the completed push",
      );
      expect(textOf(isRecord(done.params) ? done.params.result : undefined)).toBe(
        'action: accept; content: {"name":"Ada"}',
      );
      const pushes = listen.messages
        .filter(isMethod("notifications/tasks"))
        .map((m) => (isRecord(m.params) ? m.params : {}));
      // The answer (back to working) and the result are both changes made after the acknowledgement.
      expect(pushes.slice(-2).map((p) => p.status)).toEqual(["working", "completed"]);
      expect(pushes.at(-2)).not.toHaveProperty("inputRequests");
      // input_required may have happened before the listen was acknowledged; if it was pushed, it carried the requests.
      for (const p of pushes.filter((x) => x.status === "input_required"))
        expect(p.inputRequests).toEqual(inputRequests);
    } finally {
      await listen.close();
    }
  });

  it("a listen for nobody's tasks is acknowledged with no ids and ends", async () => {
    const listen = openStream(
      main.url,
      "subscriptions/listen",
      { notifications: { taskIds: ["no-such-task"] } },
      { id: "listen-empty", headers: A },
    );
    try {
      const ack = await listen.waitFor(isMethod("notifications/subscriptions/acknowledged"), "the acknowledgement");
      expect(isRecord(ack.params) && ack.params.notifications).toEqual({ taskIds: [] });
      const end = await listen.waitFor((m) => m.id === "listen-empty", "the end of the listen");
      expect(isRecord(end.result) && end.result.resultType).toBe("complete");
    } finally {
      await listen.close();
    }
  });
});
