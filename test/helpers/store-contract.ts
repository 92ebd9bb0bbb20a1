// The TaskStore contract (src/store/task-store.ts) as a function, so the same tests run against every store and
// every Redis deployment: the in-memory store on a clock the test moves, and the Redis store on a single node
// (test/integration/store-contract.test.ts), on a Redis Cluster and behind Sentinel
// (test/integration/store-topologies.test.ts), with real (short) TTLs.
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import { RedisTaskStore } from "../../src/store/redis-store.js";
import type { RedisClient } from "../../src/store/redis-connect.js";
import { FINISH_RESERVE_BYTES, taskBytes } from "../../src/store/task-bytes.js";
import {
  storedTask,
  type CreateLimits,
  type CreateOutcome,
  type EvictionReason,
  type StoredTask,
  type TaskRecord,
  type TaskStatus,
  type TaskStore,
} from "../../src/store/task-store.js";
import { pollUntil } from "./poll.js";
import { taskRecord as record } from "./task-record.js";

// ---- tasks as the engine stores them ----

export const ROOMY: CreateLimits = { maxTasks: 1_000, maxTasksPerCaller: 1_000 };

/** The tasks/get result the engine stores beside a record (a DetailedTask with resultType "complete"). */
export function wireJson(r: TaskRecord): string {
  return JSON.stringify({
    resultType: "complete",
    taskId: r.taskId,
    status: r.status,
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ttlMs: r.ttlMs,
    pollIntervalMs: r.pollIntervalMs,
    ...(r.statusMessage !== undefined && { statusMessage: r.statusMessage }),
    ...(r.status === "input_required" && { inputRequests: r.inputRequests }),
    ...(r.status === "completed" && { result: r.result ?? {} }),
    ...(r.status === "failed" && { error: r.error ?? { code: -32603, message: "failed" } }),
  });
}

export const stored = (r: TaskRecord): StoredTask => storedTask(r, wireJson(r));

/** The next version of a task, as the engine would write it. */
export function next(r: TaskRecord, status: TaskStatus, extra: Partial<TaskRecord> = {}): TaskRecord {
  const base = { ...r, status, ...extra };
  if (status === "completed")
    return { result: { content: [{ type: "text", text: "done" }], isError: false }, ...base, inputRequests: {} };
  if (status === "failed") return { error: { code: -32603, message: "boom" }, ...base, inputRequests: {} };
  if (status === "input_required" && Object.keys(base.inputRequests).length === 0) {
    return { ...base, inputRequests: { q1: { method: "elicitation/create", params: { message: "Name?" } } } };
  }
  return base;
}

// ---- the two stores behind one harness ----

export interface Harness {
  /** A new store; a fresh, empty one each time (the Redis ones get their own prefix). */
  make(opts?: { maxBytes?: number; maxBytesPerCaller?: number }): Promise<TaskStore>;
  /** The store's clock. */
  now(): number;
  /** Lets time pass: the injected clock for memory, real time for Redis. */
  elapse(ms: number): Promise<void>;
  /** A TTL short enough to wait out. */
  shortTtlMs: number;
  closeAll(): Promise<void>;
}

