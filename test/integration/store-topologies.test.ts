// The Redis store on the deployments teams run: a Redis Cluster (3 masters, 3 replicas, full coverage required,
// so a script that touched two slots would fail) and a primary with a replica behind three Sentinels. The
// TaskStore contract runs on both, then what is particular to each: leases and push across the cluster's
// masters (sharded pub/sub), scripts a promoted replica has never seen (NOSCRIPT), and WAIT.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLatencyShare } from "../../src/store/redis-latency.js";
import { RedisLeases } from "../../src/store/redis-leases.js";
import { RedisTaskEvents } from "../../src/store/redis-events.js";
import { RedisTaskStore } from "../../src/store/redis-store.js";
import { RedisRateStore } from "../../src/ratelimit/redis-store.js";
import { RedisSessionOwners } from "../../src/store/redis-session-owners.js";
import { createLogger } from "../../src/log/logger.js";
import { pollUntil } from "../helpers/poll.js";
import { testRedis, type TestRedis } from "../helpers/redis.js";
import {
  cli,
  startRedisCluster,
  startRedisSentinel,
  type PrivateCluster,
  type PrivateSentinel,
} from "../helpers/redis-topologies.js";
import { next, redisHarness, ROOMY, stored, taskStoreContract } from "../helpers/store-contract.js";
import { taskRecord as record } from "../helpers/task-record.js";

let cluster: PrivateCluster;
let sentinel: PrivateSentinel;
let onCluster: TestRedis;
let onSentinel: TestRedis;

beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([startRedisCluster(), startRedisSentinel()]);
  [onCluster, onSentinel] = await Promise.all([testRedis(cluster.url), testRedis(sentinel.url)]);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([onCluster?.cleanup(), onSentinel?.cleanup()]);
  await Promise.allSettled([cluster?.stop(), sentinel?.stop()]);
}, 60_000);

taskStoreContract("RedisTaskStore on Redis Cluster", () =>
  redisHarness(
    () => onCluster.client,
    () => onCluster.freshPrefix(),
  ),
);

taskStoreContract("RedisTaskStore behind Sentinel", () =>
  redisHarness(
    () => onSentinel.client,
    () => onSentinel.freshPrefix(),
  ),
);

describe.each([
  { name: "Redis Cluster", on: () => onCluster },
  { name: "Sentinel", on: () => onSentinel },
])("leases, push and handoffs on $name", ({ on }) => {
  it("two replicas: leases renew across slots, push reaches the other replica, handoff peers are counted", async () => {
    const r = on();
    const prefix = r.freshPrefix();
    const leaseMs = 2_000;
    const replicas = await Promise.all(
      [0, 1].map(async () => {
        const client = await r.connect();
        const subscriber = await r.subscriber();
        const leases = new RedisLeases({ client, prefix, leaseMs, now: Date.now });
        const store = new RedisTaskStore({
          client,
          prefix,
          maxBytes: 1_000_000,
          now: Date.now,
          lease: { replicaId: leases.replicaId, leaseMs },
        });
        const events = new RedisTaskEvents(client, subscriber, prefix);
        return { leases, store, events };
      }),
    );
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    try {
      // Tasks whose ids hash all over the slots, so over every master.
      const tasks = Array.from({ length: 12 }, (_, i) => record(`task-${i}-${Math.random()}`, Date.now()));
      for (const t of tasks) expect(await a.store.create(stored(t), ROOMY)).toEqual({ ok: true });
      expect(await a.leases.renew(tasks.map((t) => t.taskId))).toEqual([]);
      expect(await b.leases.runner(tasks[0]?.taskId ?? "")).toBe(a.leases.replicaId);
      // A poll's read (bytes, one pipeline in the task's slot) names the runner too, on any replica.
      expect((await b.store.getBytes(tasks[0]?.taskId ?? ""))?.runner).toBe(a.leases.replicaId);

      // Push: b listens on every task; a's changes reach it whichever master the task's channel lives on.
      const heard = new Set<string>();
      const offs = await Promise.all(tasks.map((t) => b.events.subscribe(t.taskId, () => heard.add(t.taskId))));
      for (const t of tasks) a.events.publish(t.taskId, JSON.stringify({ taskId: t.taskId }));
      expect(
        await pollUntil(
          () => Promise.resolve(heard.size),
          (n) => n === tasks.length,
        ),
      ).toBe(tasks.length);
      for (const off of offs) off();

      // Handoffs: each replica counts the other as a peer.
      const offers: string[] = [];
      await a.events.onHandoff(() => undefined);
      await b.events.onHandoff((taskId) => offers.push(taskId));
      expect(await a.events.handoffPeers()).toBe(1);
      a.events.announceHandoff("t-1", a.leases.replicaId);
      expect(
        await pollUntil(
          () => Promise.resolve(offers.length),
          (n) => n === 1,
        ),
      ).toBe(1);

      // Completion drops the lease; the counters (another slot) follow.
      const [first] = tasks;
      if (!first) throw new Error("no task");
      expect(await a.store.update(stored(next(first, "completed")))).toBe("ok");
      expect(await b.leases.runner(first.taskId)).toBeUndefined();
      expect((await b.store.stats()).unfinished).toBe(tasks.length - 1);
    } finally {
      for (const x of replicas) {
        await x.events.close();
        await x.leases.close();
        await x.store.close();
      }
    }
  });
});

