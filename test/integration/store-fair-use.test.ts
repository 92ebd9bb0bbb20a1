// Fair use of the task store through a real gateway (README, "Limits"): when
// unfinished tasks fill tasks.storeBytes (or one caller's tasks.maxBytesPerCaller),
// a new task is refused with a clear error for `always`, and an `auto` call stays a
// plain call; the unfinished task that fills the store is never evicted for it.
// The store rules themselves are test/integration/store-contract.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { sseMessages } from "../helpers/compare.js";
import type { TestGateway } from "../helpers/gateway.js";
import { delay, isRecord } from "../helpers/http.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";

type Json = Record<string, unknown>;

const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING: Json = { extensions: { [TASKS]: {} } };
const CALLER_A = { authorization: "Bearer caller-a" };
const CALLER_B = { authorization: "Bearer caller-b" };
/** Long enough that the first task is still working whatever the second call does; it is cancelled at the end. */
const LONG_MS = 30_000;

let upstream: SdkUpstream;
const closers: Array<() => Promise<unknown>> = [];
let nextId = 1;

beforeAll(async () => {
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await upstream.close();
});

async function gatewayFor(tasks: GatewayConfigInput["tasks"]): Promise<TestGateway> {
  const gw = await startGateway({
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks,
  });
  closers.push(() => gw.close(0));
  return gw;
}

/** One modern request; the JSON-RPC response to it (JSON or SSE body). */
async function rpc(url: string, method: string, params: Json, headers: Record<string, string>): Promise<Json> {
  const id = nextId++;
  const name =
    typeof params.name === "string" ? params.name : typeof params.taskId === "string" ? params.taskId : undefined;
  const res = await fetch(url, {
    method: "POST",
    headers: modernHeaders(method, name, headers),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method,
      params: { ...params, _meta: modernMeta({ capabilities: DECLARING }) },
    }),
  });
  const text = await res.text();
  const messages: unknown[] = res.headers.get("content-type")?.includes("text/event-stream")
    ? sseMessages(text)
    : [JSON.parse(text)];
  const found = messages.find((m) => isRecord(m) && m.id === id && ("result" in m || "error" in m));
  if (!isRecord(found)) throw new Error(`no response in: ${text}`);
  return found;
}

const callTool = (url: string, args: Json, headers: Record<string, string>): Promise<Json> =>
  rpc(url, "tools/call", { name: "slow_task", arguments: args }, headers);

/** A task created for a slow_task call; its id. */
async function createTask(url: string, headers: Record<string, string>): Promise<string> {
  const reply = await callTool(url, { durationMs: LONG_MS, steps: 1 }, headers);
  const result = reply.result;
  if (!isRecord(result) || result.resultType !== "task" || typeof result.taskId !== "string")
    throw new Error(`not a task: ${JSON.stringify(reply)}`);
  return result.taskId;
}

async function taskStatus(url: string, taskId: string, headers: Record<string, string>): Promise<unknown> {
  const reply = await rpc(url, "tasks/get", { taskId }, headers);
  return isRecord(reply.result) ? reply.result.status : undefined;
}

async function cancel(url: string, taskId: string, headers: Record<string, string>): Promise<void> {
  await rpc(url, "tasks/cancel", { taskId }, headers);
  for (let i = 0; i < 200 && (await taskStatus(url, taskId, headers)) === "working"; i++) await delay(10);
}

/** Room for exactly one unfinished slow_task (its record and the 1 KiB each keeps for its outcome), not two. */
const ONE_TASK_BYTES = 2_500;

describe("fair use of the store through the gateway", () => {
  it("always: when unfinished tasks fill tasks.storeBytes, another caller's task is refused with a clear error and the first is kept", async () => {
    const gw = await gatewayFor({
      storeBytes: ONE_TASK_BYTES,
      maxResultBytes: 1_000,
      rules: [{ tool: "slow_task", mode: "always" }],
    });
    const first = await createTask(gw.url, CALLER_A);
    const refused = await callTool(gw.url, { durationMs: 10, steps: 1 }, CALLER_B);
    expect(refused.result).toBeUndefined();
    expect(refused.error).toMatchObject({ code: -32603, data: { reason: "task_limit" } });
    expect(String(isRecord(refused.error) && refused.error.message)).toMatch(
      /task store is full of unfinished tasks \(tasks\.storeBytes\)/,
    );
    expect(await taskStatus(gw.url, first, CALLER_A)).toBe("working");
    await cancel(gw.url, first, CALLER_A);
    // Its record is finished now, so evictable: the other caller's task gets room.
    const second = await createTask(gw.url, CALLER_B);
    expect(await taskStatus(gw.url, second, CALLER_B)).toBe("working");
    await cancel(gw.url, second, CALLER_B);
  });

  it("auto: when unfinished tasks fill tasks.storeBytes, the call simply stays a plain call", async () => {
    const gw = await gatewayFor({ storeBytes: ONE_TASK_BYTES, maxResultBytes: 1_000, thresholdMs: 50 });
    const first = await createTask(gw.url, CALLER_A);
    const plain = await callTool(gw.url, { durationMs: 300, steps: 1 }, CALLER_B);
    expect(plain.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 300 ms in 1 steps" }],
    });
    expect(await taskStatus(gw.url, first, CALLER_A)).toBe("working");
    await cancel(gw.url, first, CALLER_A);
  });

  it("always: tasks.maxBytesPerCaller refuses a caller whose unfinished tasks fill its share; another caller is not affected", async () => {
    const gw = await gatewayFor({
      storeBytes: 64 * 1024,
      maxBytesPerCaller: ONE_TASK_BYTES,
      maxResultBytes: 1_000,
      rules: [{ tool: "slow_task", mode: "always" }],
    });
    const first = await createTask(gw.url, CALLER_A);
    const refused = await callTool(gw.url, { durationMs: 10, steps: 1 }, CALLER_A);
    expect(refused.error).toMatchObject({ code: -32603, data: { reason: "task_limit" } });
    expect(String(isRecord(refused.error) && refused.error.message)).toMatch(/tasks\.maxBytesPerCaller/);
    const other = await createTask(gw.url, CALLER_B);
    for (const [id, who] of [
      [first, CALLER_A],
      [other, CALLER_B],
    ] as const) {
      expect(await taskStatus(gw.url, id, who)).toBe("working");
      await cancel(gw.url, id, who);
    }
  });
});
