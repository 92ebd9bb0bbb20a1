// Leases on a real Redis (src/store/redis-leases.ts with the leased RedisTaskStore):
// which replica runs an unfinished task, renewal, release, the sweep candidates,
// ending a lapsed task exactly once when replicas race, adoption (a handoff), the
// replica registry and the shared secret. Then LocalLeases (one process), and the
// engine (src/tasks/engine.ts) end to end on Redis: several TaskEngines on one
// prefix, each with its own connections, as several gateway replicas would be.
//
// Every "replica" here has its own ioredis connection. Lapses are real (short
// leases and Redis's own PX); waits are bounded polls, and nothing asserts how
// long anything took.
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisClient } from "../../src/store/redis-connect.js";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import type { JsonObject } from "../../src/protocol/json.js";
import { LocalLeases } from "../../src/store/local-leases.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import { RedisTaskEvents } from "../../src/store/redis-events.js";
import { redisKeys } from "../../src/store/redis-keys.js";
import { RedisLeases } from "../../src/store/redis-leases.js";
import { RedisTaskStore } from "../../src/store/redis-store.js";
import { taskBytes } from "../../src/store/task-bytes.js";
import type { TaskLeases } from "../../src/store/task-leases.js";
import { storedTask, type CreateLimits, type StoredTask, type TaskRecord } from "../../src/store/task-store.js";
import { TaskEngine, type TaskLimits } from "../../src/tasks/engine.js";
import type { LeaseTiming } from "../../src/tasks/lease-keeper.js";
import type { TaskRuntime } from "../../src/tasks/task-runtime.js";
import { taskResultJson, transition, type TaskEvent } from "../../src/tasks/task.js";
import { fakeRuntime } from "../helpers/fake-runtime.js";
import { pollUntil } from "../helpers/poll.js";
import { fileRedis } from "../helpers/redis.js";
import { taskRecord } from "../helpers/task-record.js";

// ---- tasks as the engine stores them ----

const ROOMY: CreateLimits = { maxTasks: 1_000, maxTasksPerCaller: 1_000 };
/** A lease that outlives any test: it never lapses by itself here. */
const LONG_LEASE_MS = 60_000;
/** A lease short enough to wait out. */
const SHORT_LEASE_MS = 500;
const STORE_BYTES = 16 * 1024 * 1024;

