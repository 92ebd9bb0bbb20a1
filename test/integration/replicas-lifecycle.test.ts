// Gateway replicas as processes that come and go, sharing tasks in the real
// Redis: a task created on one replica is polled on another and outlives its
// creator's graceful exit; a replica killed with SIGKILL leaves its unfinished
// tasks to the others, which end them failed (runner_lost) on a poll or in the
// sweep; finished results outlive every process that wrote them; a graceful
// shutdown lets tasks finish within drainMs and ends the rest failed, saying so.
// Each test has a key prefix of its own, so no replica of one test touches
// another test's tasks.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import { isRecord } from "../helpers/http.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import {
  createTask,
  getTask,
  isTerminal,
  last,
  must,
  pollTask,
  replicaConfig,
  Replicas,
  rpc,
  textOf,
  upstreamSlowCall,
  waitFor,
  type Json,
  type ReplicaProcess,
} from "../helpers/replicas.js";

const LEASE_MS = 1_000;
const SWEEP_MS = 500;
/** Room for process scheduling, Redis round trips and the poll step, on top of lease + sweep. */
const SLACK_MS = 4_000;

const replicas = new Replicas();
let redis: TestRedis;
let upstream: SdkUpstream;
let proxy: RecordingProxy;
let direct: SdkClientHandle;

beforeAll(async () => {
  redis = await testRedis();
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  proxy = await startRecordingProxy(upstream.url);
  direct = await connectSdkClient(upstream.url);
});

afterEach(async () => {
  await replicas.killAll();
});

afterAll(async () => {
  await replicas.cleanup();
  await direct?.close();
  await proxy?.close();
  await upstream?.close();
  await redis?.cleanup();
});

function config(prefix: string, tasks: Json = {}): Json {
  return replicaConfig(proxy.url, TEST_REDIS_URL, prefix, {
    leaseMs: LEASE_MS,
    sweepIntervalMs: SWEEP_MS,
    rules: [
      { tool: "slow_task", mode: "always" },
      { tool: "throw_error", mode: "always" },
    ],
    ...tasks,
  });
}

async function startPair(prefix: string): Promise<[ReplicaProcess, ReplicaProcess]> {
  const [a, b] = await Promise.all([replicas.start("A", config(prefix)), replicas.start("B", config(prefix))]);
  return [a, b];
}

const logsOf = (...ps: ReplicaProcess[]): string => ps.map((p) => `${p.name} stderr:\n${p.stderr()}`).join("\n");

describe("a task created on A, polled on B", () => {
  it("B sees it working (with A's progress), then completed with A's result; B still serves it after A exits gracefully", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = await startPair(prefix);
    const args = { durationMs: 1_500, steps: 3 };
    const created = await createTask(a.url, "slow_task", args);
    expect(created.status).toBe("working");

    const seen = await pollTask(b.url, created.taskId, isTerminal);
    expect(seen[0]?.status).toBe("working");
    expect(
      seen.some(
        (t) =>
          t.status === "working" && typeof t.statusMessage === "string" && /^progress [1-3]\/3/.test(t.statusMessage),
      ),
    ).toBe(true);
    const done = last(seen);
    expect(done.status, logsOf(a, b)).toBe("completed");
    expect(done.createdAt).toBe(created.createdAt);
    // What B answers is what A answers, and the result is the upstream's own.
    const onA = must((await getTask(a.url, created.taskId)).result, "tasks/get on A");
    expect(onA).toEqual(done);
    const reference = (await direct.client.callTool({ name: "slow_task", arguments: args })) as Json;
    expect(isRecord(done.result) && done.result.content).toEqual(reference.content);
    expect(textOf(done.result)).toBe("done after 1500 ms in 3 steps");
    // Another caller sees nothing there, on either replica.
    const stranger = await getTask(b.url, created.taskId, { headers: { authorization: "Bearer stranger" } });
    expect(stranger.error?.code).toBe(-32602);

    // A registered where it can be reached; a graceful exit takes the registration away.
    expect(await redis.keys(`${prefix}replica:`)).toHaveLength(2);
    expect(await a.terminate()).toEqual({ code: 0, signal: null });
    expect(await redis.keys(`${prefix}replica:`)).toHaveLength(1);
    const after = await getTask(b.url, created.taskId);
    expect(after.result).toEqual(done);
  });
});

