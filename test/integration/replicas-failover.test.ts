// Two gateway replicas on a Redis Cluster and two behind Sentinel, through the failovers those deployments
// exist for: the master holding a running task's slot is killed (SIGKILL) and its replica promoted, and the
// task still completes and is read from the other gateway; the Sentinel primary is killed while a client
// polls, and the polls come back to the finished task. And tasks.redisWaitReplicas at the gateway: a write
// the replicas cannot confirm is not acknowledged (creation follows the store-down rules).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import {
  createTask,
  getTask,
  isTerminal,
  replicaConfig,
  Replicas,
  rpc,
  textOf,
  waitFor,
  type Json,
  type ReplicaProcess,
} from "../helpers/replicas.js";
import {
  cli,
  startRedisCluster,
  startRedisSentinel,
  type PrivateCluster,
  type PrivateSentinel,
} from "../helpers/redis-topologies.js";

const PREFIX = `mtg-test:${process.pid}:failover:`;
// A lease far longer than a failover (about 2 s here): the running task keeps it throughout.
const TASKS = { leaseMs: 10_000, sweepIntervalMs: 1_000, thresholdMs: 100, rules: [{ tool: "echo", mode: "always" }] };

const replicas = new Replicas();
let upstream: SdkUpstream;
let cluster: PrivateCluster;
let sentinel: PrivateSentinel;

beforeAll(async () => {
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  [cluster, sentinel] = await Promise.all([startRedisCluster(), startRedisSentinel()]);
}, 120_000);

afterAll(async () => {
  await replicas.cleanup();
  await upstream?.close();
  await Promise.allSettled([cluster?.stop(), sentinel?.stop()]);
}, 60_000);

/** tasks/get until the task is final, riding out the failover (503 store_unavailable meanwhile is fine). */
async function finalThrough(url: string, taskId: string, timeoutMs = 30_000): Promise<{ task: Json; errors: number }> {
  let errors = 0;
  const task = await waitFor(
    async () => {
      const reply = await getTask(url, taskId);
      if (reply.result === undefined) {
        errors += 1;
        return undefined;
      }
      return isTerminal(reply.result) ? reply.result : undefined;
    },
    `task ${taskId} to finish`,
    timeoutMs,
    100,
  );
  return { task, errors };
}

async function two(store: string, tasks: Json = {}): Promise<[ReplicaProcess, ReplicaProcess]> {
  const config = replicaConfig(upstream.url, store, PREFIX, { ...TASKS, ...tasks });
  return await Promise.all([replicas.start("A", config), replicas.start("B", config)]);
}

describe("on a Redis Cluster", () => {
  it("kill -9 of the master holding a running task's slot: the task completes, read from the other replica", async () => {
    const [a, b] = await two(cluster.url);
    try {
      const task = await createTask(a.url, "slow_task", { durationMs: 4_000, steps: 4 });
      // Both replicas read it before the failover.
      expect((await getTask(b.url, task.taskId)).result).toMatchObject({ status: "working" });
      const master = await cluster.masterOf(`${PREFIX}task:{${task.taskId}}`);
      await cluster.node(master).kill();
      const { task: done } = await finalThrough(b.url, task.taskId);
      await cluster.failedOver(master);
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(textOf(done.result)).toBe("done after 4000 ms in 4 steps");
      // Another master now serves the slot, and new tasks work on either replica.
      expect(await cluster.masterOf(`${PREFIX}task:{${task.taskId}}`)).not.toBe(master);
      const after = await createTask(b.url, "echo", { text: "after the failover" });
      const { task: echoed } = await finalThrough(a.url, after.taskId);
      expect(textOf(echoed.result)).toBe("after the failover");
    } finally {
      await replicas.cleanup();
      // The old master comes back as a replica of the promoted one.
      for (const n of cluster.nodes) if (!n.running) await n.start();
      await cluster.healthy();
    }
  }, 90_000);

  it("DEBUG SLEEP of the master holding a running task's slot (it hangs, is failed over, wakes as a replica)", async () => {
    // A master that hangs still takes the writes queued for it when it wakes, before it learns it was demoted,
    // and they are lost when it resyncs from the promoted replica: the completion survives because with WAIT
    // it is acknowledged only once a replica holds it (unconfirmed, it is written again, to the new master).
    const [a, b] = await two(cluster.url, { redisWaitReplicas: 1 });
    try {
      const task = await createTask(a.url, "slow_task", { durationMs: 3_000, steps: 3 });
      const master = await cluster.masterOf(`${PREFIX}task:{${task.taskId}}`);
      // redis-cli returns once the master wakes, 4 s later; meanwhile the cluster promotes its replica.
      const sleeping = cli(master, "DEBUG", "SLEEP", "4");
      const { task: done } = await finalThrough(b.url, task.taskId, 45_000);
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(textOf(done.result)).toBe("done after 3000 ms in 3 steps");
      await sleeping;
    } finally {
      await replicas.cleanup();
      await cluster.healthy();
    }
  }, 90_000);

  it("a resharding while tasks run: no task is lost, MOVED and ASK are followed", async () => {
    const [a, b] = await two(cluster.url);
    try {
      const started = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          createTask(i % 2 === 0 ? a.url : b.url, "slow_task", { durationMs: 3_000 + i, steps: 3 }),
        ),
      );
      const masters = (await cluster.topology()).filter((n) => n.master).map((n) => n.port);
      const [from = 0, to = 0] = masters;
      await cluster.reshard(from, to, 1_000);
      for (const [i, t] of started.entries()) {
        const { task } = await finalThrough(i % 2 === 0 ? b.url : a.url, t.taskId);
        expect(task.status, JSON.stringify(task)).toBe("completed");
      }
    } finally {
      await replicas.cleanup();
    }
  }, 120_000);
});