const record = (taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord =>
  taskRecord(taskId, new Date(), { ttlMs: 10 * 60_000, pollIntervalMs: 500, ...overrides });

/** The stored form, with the tasks/get JSON the engine writes. */
const stored = (r: TaskRecord): StoredTask => storedTask(r, taskResultJson(r));

/** The next version of a task, through the engine's own state machine. */
const after = (r: TaskRecord, event: TaskEvent): TaskRecord => transition(r, event, new Date());

const completed = (r: TaskRecord): TaskRecord =>
  after(r, { type: "complete", result: { content: [{ type: "text", text: "done" }], isError: false } });

/** The failed version a replica writes when it ends a task whose runner is gone. */
const runnerLost = (
  r: TaskRecord,
  message = "The gateway instance running this task stopped before it finished",
): TaskRecord => after(r, { type: "fail", error: { code: -32603, message, data: { reason: "runner_lost" } }, message });

// ---- replicas ----

/** The file's Redis, and what the running test opened (closed after it); nothing is left under its prefix at the end. */
const { redis, opened } = fileRedis();

interface Replica {
  id: string;
  client: RedisClient;
  leases: RedisLeases;
  store: RedisTaskStore;
}

interface ReplicaOptions {
  leaseMs?: number;
  now?: () => number;
  maxBytes?: number;
  replicaId?: string;
}

/** One "replica": its own connection, leases, and a leased store on `prefix`. */
async function replica(prefix: string, opts: ReplicaOptions = {}): Promise<Replica> {
  const client = await redis.connect();
  const leaseMs = opts.leaseMs ?? LONG_LEASE_MS;
  const now = opts.now ?? Date.now;
  const leases = new RedisLeases({
    client,
    prefix,
    leaseMs,
    now,
    ...(opts.replicaId !== undefined && { replicaId: opts.replicaId }),
  });
  const store = new RedisTaskStore({
    client,
    prefix,
    maxBytes: opts.maxBytes ?? STORE_BYTES,
    now,
    lease: { replicaId: leases.replicaId, leaseMs },
  });
  opened.push(async () => {
    await leases.close();
    await store.close();
  });
  return { id: leases.replicaId, client, leases, store };
}

async function create(r: Replica, task: TaskRecord, limits: CreateLimits = ROOMY): Promise<TaskRecord> {
  expect(await r.store.create(stored(task), limits)).toEqual({ ok: true });
  return task;
}

/** Waits until the task's lease lapsed (Redis expired it); returns the task as read then. */
async function lapse(reader: Replica, taskId: string): Promise<StoredTask | undefined> {
  const seen = await pollUntil(
    () => reader.store.get(taskId),
    (t) => t?.runner === null,
  );
  expect(seen?.runner).toBeNull();
  return seen;
}

// ---- RedisLeases ----

describe("RedisLeases: who runs a task", () => {
  it("create takes the creating replica's lease: get and runner() name it, on every replica", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    expect(a.id).not.toBe(b.id);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new RedisLeases({ client: a.client, prefix, leaseMs: 1, now: Date.now, replicaId: "given" }).replicaId).toBe(
      "given",
    );
    const t = await create(a, record("t1"));
    expect((await a.store.get("t1"))?.runner).toBe(a.id);
    expect((await b.store.get("t1"))?.runner).toBe(a.id);
    expect(await a.leases.runner("t1")).toBe(a.id);
    expect(await b.leases.runner("t1")).toBe(a.id);
    expect((await b.store.get("t1"))?.json).toBe(stored(t).json);
    // The lease is a key with Redis's own TTL, the lease length.
    const keys = redisKeys(prefix);
    const pttl = await redis.client.pttl(keys.lease("t1"));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(LONG_LEASE_MS);
    // It is a sweep candidate with a deadline in the future: not lapsed.
    expect(await redis.client.zscore(keys.leases, "t1")).not.toBeNull();
    expect(await b.leases.lapsed(100)).toEqual([]);
  });

  it("a finished task has no runner, and an unknown one neither", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const t = await create(a, record("t1"));
    expect(await a.store.update(stored(completed(t)))).toBe("ok");
    const got = await a.store.get("t1");
    expect(got?.status).toBe("completed");
    expect(got?.runner).toBeUndefined();
    expect(await a.leases.runner("t1")).toBeUndefined();
    expect(await a.leases.runner("no-such-task")).toBeUndefined();
    expect(await a.store.get("no-such-task")).toBeUndefined();
  });

  it("renew extends the lease: a fresh lease length, and a later sweep deadline", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const keys = redisKeys(prefix);
    await create(a, record("t1"));
    const first = await redis.client.pttl(keys.lease("t1"));
    const deadline0 = Number(await redis.client.zscore(keys.leases, "t1"));
    // Let a few milliseconds of the lease pass.
    const before = await pollUntil(
      () => redis.client.pttl(keys.lease("t1")),
      (p) => p < first - 5,
    );
    expect(before).toBeLessThan(first - 5);
    expect(await a.leases.renew(["t1"])).toEqual([]);
    expect(await redis.client.pttl(keys.lease("t1"))).toBeGreaterThan(before);
    expect(Number(await redis.client.zscore(keys.leases, "t1"))).toBeGreaterThan(deadline0);
    expect(await a.leases.renew([])).toEqual([]);
  });

  it("renewed, a lease outlives its length; unrenewed, it lapses: get says runner null and the task stays unfinished", async () => {
    const prefix = redis.freshPrefix();
    const leaseMs = 1_000;
    const a = await replica(prefix, { leaseMs });
    const b = await replica(prefix);
    const t = await create(a, record("t1"));
    // Renewed every tenth of the lease for well over two lease lengths: always held by A.
    const runners = new Set<string | null | undefined>();
    const until = Date.now() + 2.5 * leaseMs;
    while (Date.now() < until) {
      runners.add((await b.store.get("t1"))?.runner);
      expect(await a.leases.renew(["t1"])).toEqual([]);
      await sleep(leaseMs / 10);
    }
    expect([...runners]).toEqual([a.id]);
    // No more renewal: RedisClient expires the lease by itself.
    const lapsed = await lapse(b, "t1");
    expect(lapsed?.status).toBe("working");
    expect(lapsed?.json).toBe(stored(t).json);
    expect(await b.leases.runner("t1")).toBeUndefined();
    // A replica that was only slow, renewing before anyone ended the task, holds it again.
    expect(await a.leases.renew(["t1"])).toEqual([]);
    expect((await b.store.get("t1"))?.runner).toBe(a.id);
  });

  it("renew returns the ids it no longer holds: gone, finished, adopted by another replica, ended after a lapse, never known", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    // The same replica id with a short lease, for the task that lapses.
    const aShort = await replica(prefix, { leaseMs: SHORT_LEASE_MS, replicaId: a.id });
    const b = await replica(prefix);
    await create(a, record("kept"));
    await create(a, record("expired", { ttlMs: 300 }));
    const finished = await create(a, record("finished"));
    await create(a, record("adopted"));
    const ended = await create(aShort, record("ended"));

    expect(await a.store.update(stored(completed(finished)))).toBe("ok");
    expect(await b.leases.adopt("adopted", a.id)).toBe(true);
    const gone = await pollUntil(
      () => b.store.get("expired"),
      (t) => t === undefined,
    );
    expect(gone).toBeUndefined();
    await lapse(b, "ended");
    expect(await b.leases.endLapsed(stored(runnerLost(ended)))).toBe(true);

    const lost = await a.leases.renew(["kept", "expired", "finished", "adopted", "ended", "never"]);
    expect(lost).toEqual(["expired", "finished", "adopted", "ended", "never"]);
    // Renewing took nothing back and revived nothing.
    expect((await b.store.get("kept"))?.runner).toBe(a.id);
    expect((await b.store.get("adopted"))?.runner).toBe(b.id);
    expect(await b.leases.runner("finished")).toBeUndefined();
    expect((await b.store.get("finished"))?.status).toBe("completed");
    expect((await b.store.get("ended"))?.status).toBe("failed");
    expect(await b.leases.runner("ended")).toBeUndefined();
    expect(await b.store.get("never")).toBeUndefined();
  });

  it("release drops only this replica's own leases", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    await create(a, record("t1"));
    await create(a, record("t2"));
    await create(a, record("t3"));
    expect(await b.leases.adopt("t2", a.id)).toBe(true);

    await a.leases.release(["t1", "t2"]);
    expect((await b.store.get("t1"))?.runner).toBeNull();
    expect((await b.store.get("t2"))?.runner).toBe(b.id);
    expect((await b.store.get("t3"))?.runner).toBe(a.id);
    // B cannot release A's lease.
    await b.leases.release(["t3"]);
    expect((await a.store.get("t3"))?.runner).toBe(a.id);
    // Releasing what nobody holds is harmless; a released task stays unfinished (a read or a sweep ends it).
    await a.leases.release(["t1", "never"]);
    expect((await a.store.get("t1"))?.status).toBe("working");
    expect(await a.leases.runner("never")).toBeUndefined();
  });
});