describe("a replica killed with SIGKILL while its tasks work", () => {
  it("B ends the polled task failed (runner_lost), and the sweep ends the one nobody polls", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = await startPair(prefix);
    const polled = await createTask(a.url, "slow_task", { durationMs: 30_001, steps: 300 });
    const unpolled = await createTask(a.url, "slow_task", { durationMs: 30_002, steps: 300 });
    // Both calls are running on A: their progress shows on B.
    for (const t of [polled, unpolled])
      await pollTask(
        b.url,
        t.taskId,
        (x) => typeof x.statusMessage === "string" && x.statusMessage.startsWith("progress"),
      );

    await a.crash();
    const killedAt = Date.now();
    const bound = LEASE_MS + SWEEP_MS + SLACK_MS;

    // Polled on B until it ends, within the bound.
    const ended = last(
      await pollTask(b.url, polled.taskId, isTerminal, { timeoutMs: bound - (Date.now() - killedAt) }),
    );
    expect(ended.status, logsOf(b)).toBe("failed");
    expect(ended.error).toMatchObject({ code: -32603, data: { reason: "runner_lost" } });
    expect(ended).not.toHaveProperty("result");
    expect(typeof ended.statusMessage).toBe("string");

    // Nobody polls the other one: it ends in Redis by itself (B's sweep).
    const taskKey = `${prefix}task:{${unpolled.taskId}}`;
    const stored = await waitFor(
      async () => {
        const [status, json] = await redis.client.hmget(taskKey, "status", "json");
        return status === "failed" ? json : undefined;
      },
      "the sweep to end the unpolled task",
      bound - (Date.now() - killedAt),
    );
    const record = JSON.parse(must(stored ?? undefined, "the stored json")) as Json;
    expect(record).toMatchObject({ status: "failed", error: { code: -32603, data: { reason: "runner_lost" } } });
    // And tasks/get answers exactly that.
    const polledLater = must((await getTask(b.url, unpolled.taskId)).result, "tasks/get of the swept task");
    expect(polledLater).toEqual(record);

    // Neither counts as unfinished any more, nor as a sweep candidate, and A's registration lapsed.
    const unfinished = await redis.client.zrange(`${prefix}{counters}:unfinished`, "0", "-1");
    const leased = await redis.client.zrange(`${prefix}{counters}:leases`, "0", "-1");
    for (const id of [polled.taskId, unpolled.taskId]) {
      expect(unfinished).not.toContain(id);
      expect(leased).not.toContain(id);
    }
    await waitFor(
      async () => ((await redis.keys(`${prefix}replica:`)).length === 1 ? true : undefined),
      "A's registration to lapse",
      LEASE_MS + SLACK_MS,
    );
    // Control of a task whose replica is gone is answered, not hung: the task is already ended.
    expect((await rpc(b.url, "tasks/cancel", { taskId: polled.taskId })).result).toEqual({ resultType: "complete" });
    expect((await getTask(b.url, polled.taskId)).result?.status).toBe("failed");
  });

  it("control sent to B right after A died is answered at once with a clear error or applied, never hung", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = await startPair(prefix);
    const created = await createTask(a.url, "slow_task", { durationMs: 30_003, steps: 300 });
    await pollTask(
      b.url,
      created.taskId,
      (x) => typeof x.statusMessage === "string" && x.statusMessage.startsWith("progress"),
    );
    await a.crash();
    const reply = await rpc(b.url, "tasks/cancel", { taskId: created.taskId });
    if (reply.error) {
      // A's lease has not lapsed yet: B cannot reach the replica that runs the task.
      expect(reply.status).toBe(503);
      expect(reply.error).toMatchObject({ code: -32603, data: { reason: "task_runner_unreachable" } });
      expect(reply.headers["retry-after"]).toBeDefined();
    } else {
      expect(reply.result).toEqual({ resultType: "complete" });
    }
    const ended = last(
      await pollTask(b.url, created.taskId, isTerminal, { timeoutMs: LEASE_MS + SWEEP_MS + SLACK_MS }),
    );
    expect(ended.status).toBe("failed");
    expect(ended.error).toMatchObject({ data: { reason: "runner_lost" } });
  });
});