describe("scripts on a promoted replica (NOSCRIPT)", () => {
  it("a script the server does not have is sent again in full, on every master", async () => {
    const prefix = onCluster.freshPrefix();
    const store = new RedisTaskStore({ client: onCluster.client, prefix, maxBytes: 1_000_000, now: Date.now });
    try {
      const t = record("noscript-1", Date.now());
      expect(await store.create(stored(t), ROOMY)).toEqual({ ok: true });
      // What a replica promoted since holds: no script at all.
      for (const n of cluster.nodes) if (n.running) await cli(n.port, "SCRIPT", "FLUSH");
      expect(await store.update(stored(next(t, "completed")))).toBe("ok");
      expect((await store.get(t.taskId))?.status).toBe("completed");
      expect((await store.stats()).unfinished).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe("tasks.redisWaitReplicas (WAIT)", () => {
  it.each([
    { name: "Redis Cluster", on: () => onCluster },
    { name: "Sentinel", on: () => onSentinel },
  ])("on $name: with 1 replica asked, creation and completion are acknowledged", async ({ on }) => {
    const r = on();
    const store = new RedisTaskStore({
      client: r.client,
      prefix: r.freshPrefix(),
      maxBytes: 1_000_000,
      now: Date.now,
      wait: { replicas: 1, timeoutMs: 2_000 },
    });
    try {
      const tasks = Array.from({ length: 5 }, (_, i) => record(`wait-${i}`, Date.now()));
      // Concurrent writes share WAITs; every one is confirmed.
      const created = await Promise.all(tasks.map((t) => store.create(stored(t), ROOMY)));
      expect(created).toEqual(tasks.map(() => ({ ok: true })));
      const done = await Promise.all(tasks.map((t) => store.update(stored(next(t, "completed")))));
      expect(done).toEqual(tasks.map(() => "ok"));
    } finally {
      await store.close();
    }
  });

  it("asking more replicas than there are: creation is refused (not acknowledged) and undone", async () => {
    const prefix = onSentinel.freshPrefix();
    const store = new RedisTaskStore({
      client: onSentinel.client,
      prefix,
      maxBytes: 1_000_000,
      now: Date.now,
      wait: { replicas: 2, timeoutMs: 200 },
    });
    try {
      const t = record("wait-refused", Date.now());
      await expect(store.create(stored(t), ROOMY)).rejects.toThrow(
        /did not confirm the write within 200 ms \(1 of 2\)/,
      );
      expect(await store.get(t.taskId)).toBeUndefined();
      expect((await store.stats()).unfinished).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("a completion the replicas cannot confirm rejects; written again once they can, it is confirmed", async () => {
    const prefix = onSentinel.freshPrefix();
    const open = (replicas: number): RedisTaskStore =>
      new RedisTaskStore({
        client: onSentinel.client,
        prefix,
        maxBytes: 1_000_000,
        now: Date.now,
        wait: { replicas, timeoutMs: 200 },
      });
    const [plain, strict, confirming] = [open(0), open(2), open(1)];
    try {
      const t = record("wait-finish", Date.now());
      expect(await plain.create(stored(t), ROOMY)).toEqual({ ok: true });
      const done = stored(next(t, "completed"));
      await expect(strict.update(done)).rejects.toThrow(/did not confirm the write/);
      // The engine's retry of a final write: the version is there already ("final"), and now confirmed.
      expect(await confirming.update(done)).toBe("final");
    } finally {
      await Promise.all([plain.close(), strict.close(), confirming.close()]);
    }
  });

  it("off (0): no WAIT is sent", async () => {
    const store = new RedisTaskStore({
      client: onSentinel.client,
      prefix: onSentinel.freshPrefix(),
      maxBytes: 1_000_000,
      now: Date.now,
      wait: { replicas: 0, timeoutMs: 1 },
    });
    try {
      const primary = await sentinel.primary();
      const before = await cli(primary, "INFO", "commandstats");
      const t = record("wait-off", Date.now());
      expect(await store.create(stored(t), ROOMY)).toEqual({ ok: true });
      const after = await cli(primary, "INFO", "commandstats");
      const waits = (text: string): number => Number(/cmdstat_wait:calls=(\d+)/.exec(text)?.[1] ?? 0);
      expect(waits(after)).toBe(waits(before));
    } finally {
      await store.close();
    }
  });
});

describe.each([
  { name: "Redis Cluster", on: () => onCluster },
  { name: "Sentinel", on: () => onSentinel },
])("the shared latency history on $name", ({ on }) => {
  it("two replicas' samples merge in one script on one slot", async () => {
    const r = on();
    const prefix = r.freshPrefix();
    const share = (): RedisLatencyShare =>
      new RedisLatencyShare({ client: r.client, prefix, upstream: "http://u/mcp", maxTools: 10, now: Date.now });
    const [a, b] = [share(), share()];
    await a.exchange([{ tool: "t", added: 2, scale: 1, delta: [1, 1, 0] }], [], 3);
    const merged = await b.exchange([{ tool: "t", added: 1, scale: 1, delta: [0, 0, 1] }], ["t"], 3);
    expect(merged.get("t")).toEqual({ samples: 3, weights: [1, 1, 1] });
  });
});

describe.each([
  { name: "Redis Cluster", on: () => onCluster },
  { name: "Sentinel", on: () => onSentinel },
])("rate-limit budgets on $name", ({ on }) => {
  it("a global and a per-caller rule of one request are taken in one script on one slot, all or none", async () => {
    const r = on();
    const store = new RedisRateStore(r.client, r.freshPrefix());
    // Per caller: 2 a minute; global: 3 a minute. Two callers: the global budget refuses the fourth request.
    const takes = (caller: string) => [
      { key: `per:${caller}`, intervalMs: 30_000, burst: 2 },
      { key: "global", intervalMs: 20_000, burst: 3 },
    ];
    const allowed = async (caller: string) => (await store.take(takes(caller))).every((o) => o.allowed);
    expect(await allowed("a")).toBe(true);
    expect(await allowed("a")).toBe(true);
    // a's own budget is spent: refused, and the global budget is not touched (all or none).
    expect(await allowed("a")).toBe(false);
    expect(await allowed("b")).toBe(true);
    const last = await store.take(takes("b"));
    expect(last.map((o) => o.allowed)).toEqual([true, false]);
    expect(last[1]?.retryAfterMs).toBeGreaterThan(0);
  });
});

describe.each([
  { name: "Redis Cluster", on: () => onCluster },
  { name: "Sentinel", on: () => onSentinel },
])("the session owner map on $name", ({ on }) => {
  it("many sessions' records, in many slots, are claimed, renewed together and given up together", async () => {
    const r = on();
    const prefix = r.freshPrefix();
    const owners = (replicaId: string) =>
      new RedisSessionOwners({ client: r.client, prefix, leaseMs: 60_000, replicaId, log: createLogger("silent") });
    const [a, b] = [owners("replica-a"), owners("replica-b")];
    const ids = Array.from({ length: 20 }, (_, i) => `session-${i}`);
    for (const id of ids) await a.claim(id);
    await a.renew();
    for (const id of ids) expect(await b.ownerOf(id)).toBe("replica-a");
    await a.close();
    for (const id of ids) expect(await b.ownerOf(id)).toBeUndefined();
    await b.close();
  });
});