describe("RedisLeases: the lease ends with its task", () => {
  // TaskLeases.runner: "undefined when the lease lapsed, or the task is finished or unknown".
  it("runner() names nobody once the task expired (its TTL ran out while its lease still runs)", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    await create(a, record("expired", { ttlMs: 300 }));
    const gone = await pollUntil(
      () => a.store.get("expired"),
      (t) => t === undefined,
    );
    expect(gone).toBeUndefined();
    expect(await a.leases.renew(["expired"])).toEqual(["expired"]);
    expect(await a.leases.runner("expired")).toBeUndefined();
  });

  it("an update too large to keep is full: the task keeps its lease; the failure written instead ends it", async () => {
    const prefix = redis.freshPrefix();
    const maxBytes = taskBytes(stored(record("probe"))) * 4;
    const a = await replica(prefix, { maxBytes });
    const big = await create(a, record("big"));
    expect(await a.store.update(stored(after(big, { type: "progress", message: "x".repeat(maxBytes) })))).toBe("full");
    expect((await a.store.get("big"))?.runner).toBe(a.id);
    expect(await a.leases.runner("big")).toBe(a.id);
    const error = { code: -32603, message: "too large for the task store" };
    expect(await a.store.update(stored(after(big, { type: "fail", error, message: error.message })))).toBe("ok");
    expect(await a.leases.renew(["big"])).toEqual(["big"]);
    expect(await a.leases.runner("big")).toBeUndefined();
  });
});

describe("RedisLeases: keys", () => {
  // redis-store.ts: "every key here has a TTL"; store-contract checks it for the store without leases.
  it("with leases too, every key written for tasks expires by itself (an abandoned prefix leaves nothing behind)", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    await create(a, record("t1"));
    const t2 = await create(a, record("t2", { owner: "bob" }));
    expect(await a.store.update(stored(completed(t2)))).toBe("ok");
    expect(await a.leases.renew(["t1"])).toEqual([]);
    await create(b, record("t3"));
    expect(await a.leases.adopt("t3", b.id)).toBe(true);
    await b.store.stats();
    const keys = await redis.keys(prefix);
    expect(keys).toContain(redisKeys(prefix).leases);
    for (const key of keys) expect(await redis.client.pttl(key), key).toBeGreaterThan(0);
  });
});