describe("restart", () => {
  it("finished results are served by a new replica process started after every old one exited", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = await startPair(prefix);
    const fromA = await createTask(a.url, "slow_task", { durationMs: 200, steps: 1 });
    const fromB = await createTask(b.url, "slow_task", { durationMs: 300, steps: 1 });
    const failed = await createTask(a.url, "throw_error", { message: "kept across restarts" });
    const finished = new Map<string, Json>();
    for (const t of [fromA, fromB, failed]) finished.set(t.taskId, last(await pollTask(b.url, t.taskId, isTerminal)));
    expect(finished.get(fromA.taskId)?.status).toBe("completed");
    expect(finished.get(fromB.taskId)?.status).toBe("completed");
    expect(finished.get(failed.taskId)).toMatchObject({
      status: "failed",
      error: { message: expect.stringContaining("kept across restarts") },
    });

    // Every old process is gone: one gracefully, one killed.
    expect((await a.terminate()).code).toBe(0);
    expect((await b.crash()).signal).toBe("SIGKILL");

    const c = await replicas.start("C", config(prefix));
    for (const [taskId, expected] of finished) {
      const reply = await getTask(c.url, taskId);
      expect(reply.result, `${taskId}: ${reply.text}\n${logsOf(c)}`).toEqual(expected);
    }
    // And the new process runs new tasks on the same store.
    const fresh = await createTask(c.url, "slow_task", { durationMs: 100, steps: 1 });
    expect(last(await pollTask(c.url, fresh.taskId, isTerminal)).status).toBe("completed");
  });

  it("a task left working when every replica died is ended by a replica started long after, though nobody polls it", async () => {
    const prefix = redis.freshPrefix();
    const a = await replicas.start("A", config(prefix));
    const orphan = await createTask(a.url, "slow_task", { durationMs: 30_006, steps: 300 });
    await pollTask(
      a.url,
      orphan.taskId,
      (x) => typeof x.statusMessage === "string" && x.statusMessage.startsWith("progress"),
    );
    await a.crash();
    // The scenario, not an assertion: no replica at all for several leases (a whole deployment down).
    await new Promise((r) => setTimeout(r, 6 * LEASE_MS));
    const c = await replicas.start("C", config(prefix));
    const startedAt = Date.now();
    const taskKey = `${prefix}task:{${orphan.taskId}}`;
    const status = await waitFor(
      async () => ((await redis.client.hget(taskKey, "status")) === "failed" ? "failed" : undefined),
      `C's sweep to end the orphaned task (status ${String(await redis.client.hget(taskKey, "status"))})\n${logsOf(c)}`,
      LEASE_MS + SWEEP_MS + SLACK_MS,
    ).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}; still ${String(await redis.client.hget(taskKey, "status"))} after ${Date.now() - startedAt} ms`,
      );
    });
    expect(status).toBe("failed");
    // The task and its counters live in different slots (Cluster), so the counter follows the status in a second
    // step: it must leave the unfinished set, shortly after.
    const unfinished = await waitFor(
      async () => {
        const ids = await redis.client.zrange(`${prefix}{counters}:unfinished`, "0", "-1");
        return ids.includes(orphan.taskId) ? undefined : ids;
      },
      "the orphaned task to leave the unfinished counter",
      SLACK_MS,
    );
    expect(unfinished).not.toContain(orphan.taskId);
    expect(must((await getTask(c.url, orphan.taskId)).result, "tasks/get on C").error).toMatchObject({
      data: { reason: "runner_lost" },
    });
  });
});

describe("graceful shutdown of a replica running tasks", () => {
  it("a task that finishes within drainMs completes; the rest end failed saying the instance shut down, their calls cancelled upstream", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = await Promise.all([
      replicas.start("A", config(prefix, { drainMs: 3_000 })),
      replicas.start("B", config(prefix)),
    ]);
    const quick = await createTask(a.url, "slow_task", { durationMs: 1_001, steps: 2 });
    const long = await createTask(a.url, "slow_task", { durationMs: 30_004, steps: 300 });
    await pollTask(
      b.url,
      long.taskId,
      (x) => typeof x.statusMessage === "string" && x.statusMessage.startsWith("progress"),
    );
    const call = must(upstreamSlowCall(proxy, 30_004), "the long task's upstream call");

    const exit = await a.terminate(15_000);
    expect(exit, logsOf(a)).toEqual({ code: 0, signal: null });

    const quickDone = must((await getTask(b.url, quick.taskId)).result, "the quick task on B");
    expect(quickDone.status, logsOf(a, b)).toBe("completed");
    expect(textOf(quickDone.result)).toBe("done after 1001 ms in 2 steps");
    const longDone = must((await getTask(b.url, long.taskId)).result, "the long task on B");
    expect(longDone.status, logsOf(a, b)).toBe("failed");
    expect(String(longDone.statusMessage)).toMatch(/shut down/);
    expect(longDone.error).toMatchObject({ code: -32603, data: { reason: "gateway_shutting_down" } });
    expect(String(isRecord(longDone.error) ? longDone.error.message : "")).toMatch(/shut down/);
    // The upstream was told: notifications/cancelled for its own request id.
    await waitFor(
      () =>
        proxy
          .posted()
          .find(
            (p) =>
              p.message.method === "notifications/cancelled" &&
              isRecord(p.message.params) &&
              p.message.params.requestId === call.message.id,
          ),
      "notifications/cancelled for the long call",
    );
  });

  it("tasks/cancel and tasks/update sent to B while A drains are forwarded to A and applied; A exits once nothing is left", async () => {
    const prefix = redis.freshPrefix();
    const rules = [
      { tool: "slow_task", mode: "always" },
      { tool: "ask_user", mode: "always" },
    ];
    const [a, b] = await Promise.all([
      replicas.start("A", config(prefix, { drainMs: 10_000, rules })),
      replicas.start("B", config(prefix, { rules })),
    ]);
    const long = await createTask(a.url, "slow_task", { durationMs: 30_005, steps: 300 });
    const ask = await createTask(a.url, "ask_user", { question: "Still there?" });
    const waiting = last(await pollTask(b.url, ask.taskId, (t) => t.status === "input_required"));
    const key = must(
      Object.keys(isRecord(waiting.inputRequests) ? waiting.inputRequests : {})[0],
      "an input request key",
    );

    a.child.kill("SIGTERM");
    // A has stopped accepting clients (its public listener is closed) but still runs both tasks.
    await waitFor(() => (a.stderr().includes("SIGTERM received") ? true : undefined), "A to start shutting down");
    await waitFor(
      () =>
        fetch(`${a.origin}/healthz`).then(
          () => undefined,
          () => true,
        ),
      "A's public listener to close",
    );
    expect(a.running()).toBe(true);

    const cancel = await rpc(b.url, "tasks/cancel", { taskId: long.taskId });
    expect(cancel.result, `${cancel.text}\n${logsOf(a, b)}`).toEqual({ resultType: "complete" });
    expect((await getTask(b.url, long.taskId)).result?.status).toBe("cancelled");
    const update = await rpc(b.url, "tasks/update", {
      taskId: ask.taskId,
      inputResponses: { [key]: { action: "accept", content: { name: "Drained" } } },
    });
    expect(update.result, update.text).toEqual({ resultType: "complete" });
    const done = last(await pollTask(b.url, ask.taskId, isTerminal));
    expect(done.status).toBe("completed");
    expect(textOf(done.result)).toBe('action: accept; content: {"name":"Drained"}');
    // Nothing left to drain: A exits without waiting out drainMs (bounded by it, not asserted tighter).
    expect(await a.exited).toEqual({ code: 0, signal: null });
  });
});
