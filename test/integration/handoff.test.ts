// Rolling deploys with shared tasks: a gateway instance that shuts down
// gracefully hands its unfinished tasks to another instance when the upstream
// can resume the call's stream (its SSE events carry ids: SDK 1.x with an event
// store), and otherwise cancels the call upstream and ends the task failed,
// saying so. Two gateways share one real Redis; the upstream is the real SDK 1.x server.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import type { TestGateway } from "../helpers/gateway.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

let redis: TestRedis;
const gateways: TestGateway[] = [];
const upstreams: SdkUpstream[] = [];

beforeAll(async () => {
  redis = await testRedis();
});
afterEach(async () => {
  await Promise.allSettled(gateways.splice(0).map((g) => g.close(0)));
  await Promise.allSettled(upstreams.splice(0).map((u) => u.close()));
});
afterAll(async () => {
  await redis.cleanup();
});

async function replica(upstreamUrl: string, prefix: string): Promise<TestGateway> {
  const gw = await startGateway({
    upstream: { url: upstreamUrl, era: "legacy" },
    server: { host: "127.0.0.1", port: 0 },
    tasks: {
      store: TEST_REDIS_URL,
      storePrefix: prefix,
      rules: [{ tool: "slow_task", mode: "always" }],
      drainMs: 100,
      leaseMs: 3_000,
      forwardTimeoutMs: 5_000,
    },
    log: { level: (process.env.HANDOFF_LOG ?? "silent") as "silent" },
  });
  gateways.push(gw);
  return gw;
}

async function call(
  url: string,
  method: string,
  name: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: modernHeaders(method, name),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: { ...params, _meta: modernMeta({ capabilities: TASKS }) },
    }),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** Polls tasks/get on `url` until the task is terminal (bounded). */
async function settled(url: string, taskId: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await call(url, "tasks/get", taskId, { taskId });
    const task = answer.result as Record<string, unknown> | undefined;
    if (task && ["completed", "failed", "cancelled"].includes(String(task.status))) return task;
    if (Date.now() > deadline) throw new Error(`task not terminal: ${JSON.stringify(answer)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls tasks/get on `url` until the task reports progress (bounded). */
async function progressed(url: string, taskId: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const task = (await call(url, "tasks/get", taskId, { taskId })).result as Record<string, unknown> | undefined;
    if (typeof task?.statusMessage === "string" && task.statusMessage.startsWith("progress")) return;
    if (Date.now() > deadline) throw new Error(`no progress: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function startTask(url: string): Promise<string> {
  const created = await call(url, "tools/call", "slow_task", {
    name: "slow_task",
    arguments: { durationMs: 1_500, steps: 3 },
  });
  const result = created.result as { resultType?: string; taskId?: string };
  expect(result.resultType).toBe("task");
  return result.taskId as string;
}

describe("the internal listener", () => {
  it("refuses anything but a request forwarded by a replica (403 not_a_replica)", async () => {
    const upstream = await startSdkUpstream();
    upstreams.push(upstream);
    const prefix = redis.freshPrefix();
    await replica(upstream.url, prefix);
    const registered = (await redis.keys(prefix)).filter((k) => k.startsWith(`${prefix}replica:`));
    expect(registered).toHaveLength(1);
    const address = await redis.client.get(registered[0] as string);
    expect(address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tasks/get",
      params: { taskId: "t", _meta: modernMeta({ capabilities: TASKS }) },
    });
    for (const forged of [undefined, "replica-x.1.bm90LWEtbWFj"]) {
      const res = await fetch(`${address}/mcp`, {
        method: "POST",
        headers: { ...modernHeaders("tasks/get", "t"), ...(forged && { "mcp-gateway-forwarded": forged }) },
        body,
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe("not_a_replica");
    }
  });
});

describe("graceful shutdown of the instance running a task", () => {
  it("hands a resumable call to another instance, which finishes the task with the upstream's result", async () => {
    const upstream = await startSdkUpstream({ resumable: true });
    upstreams.push(upstream);
    const prefix = redis.freshPrefix();
    const a = await replica(upstream.url, prefix);
    const b = await replica(upstream.url, prefix);
    const taskId = await startTask(a.url);
    // A resumes from the last event id it read: wait until it has read one (the first progress step),
    // as any real drain (seconds, not this test's 100 ms) would have.
    await progressed(b.url, taskId);

    await a.close();
    const task = await settled(b.url, taskId);
    expect(task.status, JSON.stringify(task)).toBe("completed");
    expect(task.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "done after 1500 ms in 3 steps" }],
    });
    expect((await b.stats()).tasks.runningHere).toBe(0);
  });

  it("cancels a call it cannot hand on and ends the task failed, saying why", async () => {
    const upstream = await startSdkUpstream();
    upstreams.push(upstream);
    const prefix = redis.freshPrefix();
    const a = await replica(upstream.url, prefix);
    const b = await replica(upstream.url, prefix);
    const taskId = await startTask(a.url);

    await a.close();
    const task = await settled(b.url, taskId);
    expect(task.status).toBe("failed");
    expect(String(task.statusMessage)).toMatch(/shut down/);
    expect(task.error).toMatchObject({ code: -32603, data: { reason: "gateway_shutting_down" } });
  });
});