describe("RedisLeases: lapsed()", () => {
  it("lists only the unfinished tasks whose lease deadline passed, at most `limit`", async () => {
    const prefix = redis.freshPrefix();
    // A clock the test moves: lapsed() compares it with the sweep deadlines.
    let t = Date.now();
    const now = (): number => t;
    const leaseMs = LONG_LEASE_MS;
    const a = await replica(prefix, { now, leaseMs });
    const b = await replica(prefix, { now, leaseMs });
    await create(a, record("l1"));
    await create(a, record("l2"));
    await create(a, record("renewed"));
    const done = await create(a, record("done"));
    expect(await a.store.update(stored(completed(done)))).toBe("ok");
    expect(await b.leases.lapsed(100)).toEqual([]);

    t += leaseMs / 2;
    expect(await a.leases.renew(["renewed"])).toEqual([]);
    await create(a, record("later"));
    expect(await b.leases.lapsed(100)).toEqual([]);

    // Past the first deadline: the two never renewed, not the renewed one, not the later one, not the finished one.
    t += leaseMs / 2 + 1;
    expect((await b.leases.lapsed(100)).sort()).toEqual(["l1", "l2"]);
    const one = await b.leases.lapsed(1);
    expect(one).toHaveLength(1);
    expect(["l1", "l2"]).toContain(one[0]);
    expect(await b.leases.lapsed(0)).toEqual([]);

    // Past every deadline.
    t += leaseMs;
    expect((await b.leases.lapsed(100)).sort()).toEqual(["l1", "l2", "later", "renewed"]);
    expect(await b.leases.lapsed(3)).toHaveLength(3);
  });

  it("a candidate that is gone or finished stops being one once endLapsed finds it so", async () => {
    const prefix = redis.freshPrefix();
    let t = Date.now();
    const now = (): number => t;
    const a = await replica(prefix, { now });
    const expired = await create(a, record("expired", { ttlMs: 300 }));
    const gone = await pollUntil(
      () => a.store.get("expired"),
      (x) => x === undefined,
    );
    expect(gone).toBeUndefined();
    t += 2 * LONG_LEASE_MS;
    expect(await a.leases.lapsed(100)).toEqual(["expired"]);
    expect(await a.leases.endLapsed(stored(runnerLost(expired)))).toBe(false);
    expect(await a.leases.lapsed(100)).toEqual([]);
    expect(await a.store.get("expired")).toBeUndefined();
  });
});

describe("RedisLeases: endLapsed", () => {
  it("two replicas racing to end the same lapsed tasks: exactly one wins each, and the counters are settled once", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, { leaseMs: SHORT_LEASE_MS });
    const b = await replica(prefix);
    const c = await replica(prefix);
    const oneEach: CreateLimits = { maxTasks: 100, maxTasksPerCaller: 1 };
    const owners = ["alice", "bob", "carol", "dave", "erin"];
    const tasks = await Promise.all(owners.map((owner, i) => create(a, record(`race-${i}`, { owner }), oneEach)));
    // Each owner's one slot is taken.
    expect(await b.store.create(stored(record("blocked", { owner: "alice" })), oneEach)).toEqual({
      ok: false,
      refusal: "max_tasks_per_caller",
    });
    const before = await b.store.stats();
    expect(before.unfinished).toBe(5);
    expect(before.bytes).toBe(tasks.reduce((sum, r) => sum + taskBytes(stored(r)), 0));

    for (const r of tasks) await lapse(b, r.taskId);
    const byB = tasks.map((r) => stored(runnerLost(r, "ended by B")));
    const byC = tasks.map((r) => stored(runnerLost(r, "ended by C")));
    const outcomes = await Promise.all(
      tasks.map((_, i) =>
        Promise.all([b.leases.endLapsed(byB[i] as StoredTask), c.leases.endLapsed(byC[i] as StoredTask)]),
      ),
    );

    const winners: StoredTask[] = [];
    for (const [i, [wonB, wonC]] of outcomes.entries()) {
      expect(wonB !== wonC, `task ${i}: exactly one of the two ends it`).toBe(true);
      const winner = (wonB ? byB[i] : byC[i]) as StoredTask;
      winners.push(winner);
      const now = await a.store.get(winner.record.taskId);
      expect(now?.status).toBe("failed");
      expect(now?.json).toBe(winner.json);
      expect(now?.runner).toBeUndefined();
      expect(now?.record.error).toMatchObject({ code: -32603, data: { reason: "runner_lost" } });
    }
    // Settled exactly once: no unfinished task left, the bytes those of the failed versions.
    const settled = await c.store.stats();
    expect(settled).toEqual({ stored: 5, unfinished: 0, bytes: winners.reduce((sum, s) => sum + taskBytes(s), 0) });
    // Each owner's slot is free again, for any replica.
    expect(await b.store.create(stored(record("next", { owner: "alice" })), oneEach)).toEqual({ ok: true });
    expect(await b.leases.lapsed(100)).toEqual([]);
    // The ended tasks are final; their old runner hears it on its next renewal.
    expect(await a.store.update(stored(completed(tasks[0] as TaskRecord)))).toBe("final");
    expect(await a.leases.renew(tasks.map((r) => r.taskId))).toEqual(tasks.map((r) => r.taskId));
    // Ending again changes nothing.
    expect(await c.leases.endLapsed(stored(runnerLost(tasks[0] as TaskRecord, "again")))).toBe(false);
    expect((await c.store.get("race-0"))?.json).toBe(winners[0]?.json);
    expect(await c.store.stats()).toEqual({
      ...settled,
      stored: 6,
      unfinished: 1,
      bytes: settled.bytes + taskBytes(stored(record("next", { owner: "alice" }))),
    });
  });

  it("a task whose lease is held is not ended, and nothing changes", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const t = await create(a, record("held"));
    const statsBefore = await b.store.stats();
    expect(await b.leases.endLapsed(stored(runnerLost(t)))).toBe(false);
    const now = await b.store.get("held");
    expect(now?.status).toBe("working");
    expect(now?.json).toBe(stored(t).json);
    expect(now?.runner).toBe(a.id);
    expect(await b.store.stats()).toEqual(statsBefore);
    expect(await redis.client.zscore(redisKeys(prefix).leases, "held")).not.toBeNull();
    expect(await a.leases.renew(["held"])).toEqual([]);
  });

  it("a finished or missing task is not ended", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const t = await create(a, record("done"));
    const done = completed(t);
    expect(await a.store.update(stored(done))).toBe("ok");
    const statsBefore = await b.store.stats();
    expect(await b.leases.endLapsed(stored(runnerLost(t)))).toBe(false);
    expect((await b.store.get("done"))?.json).toBe(stored(done).json);
    expect(await b.store.stats()).toEqual(statsBefore);

    expect(await b.leases.endLapsed(stored(runnerLost(record("missing"))))).toBe(false);
    expect(await b.store.get("missing")).toBeUndefined();
    const keys = await redis.keys(prefix);
    expect(keys.filter((k) => k.includes("missing"))).toEqual([]);
    expect(await b.store.stats()).toEqual(statsBefore);
  });
});