describe("behind Sentinel", () => {
  it("the primary is killed while a client polls: the polls come back to the completed task", async () => {
    let promotedPort = 0;
    const [a, b] = await two(sentinel.url);
    try {
      const task = await createTask(a.url, "slow_task", { durationMs: 5_000, steps: 5 });
      const polling = finalThrough(b.url, task.taskId, 45_000);
      const primary = await sentinel.primary();
      const old = sentinel.data.find((n) => n.port === primary);
      if (!old) throw new Error("the primary is not one of the deployment's servers");
      await old.kill();
      const promoted = await sentinel.promotedFrom(primary);
      promotedPort = promoted;
      expect(promoted).not.toBe(primary);
      const { task: done } = await polling;
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(textOf(done.result)).toBe("done after 5000 ms in 5 steps");
      const after = await createTask(b.url, "echo", { text: "after the failover" });
      const { task: echoed } = await finalThrough(a.url, after.taskId);
      expect(textOf(echoed.result)).toBe("after the failover");
    } finally {
      await replicas.cleanup();
      // The old primary returns; the Sentinels make it a replica of the new one, in sync.
      for (const n of sentinel.data) if (!n.running) await n.start();
      await waitFor(
        async () => {
          const replica = sentinel.data.find((n) => n.port !== promotedPort);
          const info = replica ? await cli(replica.port, "INFO", "replication") : "";
          return info.includes("role:slave") && info.includes("master_link_status:up") ? true : undefined;
        },
        "the old primary to rejoin as a replica",
        30_000,
        200,
      );
    }
  }, 120_000);

  it("redisWaitReplicas: confirmed writes are acknowledged; unconfirmed creation follows the store-down rules", async () => {
    const [confirmed] = await Promise.all([
      replicas.start(
        "W1",
        replicaConfig(upstream.url, sentinel.url, PREFIX, {
          ...TASKS,
          redisWaitReplicas: 1,
        }),
      ),
    ]);
    const made = await createTask(confirmed.url, "echo", { text: "confirmed" });
    const { task } = await finalThrough(confirmed.url, made.taskId);
    expect(textOf(task.result)).toBe("confirmed");

    // Two replicas asked of a primary that has one: nothing is ever confirmed.
    const unconfirmed = await replicas.start(
      "W2",
      replicaConfig(upstream.url, sentinel.url, PREFIX, {
        ...TASKS,
        redisWaitReplicas: 2,
        redisWaitTimeoutMs: 200,
      }),
    );
    const always = await rpc(unconfirmed.url, "tools/call", { name: "echo", arguments: { text: "x" } });
    expect(always.error, always.text).toMatchObject({ code: -32603, data: { reason: "store_unavailable" } });
    expect(always.status).toBe(503);
    // auto: the call that would have become a task is answered plainly.
    const auto = await rpc(unconfirmed.url, "tools/call", {
      name: "slow_task",
      arguments: { durationMs: 400, steps: 2 },
    });
    expect(auto.result, auto.text).toMatchObject({ resultType: "complete" });
    expect(textOf(auto.result)).toBe("done after 400 ms in 2 steps");
    await replicas.cleanup();
  }, 60_000);
});