export function memoryHarness(): Harness {
  let t = 1_767_225_600_000; // 2026-01-01T00:00:00Z
  const stores: TaskStore[] = [];
  return {
    make: ({ maxBytes = 16 * 1024 * 1024, maxBytesPerCaller } = {}) => {
      const store = new MemoryTaskStore(maxBytes, () => t, { maxBytesPerCaller });
      stores.push(store);
      return Promise.resolve(store);
    },
    now: () => t,
    elapse: (ms) => {
      t += ms;
      return Promise.resolve();
    },
    shortTtlMs: 1_000,
    closeAll: async () => {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
}

/** A harness of Redis stores on `client`, each with a fresh prefix from `freshPrefix`. */
export function redisHarness(client: () => RedisClient, freshPrefix: () => string): Harness {
  const stores: TaskStore[] = [];
  return {
    make: ({ maxBytes = 16 * 1024 * 1024, maxBytesPerCaller } = {}) => {
      const store = new RedisTaskStore({
        client: client(),
        prefix: freshPrefix(),
        maxBytes,
        maxBytesPerCaller,
        now: tickingClock(),
      });
      stores.push(store);
      return Promise.resolve(store);
    },
    now: Date.now,
    elapse: (ms) => sleep(ms),
    shortTtlMs: 300,
    closeAll: async () => {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
}

/**
 * Real time that never reads the same twice: each reading is at least 1 ms past
 * the one before, so uses (the Redis store's recency scores) are always ordered.
 */
export function tickingClock(): () => number {
  let last = 0;
  return () => (last = Math.max(Date.now(), last + 1));
}

export function recordDrops(store: TaskStore): Array<[string, EvictionReason]> {
  const drops: Array<[string, EvictionReason]> = [];
  store.onEvict((task, reason) => drops.push([task.taskId, reason]));
  return drops;
}

/** The contract's tests, for the stores `harness` makes. */
export function taskStoreContract(name: string, harness: () => Harness): void {
  describe(`TaskStore contract: ${name}`, () => {
    let h: Harness;

    beforeEach(() => {
      h = harness();
    });

    afterEach(async () => {
      await h.closeAll();
    });

    it("create then get returns the owner, status and json as stored, and the record parsed from the json", async () => {
      const store = await h.make();
      const r = record("t-1", h.now(), { owner: "owner-a", statusMessage: "starting" });
      expect(await store.create(stored(r), ROOMY)).toEqual({ ok: true });
      const got = await store.get("t-1");
      expect(got).toBeDefined();
      expect(got?.owner).toBe("owner-a");
      expect(got?.status).toBe("working");
      expect(got?.json).toBe(wireJson(r));
      expect(got?.record).toEqual(r);
    });

    it("a completed task round-trips with its result, multi-byte text included", async () => {
      const store = await h.make();
      const r = record("t-2", h.now());
      await store.create(stored(r), ROOMY);
      const done = next(r, "completed", { result: { content: [{ type: "text", text: "héllo 🚀" }], isError: false } });
      expect(await store.update(stored(done))).toBe("ok");
      const got = await store.get("t-2");
      expect(got?.status).toBe("completed");
      expect(got?.json).toBe(wireJson(done));
      expect(got?.record).toEqual(done);
    });

    it("a poll's read (getBytes, or getBytesNow in memory) is get's json as UTF-8 bytes, with its owner and status", async () => {
      const store = await h.make();
      const r = record("t-b", h.now(), { owner: "owner-b" });
      await store.create(stored(r), ROOMY);
      const done = next(r, "completed", { result: { content: [{ type: "text", text: "héllo 🚀" }], isError: false } });
      expect(await store.update(stored(done))).toBe("ok");
      const read = (id: string) => (store.getBytes ? store.getBytes(id) : Promise.resolve(store.getBytesNow?.(id)));
      const got = await read("t-b");
      expect(got?.owner).toBe("owner-b");
      expect(got?.status).toBe("completed");
      expect(got?.bytes.toString("utf8")).toBe(wireJson(done));
      expect(got?.runner).toBeUndefined();
      expect(await read("no-such-task")).toBeUndefined();
    });

    it("get of an unknown id is undefined", async () => {
      const store = await h.make();
      expect(await store.get("no-such-task")).toBeUndefined();
    });

    it("update replaces an unfinished task (ok), any number of times", async () => {
      const store = await h.make();
      const r = record("t-3", h.now());
      await store.create(stored(r), ROOMY);
      const asking = next(r, "input_required", { statusMessage: "Waiting for input from the client" });
      expect(await store.update(stored(asking))).toBe("ok");
      expect((await store.get("t-3"))?.record).toEqual(asking);
      const working = next(asking, "working", { inputRequests: {}, statusMessage: "Input received, working" });
      expect(await store.update(stored(working))).toBe("ok");
      const got = await store.get("t-3");
      expect(got?.status).toBe("working");
      expect(got?.json).toBe(wireJson(working));
    });

    it("update of a task the store does not hold is gone, and stores nothing", async () => {
      const store = await h.make();
      expect(await store.update(stored(record("ghost", h.now())))).toBe("gone");
      expect(await store.get("ghost")).toBeUndefined();
    });

    it("a terminal task never changes: later updates are final and the stored version stays", async () => {
      const store = await h.make();
      const r = record("t-4", h.now());
      await store.create(stored(r), ROOMY);
      const done = next(r, "completed");
      expect(await store.update(stored(done))).toBe("ok");
      expect(await store.update(stored(next(r, "failed")))).toBe("final");
      expect(await store.update(stored(next(r, "working", { statusMessage: "again" })))).toBe("final");
      expect(await store.update(stored(next(r, "cancelled")))).toBe("final");
      const got = await store.get("t-4");
      expect(got?.status).toBe("completed");
      expect(got?.json).toBe(wireJson(done));
    });

    it("the TTL counts from creation: a task is there right after an update, updates never extend it, then it is gone", async () => {
      const store = await h.make();
      const ttl = h.shortTtlMs;
      const r = record("t-5", h.now(), { ttlMs: ttl });
      await store.create(stored(r), ROOMY);
      let version = next(r, "working", { statusMessage: "progress 0" });
      expect(await store.update(stored(version))).toBe("ok");
      expect(await store.get("t-5")).toBeDefined();
      // Keep updating every quarter TTL. Were updates to extend the TTL, this would go on
      // for the whole bound (ten TTLs); from creation, an update finds the task gone.
      const outcomes: string[] = [];
      for (let i = 1; i <= 40; i++) {
        await h.elapse(ttl / 4);
        version = next(version, "working", { statusMessage: `progress ${i}` });
        const outcome = await store.update(stored(version));
        outcomes.push(outcome);
        if (outcome === "gone") break;
      }
      expect(outcomes.at(-1)).toBe("gone");
      expect(outcomes.slice(0, -1).every((o) => o === "ok")).toBe(true);
      expect(await store.get("t-5")).toBeUndefined();
    });

    it("an unfinished task that expires is reported to onEvict as expired", async () => {
      const store = await h.make();
      const drops = recordDrops(store);
      await store.create(stored(record("t-6", h.now(), { ttlMs: h.shortTtlMs })), ROOMY);
      await h.elapse(h.shortTtlMs + 1);
      const seen = await pollUntil(
        async () => {
          await store.get("t-6");
          return drops;
        },
        (d) => d.length > 0,
      );
      expect(seen).toEqual([["t-6", "expired"]]);
      expect(await store.get("t-6")).toBeUndefined();
    });

    it("maxTasks: a create past the limit is refused, stores nothing, and finishing a task frees its slot", async () => {
      const store = await h.make();
      const limits = { maxTasks: 2, maxTasksPerCaller: 10 };
      const a = record("a", h.now(), { owner: "o1" });
      expect(await store.create(stored(a), limits)).toEqual({ ok: true });
      expect(await store.create(stored(record("b", h.now(), { owner: "o2" })), limits)).toEqual({ ok: true });
      expect(await store.create(stored(record("c", h.now(), { owner: "o3" })), limits)).toEqual({
        ok: false,
        refusal: "max_tasks",
      });
      expect(await store.get("c")).toBeUndefined();
      expect((await store.stats()).unfinished).toBe(2);
      // input_required is still unfinished.
      await store.update(stored(next(a, "input_required")));
      expect(await store.create(stored(record("c", h.now(), { owner: "o3" })), limits)).toEqual({
        ok: false,
        refusal: "max_tasks",
      });
      await store.update(stored(next(a, "completed")));
      expect(await store.create(stored(record("c", h.now(), { owner: "o3" })), limits)).toEqual({ ok: true });
      expect((await store.stats()).unfinished).toBe(2);
    });

    it("maxTasksPerCaller: counted per owner; other owners are not affected; a failed or cancelled task frees its slot", async () => {
      const store = await h.make();
      const limits = { maxTasks: 100, maxTasksPerCaller: 2 };
      const a1 = record("a1", h.now(), { owner: "alice" });
      const a2 = record("a2", h.now(), { owner: "alice" });
      expect(await store.create(stored(a1), limits)).toEqual({ ok: true });
      expect(await store.create(stored(a2), limits)).toEqual({ ok: true });
      expect(await store.create(stored(record("a3", h.now(), { owner: "alice" })), limits)).toEqual({
        ok: false,
        refusal: "max_tasks_per_caller",
      });
      expect(await store.create(stored(record("b1", h.now(), { owner: "bob" })), limits)).toEqual({ ok: true });
      await store.update(stored(next(a1, "failed")));
      expect(await store.create(stored(record("a3", h.now(), { owner: "alice" })), limits)).toEqual({ ok: true });
      await store.update(stored(next(a2, "cancelled", { statusMessage: "cancelled by the client" })));
      expect(await store.create(stored(record("a4", h.now(), { owner: "alice" })), limits)).toEqual({ ok: true });
      expect(await store.create(stored(record("a5", h.now(), { owner: "alice" })), limits)).toEqual({
        ok: false,
        refusal: "max_tasks_per_caller",
      });
    });

    it("an unfinished task that expired stops counting against the limits", async () => {
      const store = await h.make();
      const limits = { maxTasks: 10, maxTasksPerCaller: 1 };
      await store.create(stored(record("old", h.now(), { ttlMs: h.shortTtlMs })), limits);
      expect(await store.create(stored(record("new", h.now())), limits)).toEqual({
        ok: false,
        refusal: "max_tasks_per_caller",
      });
      await h.elapse(h.shortTtlMs + 1);
      const outcome = await pollUntil(
        () => store.create(stored(record("new", h.now())), limits),
        (o) => o.ok,
      );
      expect(outcome).toEqual({ ok: true });
    });

    it("concurrent creates are admitted exactly up to the limit, never beyond", async () => {
      const store = await h.make();
      const limits = { maxTasks: 5, maxTasksPerCaller: 100 };
      const ids = Array.from({ length: 20 }, (_, i) => `c${i}`);
      const outcomes = await Promise.all(
        ids.map((id) => store.create(stored(record(id, h.now(), { owner: `o${id}` })), limits)),
      );
      expect(outcomes.filter((o) => o.ok)).toHaveLength(5);
      expect(outcomes.filter((o) => !o.ok).every((o) => !o.ok && o.refusal === "max_tasks")).toBe(true);
      expect((await store.stats()).unfinished).toBe(5);
      const present = await Promise.all(ids.map((id) => store.get(id)));
      expect(present.filter((t) => t !== undefined)).toHaveLength(5);
    });

    it("a task larger than the whole byte budget is refused (store_full) and leaves no trace", async () => {
      const budget = 8 * 1024;
      const store = await h.make({ maxBytes: budget });
      await store.create(stored(record("small", h.now())), ROOMY);
      const before = await store.stats();
      const huge = record("huge", h.now(), { statusMessage: "x".repeat(budget) });
      expect(await store.create(stored(huge), ROOMY)).toEqual({ ok: false, refusal: "store_full" });
      expect(await store.get("huge")).toBeUndefined();
      expect(await store.get("small")).toBeDefined();
      expect(await store.stats()).toEqual(before);
    });

    it("an update larger than the whole budget is full: nothing changes, the task keeps its version and its slot", async () => {
      const budget = 8 * 1024;
      const store = await h.make({ maxBytes: budget });
      const drops = recordDrops(store);
      const limits = { maxTasks: 1, maxTasksPerCaller: 1 };
      const r = record("grows", h.now());
      await store.create(stored(r), limits);
      const before = await store.stats();
      const huge = next(r, "completed", { result: { content: [{ type: "text", text: "y".repeat(budget) }] } });
      expect(await store.update(stored(huge))).toBe("full");
      expect((await store.get("grows"))?.json).toBe(wireJson(r));
      expect(await store.stats()).toEqual(before);
      expect(await store.create(stored(record("after", h.now())), limits)).toEqual({ ok: false, refusal: "max_tasks" });
      expect(drops).toEqual([]);
    });

    it("stats: tasks held, their bytes (taskBytes of the latest versions) and the unfinished ones", async () => {
      const store = await h.make();
      expect(await store.stats()).toEqual({ stored: 0, bytes: 0, unfinished: 0 });
      const a = record("a", h.now());
      const b = record("b", h.now(), { owner: "bob" });
      await store.create(stored(a), ROOMY);
      await store.create(stored(b), ROOMY);
      expect(await store.stats()).toEqual({
        stored: 2,
        bytes: taskBytes(stored(a)) + taskBytes(stored(b)),
        unfinished: 2,
      });
      const done = next(a, "completed", { result: { content: [{ type: "text", text: "z".repeat(5_000) }] } });
      await store.update(stored(done));
      expect(await store.stats()).toEqual({
        stored: 2,
        bytes: taskBytes(stored(done)) + taskBytes(stored(b)),
        unfinished: 1,
      });
    });

    it("ping resolves while the store answers", async () => {
      const store = await h.make();
      await expect(store.ping()).resolves.toBeUndefined();
    });

    // ---- fair use of the byte budget (task-store.ts): two callers ----

    describe("fair use: quotas and eviction order under two callers", () => {
      const A = "caller-a";
      const B = "caller-b";
      const text = (bytes: number): TaskRecord["result"] => ({
        content: [{ type: "text", text: "r".repeat(bytes) }],
        isError: false,
      });
      const working = (id: string, owner: string): TaskRecord => record(id, h.now(), { owner });
      const finished = (r: TaskRecord, textBytes: number): TaskRecord =>
        next(r, "completed", { result: text(textBytes) });
      /** Bytes of a working task, and of it finished with `textBytes` of text (ids of the same length cost the same). */
      const W = (): number => taskBytes(stored(working("x1", A)));
      const F = (textBytes: number): number => taskBytes(stored(finished(working("x1", A), textBytes)));

      /** Creates a working task and, with textBytes, finishes it. */
      async function put(
        store: TaskStore,
        id: string,
        owner: string,
        textBytes?: number,
        limits: CreateLimits = ROOMY,
      ): Promise<TaskRecord> {
        const r = working(id, owner);
        expect(await store.create(stored(r), limits), id).toEqual({ ok: true });
        if (textBytes === undefined) return r;
        const done = finished(r, textBytes);
        expect(await store.update(stored(done)), id).toBe("ok");
        return done;
      }

      const ids = (drops: Array<[string, EvictionReason]>): string[] => drops.map(([id, reason]) => `${id}:${reason}`);

      it("maxBytesPerCaller: a caller past its quota loses only its own finished tasks, least recently used first", async () => {
        const quota = Math.floor(3.5 * F(1_000));
        const store = await h.make({ maxBytesPerCaller: quota });
        const drops = recordDrops(store);
        for (const id of ["a1", "a2", "a3"]) await put(store, id, A, 1_000);
        for (const id of ["b1", "b2", "b3"]) await put(store, id, B, 1_000);
        // A get is a use: a2 is now caller-a's least recently used task (b1 is older, but not caller-a's).
        expect((await store.get("a1"))?.status).toBe("completed");
        await put(store, "a4", A, 1_000);
        expect(ids(drops)).toEqual(["a2:evicted"]);
        expect(await store.get("a2")).toBeUndefined();
        for (const id of ["a1", "a3", "a4", "b1", "b2", "b3"])
          expect((await store.get(id))?.status, id).toBe("completed");
        // The gets just above were uses too, a1 first: it is now caller-a's least recently used.
        await put(store, "a5", A, 1_000);
        expect(ids(drops)).toEqual(["a2:evicted", "a1:evicted"]);
        expect((await store.stats()).bytes).toBe(6 * F(1_000));
      });

      it("maxBytesPerCaller: a caller whose unfinished tasks fill its quota is refused (max_bytes_per_caller); others are not", async () => {
        const store = await h.make({ maxBytesPerCaller: 2 * (W() + FINISH_RESERVE_BYTES) });
        const drops = recordDrops(store);
        await put(store, "a1", A);
        await put(store, "a2", A);
        const before = await store.stats();
        expect(await store.create(stored(working("a3", A)), ROOMY)).toEqual({
          ok: false,
          refusal: "max_bytes_per_caller",
        });
        expect(await store.get("a3")).toBeUndefined();
        expect(await store.stats()).toEqual(before);
        await put(store, "b1", B);
        await put(store, "b2", B);
        expect(drops).toEqual([]);
      });

      it("storeBytes: finished tasks go first, least recently used whoever's they are; unfinished ones are never evicted", async () => {
        const w = W();
        const f = F(1_000);
        const store = await h.make({ maxBytes: 2 * w + 3 * f - 1 });
        const drops = recordDrops(store);
        await put(store, "u1", A);
        await put(store, "f1", B, 1_000);
        await put(store, "f2", B, 1_000);
        await put(store, "f3", A, 1_000);
        expect(drops).toEqual([]);
        // A get is a use: the order is now f2, f3, f1.
        await store.get("f1");
        // caller-b's new task needs room: the least recently used finished task goes (its own, as it happens).
        const u2 = await put(store, "u2", B);
        expect(ids(drops)).toEqual(["f2:evicted"]);
        // Its result needs more: caller-a's f3 goes next, never caller-a's working u1.
        expect(await store.update(stored(finished(u2, 2_000)))).toBe("ok");
        expect(ids(drops)).toEqual(["f2:evicted", "f3:evicted"]);
        expect((await store.get("f1"))?.status).toBe("completed");
        // New unfinished tasks take what finished ones leave; then creation is refused, and no unfinished task is lost.
        const open = ["u1"];
        let refused: CreateOutcome | undefined;
        for (let i = 0; i < 30 && refused === undefined; i++) {
          const r = working(`v${String(i).padStart(2, "0")}`, i % 2 === 0 ? A : B);
          const outcome = await store.create(stored(r), ROOMY);
          if (outcome.ok) open.push(r.taskId);
          else refused = outcome;
        }
        expect(refused).toEqual({ ok: false, refusal: "store_full" });
        // Only finished tasks were evicted, in least recently used order.
        expect(["f2:evicted", "f3:evicted", "f1:evicted", "u2:evicted"].slice(0, drops.length)).toEqual(ids(drops));
        for (const id of open) expect((await store.get(id))?.status, id).toBe("working");
        expect((await store.stats()).bytes).toBeLessThanOrEqual(2 * w + 3 * f - 1);
      });

      it("an unfinished task is never evicted for another caller: the create is refused with store_full; a finished one makes room", async () => {
        const w = W();
        const store = await h.make({ maxBytes: 2 * (w + FINISH_RESERVE_BYTES) });
        const drops = recordDrops(store);
        const u1 = await put(store, "u1", A);
        await put(store, "u2", A);
        const before = await store.stats();
        expect(await store.create(stored(working("x1", B)), ROOMY)).toEqual({ ok: false, refusal: "store_full" });
        expect(await store.get("x1")).toBeUndefined();
        expect(await store.stats()).toEqual(before);
        expect(drops).toEqual([]);
        // u1 finishes with a result larger than two reserves (it still fits: its own reserve is freed).
        const textBytes = 2 * FINISH_RESERVE_BYTES + Math.floor(w / 2) - F(0);
        expect(await store.update(stored(finished(u1, textBytes)))).toBe("ok");
        // caller-b's task fits only once u1's result is evicted; u2, working, stays.
        await put(store, "x1", B);
        expect(ids(drops)).toEqual(["u1:evicted"]);
        expect((await store.get("u2"))?.status).toBe("working");
        expect((await store.get("x1"))?.status).toBe("working");
      });

      it("a result the store has no room for is full: the stored version stays, and a short failure still fits", async () => {
        const w = W();
        const store = await h.make({ maxBytes: 2 * (w + FINISH_RESERVE_BYTES) });
        const drops = recordDrops(store);
        const u1 = await put(store, "u1", A);
        await put(store, "u2", B);
        const before = await store.stats();
        expect(await store.update(stored(finished(u1, 3 * FINISH_RESERVE_BYTES)))).toBe("full");
        expect((await store.get("u1"))?.status).toBe("working");
        expect(await store.stats()).toEqual(before);
        // What the engine writes instead: a failure with a short message, well within the reserve.
        const message = `The task's result (${3 * FINISH_RESERVE_BYTES} bytes) is too large for the task store now (tasks.storeBytes, tasks.maxBytesPerCaller)`;
        const failed = next(u1, "failed", {
          statusMessage: message,
          error: { code: -32603, message, data: { reason: "result_too_large", bytes: 3_072 } },
        });
        expect(taskBytes(stored(failed)) - taskBytes(stored(u1))).toBeLessThanOrEqual(FINISH_RESERVE_BYTES);
        expect(await store.update(stored(failed))).toBe("ok");
        expect((await store.get("u1"))?.json).toBe(wireJson(failed));
        expect((await store.get("u2"))?.status).toBe("working");
        expect(drops).toEqual([]);
      });

      it("an unfinished task that grows past what finished tasks can free is full, and keeps its stored version", async () => {
        const w = W();
        const store = await h.make({
          maxBytes: 2 * (w + FINISH_RESERVE_BYTES) + 100,
          maxBytesPerCaller: 2 * (w + FINISH_RESERVE_BYTES) + 100,
        });
        const u1 = await put(store, "u1", A);
        await put(store, "u2", A);
        // Up to 100 bytes more fit; 101 do not.
        const grown = next(u1, "working", { statusMessage: "" });
        const room = 100 - (taskBytes(stored(grown)) - w);
        expect(await store.update(stored(next(u1, "working", { statusMessage: "g".repeat(room) })))).toBe("ok");
        expect(await store.update(stored(next(u1, "working", { statusMessage: "g".repeat(room + 1) })))).toBe("full");
        expect((await store.get("u1"))?.json).toBe(wireJson(next(u1, "working", { statusMessage: "g".repeat(room) })));
        // Shrinking always fits.
        expect(await store.update(stored(next(u1, "working", { statusMessage: "s" })))).toBe("ok");
      });
    });
  });
}