describe("RedisLeases: adopt", () => {
  it("takes the lease `from` hands on, and the old holder's renew reports it lost", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const c = await replica(prefix);
    await create(a, record("t1"));
    expect(await b.leases.adopt("t1", a.id)).toBe(true);
    expect((await c.store.get("t1"))?.runner).toBe(b.id);
    expect(await a.leases.renew(["t1"])).toEqual(["t1"]);
    expect((await c.store.get("t1"))?.runner).toBe(b.id);
    expect(await b.leases.renew(["t1"])).toEqual([]);
    // The old holder can no longer release it either.
    await a.leases.release(["t1"]);
    expect((await c.store.get("t1"))?.runner).toBe(b.id);
    // A third replica cannot take it: B holds it, not A (nor anyone else named).
    expect(await c.leases.adopt("t1", a.id)).toBe(false);
    expect(await c.leases.adopt("t1", "someone-else")).toBe(false);
    expect((await c.store.get("t1"))?.runner).toBe(b.id);
    // Adopting what one already holds keeps it.
    expect(await b.leases.adopt("t1", "whoever")).toBe(true);
    expect((await c.store.get("t1"))?.runner).toBe(b.id);
    // The adopter's sweep deadline is the task's now.
    const deadline = Number(await redis.client.zscore(redisKeys(prefix).leases, "t1"));
    expect(deadline).toBeGreaterThan(Date.now());
  });

  it("takes a lapsed lease, whoever it was from", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, { leaseMs: SHORT_LEASE_MS });
    const c = await replica(prefix);
    await create(a, record("t2"));
    await lapse(c, "t2");
    expect(await c.leases.adopt("t2", "a-replica-long-gone")).toBe(true);
    expect((await a.store.get("t2"))?.runner).toBe(c.id);
    expect(await a.leases.renew(["t2"])).toEqual(["t2"]);
  });

  it("fails for a finished or unknown task, and takes no lease", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const t = await create(a, record("done"));
    expect(await a.store.update(stored(completed(t)))).toBe("ok");
    expect(await b.leases.adopt("done", a.id)).toBe(false);
    expect(await b.leases.runner("done")).toBeUndefined();
    expect(await b.leases.adopt("nope", a.id)).toBe(false);
    expect(await b.leases.runner("nope")).toBeUndefined();
    expect((await redis.keys(prefix)).filter((k) => k.includes("nope"))).toEqual([]);
  });
});

describe("RedisLeases: the replica registry and the shared secret", () => {
  it("a registered address is visible to other replicas, kept while its replica lives, and removed by close()", async () => {
    const prefix = redis.freshPrefix();
    const leaseMs = 1_000;
    const a = await replica(prefix, { leaseMs });
    const b = await replica(prefix);
    expect(await b.leases.addressOf(a.id)).toBeUndefined();
    await a.leases.register("http://10.0.0.7:7001");
    expect(await b.leases.addressOf(a.id)).toBe("http://10.0.0.7:7001");
    expect(await b.leases.addressOf(b.id)).toBeUndefined();
    // Registering again replaces the address.
    await a.leases.register("http://10.0.0.7:7002");
    expect(await b.leases.addressOf(a.id)).toBe("http://10.0.0.7:7002");
    const pttl = await redis.client.pttl(redisKeys(prefix).replica(a.id));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(leaseMs);
    // Kept registered (it renews itself) for well over two lease lengths.
    const seen = new Set<string | undefined>();
    const until = Date.now() + 2.5 * leaseMs;
    while (Date.now() < until) {
      seen.add(await b.leases.addressOf(a.id));
      await sleep(100);
    }
    expect([...seen]).toEqual(["http://10.0.0.7:7002"]);
    await a.leases.close();
    expect(await b.leases.addressOf(a.id)).toBeUndefined();
    await a.leases.close();
  });

  it("the address of a replica that stopped renewing (crashed, lost its connection) expires", async () => {
    const prefix = redis.freshPrefix();
    const b = await replica(prefix);
    const doomed = await redis.connect();
    const crashed = new RedisLeases({ client: doomed, prefix, leaseMs: SHORT_LEASE_MS, now: Date.now });
    opened.push(() => crashed.close());
    await crashed.register("http://10.0.0.9:7001");
    expect(await b.leases.addressOf(crashed.replicaId)).toBe("http://10.0.0.9:7001");
    doomed.disconnect();
    const gone = await pollUntil(
      () => b.leases.addressOf(crashed.replicaId),
      (addr) => addr === undefined,
    );
    expect(gone).toBeUndefined();
  });

  it("sharedSecret: every replica on a prefix agrees on one 32-byte key; another prefix or name has another", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const [ka, kb] = await Promise.all([
      a.leases.sharedSecret("request-state"),
      b.leases.sharedSecret("request-state"),
    ]);
    expect(ka).toHaveLength(32);
    expect(kb.equals(ka)).toBe(true);
    expect((await a.leases.sharedSecret("request-state")).equals(ka)).toBe(true);
    const other = await a.leases.sharedSecret("another-name");
    expect(other).toHaveLength(32);
    expect(other.equals(ka)).toBe(false);
    const elsewhere = await replica(redis.freshPrefix());
    const ke = await elsewhere.leases.sharedSecret("request-state");
    expect(ke).toHaveLength(32);
    expect(ke.equals(ka)).toBe(false);
  });
});

// ---- LocalLeases (one process, the memory store) ----

describe("LocalLeases", () => {
  it("runs every unfinished task itself: runner is its own id, nothing lapses, nothing is adopted or forwarded", async () => {
    const store = new MemoryTaskStore(STORE_BYTES, Date.now);
    const leases: TaskLeases = new LocalLeases(store);
    expect(leases.replicaId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new LocalLeases(store).replicaId).not.toBe(leases.replicaId);
    const w = record("working");
    const d = record("done");
    expect(await store.create(stored(w), ROOMY)).toEqual({ ok: true });
    expect(await store.create(stored(d), ROOMY)).toEqual({ ok: true });
    expect(await store.update(stored(completed(d)))).toBe("ok");

    expect(await leases.runner("working")).toBe(leases.replicaId);
    expect(await leases.runner("done")).toBeUndefined();
    expect(await leases.runner("never")).toBeUndefined();
    // The memory store has no leases: a task read from it names no runner.
    expect((await store.get("working"))?.runner).toBeUndefined();

    expect(await leases.renew(["working", "done", "never"])).toEqual(["done", "never"]);
    await leases.release(["working"]);
    expect(await leases.runner("working")).toBe(leases.replicaId);
    expect(await leases.lapsed(100)).toEqual([]);
    expect(await leases.endLapsed(stored(runnerLost(w)))).toBe(false);
    expect((await store.get("working"))?.status).toBe("working");
    expect(await leases.adopt("working", "another")).toBe(false);
    await leases.register("http://127.0.0.1:7001");
    expect(await leases.addressOf(leases.replicaId)).toBeUndefined();
    await store.close();
  });
});

// ---- the engine on Redis, end to end in one process ----

const LIMITS: TaskLimits = { maxTasks: 100, maxTasksPerCaller: 10, maxResultBytes: 64 * 1024 };
const log = createLogger("silent");
/** No sweep unless the test calls it. */
const NO_SWEEP_MS = 3_600_000;

interface EngineReplica {
  id: string;
  engine: TaskEngine;
  store: RedisTaskStore;
  leases: RedisLeases;
  /** Stops the engine (its timers, its push connection); idempotent. */
  close(): Promise<void>;
}

/**
 * A gateway replica's task half: its own connections (commands, and push), leases,
 * a leased store and pub/sub push, and an engine over them. Without `timing` the
 * engine neither renews nor sweeps: a replica that stopped.
 */
async function engineReplica(prefix: string, leaseMs: number, timing?: LeaseTiming): Promise<EngineReplica> {
  const client = await redis.connect();
  const subscriber = await redis.connect();
  const leases = new RedisLeases({ client, prefix, leaseMs, now: Date.now });
  const store = new RedisTaskStore({
    client,
    prefix,
    maxBytes: STORE_BYTES,
    now: Date.now,
    lease: { replicaId: leases.replicaId, leaseMs },
  });
  const events = new RedisTaskEvents(client, subscriber, prefix);
  const engine = new TaskEngine({ store, leases, events, limits: LIMITS, now: Date.now, log, timing });
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await engine.close();
      await leases.close();
    })());
  opened.push(close);
  return { id: leases.replicaId, engine, store, leases, close };
}

async function started(r: EngineReplica, owner = "alice", runtime: TaskRuntime = fakeRuntime()): Promise<TaskRecord> {
  const out = await r.engine.create(owner, 10 * 60_000, 500, runtime);
  if (!out.ok) throw new Error(`create refused: ${out.reason}`);
  return out.task;
}

const parsed = (detailed: string): JsonObject => JSON.parse(detailed) as JsonObject;

describe("TaskEngine on Redis: replicas sharing tasks", () => {
  it("a task one engine runs is visible to another, whose tasks/update and tasks/cancel go to its runner", async () => {
    const prefix = redis.freshPrefix();
    const timing = { leaseMs: LONG_LEASE_MS, sweepIntervalMs: NO_SWEEP_MS };
    const a = await engineReplica(prefix, LONG_LEASE_MS, timing);
    const b = await engineReplica(prefix, LONG_LEASE_MS, timing);
    const runtime = fakeRuntime();
    const t = await started(a, "alice", runtime);

    const seen = await b.engine.get(t.taskId, "alice");
    expect(seen?.status).toBe("working");
    expect(seen?.runner).toBe(a.id);
    expect(seen?.record).toEqual(t);
    // Another caller's task looks unknown.
    expect(await b.engine.get(t.taskId, "mallory")).toBeUndefined();
    expect(await b.engine.update(t.taskId, "mallory", {})).toEqual({ kind: "unknown" });

    expect(await b.engine.update(t.taskId, "alice", { "input-1": { action: "accept" } })).toEqual({
      kind: "elsewhere",
      runner: a.id,
    });
    expect(await b.engine.cancel(t.taskId, "alice")).toEqual({ kind: "elsewhere", runner: a.id });
    // Nothing was applied or delivered here.
    expect(runtime.answers).toEqual([]);
    expect(runtime.cancels).toEqual([]);
    expect((await b.store.get(t.taskId))?.status).toBe("working");
    expect(b.engine.runningHere).toBe(0);
    expect(a.engine.runningHere).toBe(1);

    // On its runner the cancel applies, and every replica sees the outcome.
    expect(await a.engine.cancel(t.taskId, "alice")).toEqual({ kind: "done" });
    expect(runtime.cancels).toEqual(["cancelled by the client"]);
    const cancelled = await b.engine.get(t.taskId, "alice");
    expect(cancelled?.status).toBe("cancelled");
    expect(cancelled?.runner).toBeUndefined();
    expect(await b.engine.cancel(t.taskId, "alice")).toEqual({ kind: "done" });
    expect((await b.store.stats()).unfinished).toBe(0);
  });

  it("a watcher on one engine hears the changes the running engine makes", async () => {
    const prefix = redis.freshPrefix();
    const a = await engineReplica(prefix, LONG_LEASE_MS);
    const b = await engineReplica(prefix, LONG_LEASE_MS);
    const t = await started(a);
    const heard: string[] = [];
    const unwatch = await b.engine.watch(t.taskId, (d) => heard.push(d));

    expect((await a.engine.apply(t.taskId, { type: "progress", message: "halfway" }))?.statusMessage).toBe("halfway");
    expect(
      (
        await a.engine.apply(t.taskId, {
          type: "complete",
          result: { content: [{ type: "text", text: "ok" }], isError: false },
        })
      )?.status,
    ).toBe("completed");
    const got = await pollUntil(
      async () => heard,
      (h) => h.length >= 2,
    );
    const pushes = got.map(parsed);
    expect(pushes.map((p) => p.status)).toEqual(["working", "completed"]);
    expect(pushes[0]).toMatchObject({ taskId: t.taskId, statusMessage: "halfway" });
    expect(pushes[1]).toMatchObject({
      taskId: t.taskId,
      result: { content: [{ type: "text", text: "ok" }], isError: false },
    });
    // The DetailedTask, not the tasks/get result.
    for (const p of pushes) expect(p).not.toHaveProperty("resultType");
    // What was pushed is what the store now holds.
    expect(`{"resultType":"complete",${(got[1] as string).slice(1)}`).toBe((await b.store.get(t.taskId))?.json);
    unwatch();
  });

  it("a running engine keeps its lease; once it stops, a read on another engine ends the task failed (runner_lost)", async () => {
    const prefix = redis.freshPrefix();
    const leaseMs = 1_200;
    const a = await engineReplica(prefix, leaseMs, { leaseMs, sweepIntervalMs: NO_SWEEP_MS });
    const b = await engineReplica(prefix, LONG_LEASE_MS);
    const runtime = fakeRuntime();
    const t = await started(a, "alice", runtime);
    const heard: string[] = [];
    const unwatch = await b.engine.watch(t.taskId, (d) => heard.push(d));

    // A renews on its own (every third of the lease): well over two lease lengths, it still runs the task.
    const runners = new Set<string | null | undefined>();
    const until = Date.now() + 2.5 * leaseMs;
    while (Date.now() < until) {
      runners.add((await b.engine.get(t.taskId, "alice"))?.runner);
      await sleep(100);
    }
    expect([...runners]).toEqual([a.id]);

    // A stops (no more renewal); the lease lapses, and the next read ends the task.
    await a.close();
    const ended = await pollUntil(
      () => b.engine.get(t.taskId, "alice"),
      (x) => x?.status === "failed",
    );
    expect(ended?.status).toBe("failed");
    expect(ended?.runner).toBeUndefined();
    expect(ended?.record.error).toMatchObject({ code: -32603, data: { reason: "runner_lost" } });
    expect((await b.store.stats()).unfinished).toBe(0);
    expect(await b.engine.update(t.taskId, "alice", {})).toEqual({ kind: "done" });
    const pushed = await pollUntil(
      async () => heard.map(parsed),
      (h) => h.some((p) => p.status === "failed"),
    );
    expect(pushed.filter((p) => p.status === "failed")).toEqual([
      expect.objectContaining({
        taskId: t.taskId,
        error: expect.objectContaining({ data: { reason: "runner_lost" } }),
      }),
    ]);
    unwatch();
  });

  it("two engines reading a lapsed task at once end it once, and push the ending once", async () => {
    const prefix = redis.freshPrefix();
    const a = await engineReplica(prefix, SHORT_LEASE_MS); // never renews
    const b = await engineReplica(prefix, LONG_LEASE_MS);
    const c = await engineReplica(prefix, LONG_LEASE_MS);
    const t = await started(a);
    const heard: string[] = [];
    const unwatch = await b.engine.watch(t.taskId, (d) => heard.push(d));
    const lapsed = await pollUntil(
      () => b.store.get(t.taskId),
      (x) => x?.runner === null,
    );
    expect(lapsed?.runner).toBeNull();

    const [byB, byC] = await Promise.all([b.engine.get(t.taskId, "alice"), c.engine.get(t.taskId, "alice")]);
    expect(byB?.status).toBe("failed");
    expect(byC?.json).toBe(byB?.json);
    // Both ends published (if at all) before their reads answered; a marker published now arrives after them.
    await redis.client.publish(redisKeys(prefix).events(t.taskId), '{"marker":true}');
    const got = await pollUntil(
      async () => heard.map(parsed),
      (h) => h.some((p) => p.marker === true),
    );
    expect(got.filter((p) => p.status === "failed")).toHaveLength(1);
    expect((await c.store.stats()).unfinished).toBe(0);
    unwatch();
  });

  it("the sweep ends lapsed tasks nobody reads, and leaves the ones whose runner is alive", async () => {
    const prefix = redis.freshPrefix();
    const gone = await engineReplica(prefix, SHORT_LEASE_MS); // never renews
    const alive = await engineReplica(prefix, LONG_LEASE_MS, { leaseMs: LONG_LEASE_MS, sweepIntervalMs: NO_SWEEP_MS });
    const b = await engineReplica(prefix, LONG_LEASE_MS);
    const t1 = await started(gone, "alice");
    const t2 = await started(gone, "bob");
    const live = await started(alive, "carol");

    let ended = 0;
    const total = await pollUntil(
      async () => (ended += await b.engine.sweep()),
      (n) => n >= 2,
    );
    expect(total).toBe(2);
    for (const t of [t1, t2]) {
      const s = await b.store.get(t.taskId);
      expect(s?.status).toBe("failed");
      expect(s?.record.error).toMatchObject({ data: { reason: "runner_lost" } });
    }
    const stillLive = await b.store.get(live.taskId);
    expect(stillLive?.status).toBe("working");
    expect(stillLive?.runner).toBe(alive.id);
    expect((await b.store.stats()).unfinished).toBe(1);
    expect(await b.engine.sweep()).toBe(0);
  });

  it("a running engine whose lease another replica took stops the upstream call at its next renewal", async () => {
    const prefix = redis.freshPrefix();
    const leaseMs = 900;
    const a = await engineReplica(prefix, leaseMs, { leaseMs, sweepIntervalMs: NO_SWEEP_MS });
    const other = await replica(prefix);
    const runtime = fakeRuntime();
    const t = await started(a, "alice", runtime);
    expect(await other.leases.adopt(t.taskId, a.id)).toBe(true);
    const cancels = await pollUntil(
      async () => runtime.cancels,
      (c) => c.length > 0,
    );
    expect(cancels).toEqual(["task ended elsewhere"]);
    expect(a.engine.runningHere).toBe(0);
    // It writes nothing more: the task is as it was, now run by the adopter.
    expect(await a.engine.apply(t.taskId, { type: "progress", message: "late" })).toBeUndefined();
    const now = await other.store.get(t.taskId);
    expect(now?.runner).toBe(other.id);
    expect(now?.record).toEqual(t);
  });
});
