// The task engine (src/tasks/engine.ts): durable creation, unguessable ids,
// caller binding, limits, result bounds, eviction and expiry reaching the
// upstream call, watchers, tasks/update and tasks/cancel semantics, tasks run
// by another replica, lapsed leases, a store that fails, drain and abandon.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { LocalTaskEvents } from "../../src/store/local-events.js";
import { LocalLeases } from "../../src/store/local-leases.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import { taskBytes } from "../../src/store/task-bytes.js";
import type { TaskLeases } from "../../src/store/task-leases.js";
import { storedTask, type StoredTask, type TaskStore } from "../../src/store/task-store.js";
import { TaskEngine, type TaskLimits } from "../../src/tasks/engine.js";
import { newTaskId } from "../../src/tasks/task-id.js";
import type { TaskRuntime } from "../../src/tasks/task-runtime.js";
import { detailedTask, taskResultJson, type TaskRecord } from "../../src/tasks/task.js";
import type { JsonObject } from "../../src/protocol/json.js";
import { fakeRuntime, type FakeRuntime } from "../helpers/fake-runtime.js";

const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const LIMITS: TaskLimits = { maxTasks: 100, maxTasksPerCaller: 10, maxResultBytes: 64 * 1024 };
const log = createLogger("silent");

const ELICIT = {
  method: "elicitation/create",
  params: {
    mode: "form",
    message: "Name?",
    requestedSchema: { type: "object", properties: { name: { type: "string" } } },
  },
};

interface Harness {
  engine: TaskEngine;
  store: MemoryTaskStore;
  advance(ms: number): void;
  now(): number;
}

/** An engine on `store` with this process's leases and push, no timers (no lease renewal, no sweep). */
function engineOn(
  store: TaskStore,
  limits: Partial<TaskLimits> = {},
  now: () => number = () => T0,
  leases: TaskLeases = new LocalLeases(store),
): TaskEngine {
  return new TaskEngine({ store, leases, events: new LocalTaskEvents(), limits: { ...LIMITS, ...limits }, now, log });
}

function harness(opts: { limits?: Partial<TaskLimits>; storeBytes?: number } = {}): Harness {
  let t = T0;
  const now = (): number => t;
  const store = new MemoryTaskStore(opts.storeBytes ?? 16 * 1024 * 1024, now);
  const engine = engineOn(store, opts.limits, now);
  return { engine, store, now, advance: (ms) => (t += ms) };
}

async function created(
  engine: TaskEngine,
  owner = "alice",
  runtime: TaskRuntime = fakeRuntime(),
  ttlMs = 60_000,
): Promise<TaskRecord> {
  const out = await engine.create(owner, ttlMs, 500, runtime);
  if (!out.ok) throw new Error(`create refused: ${out.reason}`);
  return out.task;
}

function textResult(bytes: number): JsonObject {
  return { content: [{ type: "text", text: "x".repeat(bytes) }], isError: false };
}

/** A store that delegates everything to `inner` except the methods given in `over`. */
function wrapStore(inner: TaskStore, over: Partial<TaskStore>): TaskStore {
  return {
    create: over.create ?? ((task, limits) => inner.create(task, limits)),
    get: over.get ?? ((id) => inner.get(id)),
    update: over.update ?? ((task) => inner.update(task)),
    onEvict: over.onEvict ?? ((listener) => inner.onEvict(listener)),
    stats: over.stats ?? (() => inner.stats()),
    ping: over.ping ?? (() => inner.ping()),
    close: over.close ?? (() => inner.close()),
  };
}

/** A pushed DetailedTask (the listener receives its JSON text). */
const parsed = (detailed: string): JsonObject => JSON.parse(detailed) as JsonObject;

/** One turn of the timer queue: lets pending async work run as far as it can. */
const nextTimerTurn = (): Promise<void> => new Promise((r) => setTimeout(r, 2));

describe("newTaskId", () => {
  it("is base64url of at least 128 random bits", () => {
    for (let i = 0; i < 100; i++) {
      const id = newTaskId();
      expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(Buffer.from(id, "base64url").length).toBeGreaterThanOrEqual(16);
    }
  });

  it("is unique across many draws", () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(newTaskId());
    expect(ids.size).toBe(20_000);
  });
});

describe("TaskEngine.create", () => {
  it("resolves only once the task is in the store (durable creation)", async () => {
    const inner = new MemoryTaskStore(1_000_000, () => T0);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const creates: StoredTask[] = [];
    const gated = wrapStore(inner, {
      create: async (task, limits) => {
        creates.push(task);
        await gate;
        return inner.create(task, limits);
      },
    });
    const engine = engineOn(gated);
    let resolved = false;
    const pending = engine.create("alice", 60_000, 500, fakeRuntime()).then((o) => {
      resolved = true;
      return o;
    });
    await nextTimerTurn();
    expect(creates).toHaveLength(1);
    expect(resolved).toBe(false);
    release();
    const out = await pending;
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect((await inner.get(out.task.taskId))?.record).toEqual(out.task);
  });

  it("creates a working task with ISO timestamps from the injected clock, ttlMs and pollIntervalMs", async () => {
    const h = harness();
    const out = await h.engine.create("alice", 120_000, 750, fakeRuntime());
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    const t = out.task;
    expect(t).toMatchObject({
      owner: "alice",
      status: "working",
      createdAt: new Date(T0).toISOString(),
      lastUpdatedAt: new Date(T0).toISOString(),
      ttlMs: 120_000,
      pollIntervalMs: 750,
      inputRequests: {},
    });
    expect(Buffer.from(t.taskId, "base64url").length).toBeGreaterThanOrEqual(16);
    const stored = await h.store.get(t.taskId);
    expect(stored?.record).toEqual(t);
    expect(stored).toMatchObject({ owner: "alice", status: "working", json: taskResultJson(t) });
    expect((await h.engine.get(t.taskId, "alice"))?.record).toEqual(t);
    expect(h.engine.runningHere).toBe(1);
    expect((await h.store.stats()).unfinished).toBe(1);
  });

  it("gives every task its own id", async () => {
    const h = harness({ limits: { maxTasks: 1_000, maxTasksPerCaller: 1_000 } });
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) ids.add((await created(h.engine)).taskId);
    expect(ids.size).toBe(200);
  });

  it("a store that fails to write leaves no unfinished task behind", async () => {
    const inner = new MemoryTaskStore(1_000_000, () => T0);
    // Fails the first write only; the store works again afterwards.
    let failures = 1;
    const flaky = wrapStore(inner, {
      create: (task, limits) =>
        failures-- > 0 ? Promise.reject(new Error("store unavailable")) : inner.create(task, limits),
    });
    const engine = engineOn(flaky, { maxTasksPerCaller: 1 });
    await expect(engine.create("alice", 60_000, 500, fakeRuntime())).rejects.toThrow(/store unavailable/);
    expect(engine.runningHere).toBe(0);
    expect((await inner.stats()).unfinished).toBe(0);
    // The failed attempt must not use up alice's quota (one task): her next create succeeds.
    expect((await engine.create("alice", 60_000, 500, fakeRuntime())).ok).toBe(true);
  });
});

describe("TaskEngine: limits", () => {
  it("per caller: refused past maxTasksPerCaller with a reason naming the setting; other callers unaffected", async () => {
    const h = harness({ limits: { maxTasksPerCaller: 2 } });
    await created(h.engine, "alice");
    await created(h.engine, "alice");
    const third = await h.engine.create("alice", 60_000, 500, fakeRuntime());
    expect(third.ok).toBe(false);
    if (third.ok) return;
    expect(third.reason).toMatch(/tasks\.maxTasksPerCaller/);
    expect(third.reason).toMatch(/\b2\b/);
    expect((await h.engine.create("bob", 60_000, 500, fakeRuntime())).ok).toBe(true);
    expect(h.engine.runningHere).toBe(3);
    expect((await h.store.stats()).unfinished).toBe(3);
  });

  it("overall: refused past maxTasks with a reason naming the setting", async () => {
    const h = harness({ limits: { maxTasks: 3, maxTasksPerCaller: 10 } });
    await created(h.engine, "a");
    await created(h.engine, "b");
    await created(h.engine, "c");
    const out = await h.engine.create("d", 60_000, 500, fakeRuntime());
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.reason).toMatch(/tasks\.maxTasks\b/);
    // Asking again changes nothing: the same refusal.
    expect(await h.engine.create("d", 60_000, 500, fakeRuntime())).toEqual({ ok: false, reason: out.reason });
  });

  it("a refused create stores nothing", async () => {
    const h = harness({ limits: { maxTasksPerCaller: 1 } });
    await created(h.engine, "alice");
    const before = await h.store.stats();
    expect((await h.engine.create("alice", 60_000, 500, fakeRuntime())).ok).toBe(false);
    expect(await h.store.stats()).toEqual(before);
    expect(h.engine.runningHere).toBe(1);
  });

  it("a task that finishes (any terminal state) frees its caller's slot; the record stays", async () => {
    const h = harness({ limits: { maxTasksPerCaller: 1 } });
    const a = await created(h.engine, "alice");
    expect((await h.engine.create("alice", 60_000, 500, fakeRuntime())).ok).toBe(false);
    await h.engine.apply(a.taskId, { type: "complete", result: textResult(10) });
    const probe = await h.engine.create("alice", 60_000, 500, fakeRuntime());
    expect(probe.ok).toBe(true);
    // The probe must not hold the slot the rest of the test uses.
    if (probe.ok) await h.engine.cancel(probe.task.taskId, "alice");
    const b = await created(h.engine, "alice");
    await h.engine.apply(b.taskId, { type: "fail", error: { code: -32603, message: "x" }, message: "failed" });
    const c = await created(h.engine, "alice");
    await h.engine.cancel(c.taskId, "alice");
    expect(h.engine.runningHere).toBe(0);
    expect((await h.store.stats()).unfinished).toBe(0);
    expect((await h.engine.get(a.taskId, "alice"))?.status).toBe("completed");
  });
});

describe("TaskEngine: caller binding", () => {
  it("another caller's task looks exactly like an unknown one", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: ELICIT });
    expect(await h.engine.get(t.taskId, "bob")).toBeUndefined();
    expect(await h.engine.get("no-such-task", "bob")).toBeUndefined();
    expect(await h.engine.update(t.taskId, "bob", { "input-1": { action: "accept" } })).toEqual({ kind: "unknown" });
    expect(await h.engine.update("no-such-task", "bob", {})).toEqual({ kind: "unknown" });
    expect(await h.engine.cancel(t.taskId, "bob")).toEqual({ kind: "unknown" });
    expect(await h.engine.cancel("no-such-task", "bob")).toEqual({ kind: "unknown" });
    // Nothing reached the upstream, and the task is untouched for its owner.
    expect(rt.answers).toEqual([]);
    expect(rt.cancels).toEqual([]);
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("input_required");
  });
});

describe("TaskEngine.pollBytes", () => {
  it("gives the owner the stored bytes get() gives as text, at once; to anyone else the task is unknown", async () => {
    const h = harness();
    const t = await created(h.engine, "alice");
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(10) });
    const now = h.engine.pollBytes(t.taskId, "alice");
    if (now === undefined || now instanceof Promise) throw new Error("no bytes at once");
    expect(now.bytes.toString("utf8")).toBe((await h.engine.get(t.taskId, "alice"))?.json);
    expect(h.engine.pollBytes(t.taskId, "bob")).toBeUndefined();
    expect(h.engine.pollBytes("no-such-task", "alice")).toBeUndefined();
  });

  it("reads a store that cannot answer at once (a shared store) through a promise, with the same binding", async () => {
    const inner = new MemoryTaskStore(1024 * 1024, () => T0);
    const engine = engineOn(wrapStore(inner, {}));
    const t = await created(engine, "alice");
    const later = engine.pollBytes(t.taskId, "alice");
    expect(later).toBeInstanceOf(Promise);
    expect((await later)?.bytes.toString("utf8")).toBe((await engine.get(t.taskId, "alice"))?.json);
    expect(await engine.pollBytes(t.taskId, "bob")).toBeUndefined();
  });

  it("leaves an unfinished task whose lease lapsed to get(), which ends it", async () => {
    const inner = new MemoryTaskStore(1024 * 1024, () => T0);
    const lapsed: Partial<TaskStore> = {
      getBytes: async (id) => {
        const task = await inner.get(id);
        return task && { owner: task.owner, status: task.status, bytes: Buffer.from(task.json), runner: null };
      },
    };
    const engine = engineOn({ ...wrapStore(inner, {}), ...lapsed });
    const t = await created(engine, "alice");
    expect(await engine.pollBytes(t.taskId, "alice")).toBeUndefined();
  });
});

describe("TaskEngine.apply", () => {
  it("returns undefined for an unknown task", async () => {
    const h = harness();
    expect(await h.engine.apply("nope", { type: "progress", message: "x" })).toBeUndefined();
  });

  it("stamps lastUpdatedAt from the injected clock", async () => {
    const h = harness();
    const t = await created(h.engine);
    h.advance(1_234);
    const next = await h.engine.apply(t.taskId, { type: "progress", message: "progress 1/2" });
    expect(next?.lastUpdatedAt).toBe(new Date(T0 + 1_234).toISOString());
    expect(next?.createdAt).toBe(new Date(T0).toISOString());
  });

  it("applies concurrent changes in order", async () => {
    const h = harness();
    const t = await created(h.engine);
    await Promise.all([
      h.engine.apply(t.taskId, { type: "progress", message: "progress 1/3" }),
      h.engine.apply(t.taskId, { type: "progress", message: "progress 2/3" }),
      h.engine.apply(t.taskId, { type: "input", key: "input-1", request: ELICIT }),
      h.engine.apply(t.taskId, { type: "progress", message: "progress 3/3" }),
      h.engine.apply(t.taskId, { type: "complete", result: textResult(3) }),
      h.engine.apply(t.taskId, { type: "progress", message: "too late" }),
    ]);
    const final = await h.engine.get(t.taskId, "alice");
    expect(final?.status).toBe("completed");
    expect(final?.record.result).toEqual(textResult(3));
  });

  it("a result within maxResultBytes completes the task with it inlined", async () => {
    const h = harness({ limits: { maxResultBytes: 2_000 } });
    const t = await created(h.engine);
    const result = textResult(1_000);
    const next = await h.engine.apply(t.taskId, { type: "complete", result });
    expect(next?.status).toBe("completed");
    expect(next?.result).toEqual(result);
  });

  it("a result past maxResultBytes fails the task with result_too_large, and the result is not kept", async () => {
    const h = harness({ limits: { maxResultBytes: 2_000 } });
    const t = await created(h.engine);
    const next = await h.engine.apply(t.taskId, { type: "complete", result: textResult(5_000) });
    expect(next?.status).toBe("failed");
    expect(next?.result).toBeUndefined();
    expect(next?.error).toMatchObject({ code: -32603, data: { reason: "result_too_large", limit: 2_000 } });
    expect(next?.error?.message).toMatch(/maxResultBytes/);
    expect(next?.statusMessage).toMatch(/maxResultBytes/);
    const stored = await h.store.get(t.taskId);
    expect(stored?.status).toBe("failed");
    expect(stored?.record.result).toBeUndefined();
    expect(h.engine.runningHere).toBe(0);
    expect((await h.store.stats()).unfinished).toBe(0);
  });

  it("an error past maxResultBytes is not buffered whole (tasks.maxResultBytes covers results and errors)", async () => {
    const h = harness({ limits: { maxResultBytes: 2_000 } });
    const t = await created(h.engine);
    const huge = { code: -32603, message: "upstream exploded", data: { dump: "z".repeat(10_000) } };
    const next = await h.engine.apply(t.taskId, {
      type: "fail",
      error: huge,
      message: "The call failed: upstream exploded",
    });
    expect(next?.status).toBe("failed");
    expect(Buffer.byteLength(JSON.stringify(next?.error))).toBeLessThanOrEqual(2_000);
    expect(next?.error?.code).toBe(-32603);
  });

  it("a change that makes the record too big for the whole store does not orphan the upstream call", async () => {
    // The store budget is smaller than one input request: the record cannot be stored.
    const h = harness({ storeBytes: 4_096, limits: { maxResultBytes: 1_000 } });
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const huge = {
      method: "elicitation/create",
      params: { mode: "form", message: "x".repeat(8_000), requestedSchema: { type: "object" } },
    };
    await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: huge });
    const now = await h.engine.get(t.taskId, "alice");
    // Either the task is still there (in some state the client can see), or it is gone and its upstream call was stopped.
    if (now === undefined) {
      expect(rt.cancels).toHaveLength(1);
      expect(h.engine.runningHere).toBe(0);
    } else {
      expect(["input_required", "failed"]).toContain(now.status);
    }
  });
});

describe("TaskEngine: eviction and expiry reach the upstream call", () => {
  it("a working task is never evicted at the byte budget: other callers' finished tasks go, its call runs on", async () => {
    const resultBytes = 4_000;
    const probe: TaskRecord = {
      taskId: newTaskId(),
      owner: "bob",
      status: "completed",
      createdAt: new Date(T0).toISOString(),
      lastUpdatedAt: new Date(T0).toISOString(),
      ttlMs: 60_000,
      pollIntervalMs: 500,
      inputRequests: {},
      result: textResult(resultBytes),
    };
    const budget = taskBytes(storedTask(probe, taskResultJson(probe))) * 4;
    const h = harness({ storeBytes: budget, limits: { maxResultBytes: resultBytes * 2, maxTasksPerCaller: 100 } });
    const rt = fakeRuntime();
    const keeper = await created(h.engine, "alice", rt);
    const bobs: string[] = [];
    for (let i = 0; i < 6; i++) {
      const t = await created(h.engine, "bob");
      await h.engine.apply(t.taskId, { type: "complete", result: textResult(resultBytes) });
      bobs.push(t.taskId);
      expect((await h.store.stats()).bytes).toBeLessThanOrEqual(budget);
    }
    expect((await h.engine.get(keeper.taskId, "alice"))?.status).toBe("working");
    expect(rt.cancels).toEqual([]);
    expect(h.engine.runningHere).toBe(1);
    // bob's oldest results made room for his newest.
    expect(await h.engine.get(bobs[0] as string, "bob")).toBeUndefined();
    expect((await h.engine.get(bobs[5] as string, "bob"))?.status).toBe("completed");
  });

  it("a result the store has no room for ends the task failed (result_too_large), and that failure is stored", async () => {
    const h = harness({ storeBytes: 8 * 1024, limits: { maxResultBytes: 7 * 1024, maxTasksPerCaller: 100 } });
    // Three working tasks of bob's keep their bytes and reserves: alice's 6.9 KB result cannot get room.
    const others = [await created(h.engine, "bob"), await created(h.engine, "bob"), await created(h.engine, "bob")];
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const next = await h.engine.apply(t.taskId, { type: "complete", result: textResult(6_900) });
    expect(next?.status).toBe("failed");
    expect(next?.error).toMatchObject({ code: -32603, data: { reason: "result_too_large" } });
    expect(next?.error?.message).toMatch(
      /too large for the task store now \(tasks\.storeBytes, tasks\.maxBytesPerCaller\)/,
    );
    const stored = await h.engine.get(t.taskId, "alice");
    expect(stored?.status).toBe("failed");
    expect(stored?.record.result).toBeUndefined();
    // The call had ended by itself: nothing to cancel. The other callers' tasks are untouched.
    expect(rt.cancels).toEqual([]);
    for (const o of others) expect((await h.engine.get(o.taskId, "bob"))?.status).toBe("working");
    expect(h.engine.runningHere).toBe(3);
  });

  it("an input request the store has no room for fails the task and cancels its upstream call", async () => {
    const h = harness({ storeBytes: 4 * 1024, limits: { maxResultBytes: 1_000 } });
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const huge = {
      method: "elicitation/create",
      params: { mode: "form", message: "x".repeat(8_000), requestedSchema: { type: "object" } },
    };
    const next = await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: huge });
    expect(next?.status).toBe("failed");
    expect(next?.error).toMatchObject({ data: { reason: "store_full" } });
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("failed");
    expect(rt.cancels).toHaveLength(1);
    expect(h.engine.runningHere).toBe(0);
  });

  it("a progress message the store has no room for is skipped: the task runs on", async () => {
    const h = harness({ storeBytes: 4 * 1024 });
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const next = await h.engine.apply(t.taskId, { type: "progress", message: "p".repeat(8_000) });
    expect(next?.status).toBe("working");
    expect(next?.statusMessage).toBeUndefined();
    expect(rt.cancels).toEqual([]);
    expect((await h.engine.apply(t.taskId, { type: "complete", result: textResult(10) }))?.status).toBe("completed");
  });

  it("evicting a finished task cancels nothing", async () => {
    const budget = 8_192;
    const h = harness({ storeBytes: budget, limits: { maxResultBytes: 2_000, maxTasksPerCaller: 100 } });
    const rt = fakeRuntime();
    const first = await created(h.engine, "alice", rt);
    await h.engine.apply(first.taskId, { type: "complete", result: textResult(1_500) });
    for (let i = 0; i < 10; i++) {
      const t = await created(h.engine, "bob");
      await h.engine.apply(t.taskId, { type: "complete", result: textResult(1_500) });
    }
    expect(await h.engine.get(first.taskId, "alice")).toBeUndefined();
    expect(rt.cancels).toEqual([]);
  });

  it("a working task past its TTL (injected clock) is gone and its upstream call cancelled", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt, 1_000);
    h.advance(999);
    expect(await h.engine.get(t.taskId, "alice")).toBeDefined();
    h.advance(2);
    expect(await h.engine.get(t.taskId, "alice")).toBeUndefined();
    expect(rt.cancels).toHaveLength(1);
    expect(rt.cancels[0]).toMatch(/expired/);
    expect(h.engine.runningHere).toBe(0);
    expect((await h.store.stats()).unfinished).toBe(0);
    // Late upstream events for it change nothing.
    expect(await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) })).toBeUndefined();
  });

  it("updates do not extend a task's TTL", async () => {
    const h = harness();
    const t = await created(h.engine, "alice", fakeRuntime(), 1_000);
    h.advance(800);
    await h.engine.apply(t.taskId, { type: "progress", message: "progress 1/2" });
    h.advance(300);
    expect(await h.engine.get(t.taskId, "alice")).toBeUndefined();
  });
});

describe("TaskEngine.watch", () => {
  it("pushes the full DetailedTask on every change, and nothing for no-ops", async () => {
    const h = harness();
    const t = await created(h.engine);
    const texts: string[] = [];
    await h.engine.watch(t.taskId, (d) => texts.push(d));
    const snapshots: unknown[] = [];
    const storedJson: string[] = [];
    const step = async (e: Parameters<TaskEngine["apply"]>[1]): Promise<void> => {
      h.advance(10);
      const r = await h.engine.apply(t.taskId, e);
      if (!r) return;
      snapshots.push(detailedTask(r));
      const stored = await h.store.get(t.taskId);
      if (!stored) throw new Error("task left the store");
      storedJson.push(stored.json);
    };
    await step({ type: "progress", message: "progress 1/2" });
    await step({ type: "progress", message: "progress 1/2" }); // no change
    await step({ type: "input", key: "input-1", request: ELICIT });
    await step({ type: "answered", keys: ["nope"] }); // no change
    await step({ type: "answered", keys: ["input-1"] });
    await step({ type: "complete", result: textResult(5) });
    await step({ type: "progress", message: "late" }); // terminal: no change
    const pushed = texts.map(parsed);
    expect(pushed.map((d) => d.status)).toEqual(["working", "input_required", "working", "completed"]);
    expect(pushed[0]).toMatchObject({ taskId: t.taskId, statusMessage: "progress 1/2" });
    expect(pushed[1]).toMatchObject({ inputRequests: { "input-1": ELICIT } });
    expect(pushed[3]).toMatchObject({ result: textResult(5) });
    // Each push is exactly what tasks/get would have returned at that moment.
    expect(pushed).toEqual([snapshots[0], snapshots[2], snapshots[4], snapshots[5]]);
    // …and the stored tasks/get JSON without its resultType member, byte for byte.
    const asStored = [storedJson[0], storedJson[2], storedJson[4], storedJson[5]].map((json) => {
      if (json === undefined) throw new Error("missing snapshot");
      const { resultType, ...detailed } = JSON.parse(json) as JsonObject;
      expect(resultType).toBe("complete");
      return detailed;
    });
    expect(pushed).toEqual(asStored);
    expect(texts).toEqual(
      [storedJson[0], storedJson[2], storedJson[4], storedJson[5]].map((json) =>
        json?.replace('"resultType":"complete",', ""),
      ),
    );
    expect(new Set(pushed.map((d) => d.lastUpdatedAt)).size).toBe(4);
    for (const d of pushed) expect(d).not.toHaveProperty("owner");
  });

  it("each watcher gets every change; an unsubscribed watcher gets no more", async () => {
    const h = harness();
    const t = await created(h.engine);
    const a: unknown[] = [];
    const b: unknown[] = [];
    const stopA = await h.engine.watch(t.taskId, (d) => a.push(parsed(d).statusMessage));
    await h.engine.watch(t.taskId, (d) => b.push(parsed(d).statusMessage));
    await h.engine.apply(t.taskId, { type: "progress", message: "one" });
    stopA();
    await h.engine.apply(t.taskId, { type: "progress", message: "two" });
    expect(a).toEqual(["one"]);
    expect(b).toEqual(["one", "two"]);
  });

  it("watchers of one task hear nothing about another", async () => {
    const h = harness();
    const t1 = await created(h.engine);
    const t2 = await created(h.engine);
    const heard: unknown[] = [];
    await h.engine.watch(t1.taskId, (d) => heard.push(parsed(d).taskId));
    await h.engine.apply(t2.taskId, { type: "progress", message: "x" });
    await h.engine.apply(t1.taskId, { type: "progress", message: "y" });
    expect(heard).toEqual([t1.taskId]);
  });

  it("a cancel is pushed too", async () => {
    const h = harness();
    const t = await created(h.engine);
    const pushed: JsonObject[] = [];
    await h.engine.watch(t.taskId, (d) => pushed.push(parsed(d)));
    await h.engine.cancel(t.taskId, "alice");
    expect(pushed.map((d) => d.status)).toEqual(["cancelled"]);
  });
});

describe("TaskEngine.update", () => {
  async function waiting(h: Harness, rt: FakeRuntime, keys: string[]): Promise<TaskRecord> {
    const t = await created(h.engine, "alice", rt);
    for (const key of keys) await h.engine.apply(t.taskId, { type: "input", key, request: ELICIT });
    return t;
  }

  it("delivers known keys to the runtime with their values, then the task is working again", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    const answer = { action: "accept", content: { name: "Luca" } };
    expect(await h.engine.update(t.taskId, "alice", { "input-1": answer })).toEqual({ kind: "done" });
    expect(rt.answers).toEqual([["input-1", answer]]);
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("working");
    expect(after?.record.inputRequests).toEqual({});
  });

  it("ignores unknown keys: acknowledged, nothing delivered, nothing changed", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    const before = await h.engine.get(t.taskId, "alice");
    expect(before?.status).toBe("input_required");
    expect(await h.engine.update(t.taskId, "alice", { "input-99": { action: "accept" } })).toEqual({ kind: "done" });
    expect(rt.answers).toEqual([]);
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe(before?.status);
    expect(after?.json).toBe(before?.json);
  });

  it("delivers only the known keys of a mixed answer", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    await h.engine.update(t.taskId, "alice", { bogus: { action: "decline" }, "input-1": { action: "accept" } });
    expect(rt.answers).toEqual([["input-1", { action: "accept" }]]);
  });

  it("a partial answer keeps input_required with the rest outstanding", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1", "input-2"]);
    await h.engine.update(t.taskId, "alice", { "input-2": { action: "accept" } });
    const mid = await h.engine.get(t.taskId, "alice");
    expect(mid?.status).toBe("input_required");
    expect(Object.keys(mid?.record.inputRequests ?? {})).toEqual(["input-1"]);
    await h.engine.update(t.taskId, "alice", { "input-1": { action: "decline" } });
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("working");
    expect(rt.answers).toEqual([
      ["input-2", { action: "accept" }],
      ["input-1", { action: "decline" }],
    ]);
  });

  it("an already answered key is not delivered twice", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    await h.engine.update(t.taskId, "alice", { "input-1": { action: "accept" } });
    expect(await h.engine.update(t.taskId, "alice", { "input-1": { action: "decline" } })).toEqual({ kind: "done" });
    expect(rt.answers).toEqual([["input-1", { action: "accept" }]]);
  });

  it("an update for a finished task is acknowledged and does nothing", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect(await h.engine.update(t.taskId, "alice", { "input-1": { action: "accept" } })).toEqual({ kind: "done" });
    expect(rt.answers).toEqual([]);
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("completed");
  });

  it("an unknown task is unknown", async () => {
    const h = harness();
    expect(await h.engine.update("nope", "alice", {})).toEqual({ kind: "unknown" });
  });
});

describe("TaskEngine.cancel", () => {
  it("marks the task cancelled and stops the upstream call", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    h.advance(50);
    expect(await h.engine.cancel(t.taskId, "alice")).toEqual({ kind: "done" });
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("cancelled");
    expect(after?.record.lastUpdatedAt).toBe(new Date(T0 + 50).toISOString());
    expect(rt.cancels).toHaveLength(1);
    expect(h.engine.runningHere).toBe(0);
    expect((await h.store.stats()).unfinished).toBe(0);
  });

  it("cancels an input_required task too, dropping its input requests", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: ELICIT });
    await h.engine.cancel(t.taskId, "alice");
    const after = await h.engine.get(t.taskId, "alice");
    if (!after) throw new Error("task gone");
    expect(after.status).toBe("cancelled");
    expect(detailedTask(after.record)).not.toHaveProperty("inputRequests");
    expect(JSON.parse(after.json)).not.toHaveProperty("inputRequests");
    expect(rt.cancels).toHaveLength(1);
  });

  it("cancelling a finished task is acknowledged, changes nothing and reaches no upstream", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect(await h.engine.cancel(t.taskId, "alice")).toEqual({ kind: "done" });
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("completed");
    expect(rt.cancels).toEqual([]);
  });

  it("a second cancel is acknowledged without a second upstream cancellation", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.cancel(t.taskId, "alice");
    expect(await h.engine.cancel(t.taskId, "alice")).toEqual({ kind: "done" });
    expect(rt.cancels).toHaveLength(1);
  });

  it("an upstream result arriving after the cancel does not resurrect the task", async () => {
    const h = harness();
    const t = await created(h.engine);
    await h.engine.cancel(t.taskId, "alice");
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("cancelled");
  });
});

describe("TaskEngine.close", () => {
  it("cancels every unfinished upstream call", async () => {
    const h = harness();
    const rts = [fakeRuntime(), fakeRuntime(), fakeRuntime()];
    for (const rt of rts) await created(h.engine, "alice", rt);
    const [first] = rts;
    if (!first) throw new Error("unreachable");
    await h.engine.apply((await created(h.engine, "alice", first)).taskId, { type: "complete", result: textResult(1) });
    await h.engine.close();
    expect(rts.map((r) => r.cancels.length)).toEqual([1, 1, 1]);
    expect(h.engine.runningHere).toBe(0);
  });
});

describe("TaskEngine: a task another replica runs", () => {
  /**
   * Two engines on one memory store: `other` stands for another replica. `here`
   * reads through a store that reports the runner as a shared store would: this
   * replica for the tasks it created, "other-replica" for the unfinished rest.
   */
  function replicas(): { here: TaskEngine; other: TaskEngine; store: MemoryTaskStore } {
    const store = new MemoryTaskStore(16 * 1024 * 1024, () => T0);
    const mine = new Set<string>();
    let leases!: LocalLeases;
    const view = wrapStore(store, {
      create: async (task, limits) => {
        const out = await store.create(task, limits);
        if (out.ok) mine.add(task.record.taskId);
        return out;
      },
      get: async (id) => {
        const task = await store.get(id);
        if (!task || task.status === "completed" || task.status === "failed" || task.status === "cancelled")
          return task;
        return { ...task, runner: mine.has(id) ? leases.replicaId : "other-replica" };
      },
    });
    leases = new LocalLeases(view);
    return { here: engineOn(view, {}, () => T0, leases), other: engineOn(store), store };
  }

  it("tasks/update and tasks/cancel are not applied here: they name the replica that runs the task", async () => {
    const { here, other } = replicas();
    const rt = fakeRuntime();
    const t = await created(other, "alice", rt);
    await other.apply(t.taskId, { type: "input", key: "input-1", request: ELICIT });
    expect(await here.update(t.taskId, "alice", { "input-1": { action: "accept" } })).toEqual({
      kind: "elsewhere",
      runner: "other-replica",
    });
    expect(await here.cancel(t.taskId, "alice")).toEqual({ kind: "elsewhere", runner: "other-replica" });
    // Nothing was applied or delivered: the task is as its runner left it.
    expect(rt.answers).toEqual([]);
    expect(rt.cancels).toEqual([]);
    expect((await here.get(t.taskId, "alice"))?.status).toBe("input_required");
    expect(here.runningHere).toBe(0);
    // Caller binding still holds: to another caller it is unknown, not elsewhere.
    expect(await here.update(t.taskId, "bob", {})).toEqual({ kind: "unknown" });
    expect(await here.cancel(t.taskId, "bob")).toEqual({ kind: "unknown" });
  });

  it("a task this replica runs is handled here, and a finished one is done wherever it ran", async () => {
    const { here, other } = replicas();
    const rt = fakeRuntime();
    const mine = await created(here, "alice", rt);
    expect(await here.cancel(mine.taskId, "alice")).toEqual({ kind: "done" });
    expect(rt.cancels).toHaveLength(1);
    const theirs = await created(other, "alice");
    await other.apply(theirs.taskId, { type: "complete", result: textResult(1) });
    expect(await here.cancel(theirs.taskId, "alice")).toEqual({ kind: "done" });
    expect(await here.update(theirs.taskId, "alice", {})).toEqual({ kind: "done" });
    expect((await here.get(theirs.taskId, "alice"))?.status).toBe("completed");
  });
});

describe("TaskEngine: a task whose lease lapsed", () => {
  /** Leases that report `lapsed` as lapsed and record every endLapsed, writing the ended task to `store` when `accept`. */
  function fakeLeases(store: TaskStore, lapsed: string[], accept: boolean): TaskLeases & { ended: StoredTask[] } {
    const ended: StoredTask[] = [];
    return {
      ended,
      replicaId: "this-replica",
      runner: () => Promise.resolve(undefined),
      renew: () => Promise.resolve([]),
      release: () => Promise.resolve(),
      lapsed: (limit) => Promise.resolve(lapsed.slice(0, limit)),
      endLapsed: async (task) => {
        ended.push(task);
        if (!accept) return false;
        return (await store.update(task)) === "ok";
      },
      adopt: () => Promise.resolve(false),
      offer: () => Promise.resolve(),
      takeTicket: () => Promise.resolve(undefined),
      withdraw: () => Promise.resolve(),
      register: () => Promise.resolve(),
      addressOf: () => Promise.resolve(undefined),
    };
  }

  /** A task created by a replica that is gone; `here` sees its lease as lapsed (runner null). */
  async function orphan(accept: boolean): Promise<{
    here: TaskEngine;
    store: MemoryTaskStore;
    leases: ReturnType<typeof fakeLeases>;
    task: TaskRecord;
    gone: FakeRuntime;
    advance(ms: number): void;
  }> {
    let t = T0;
    const now = (): number => t;
    const store = new MemoryTaskStore(16 * 1024 * 1024, now);
    const gone = fakeRuntime();
    const task = await created(engineOn(store, {}, now), "alice", gone);
    const lapsedView = wrapStore(store, {
      get: async (id) => {
        const stored = await store.get(id);
        return stored && (stored.status === "working" || stored.status === "input_required")
          ? { ...stored, runner: null }
          : stored;
      },
    });
    const leases = fakeLeases(store, [task.taskId], accept);
    return { here: engineOn(lapsedView, {}, now, leases), store, leases, task, gone, advance: (ms) => (t += ms) };
  }

  it("is ended failed (runner_lost) when read, if the lease is still lapsed", async () => {
    const { here, store, leases, task, advance } = await orphan(true);
    const pushed: JsonObject[] = [];
    await here.watch(task.taskId, (d) => pushed.push(parsed(d)));
    advance(5_000);
    const got = await here.get(task.taskId, "alice");
    expect(got?.status).toBe("failed");
    expect(got?.record.error).toMatchObject({ code: -32603, data: { reason: "runner_lost" } });
    expect(got?.record.statusMessage).toMatch(/stopped/);
    expect(got?.record.lastUpdatedAt).toBe(new Date(T0 + 5_000).toISOString());
    // One atomic attempt, with the failed task as it is to be stored.
    expect(leases.ended).toHaveLength(1);
    expect(leases.ended[0]?.status).toBe("failed");
    expect(leases.ended[0]?.json).toBe(taskResultJson(leases.ended[0]?.record as TaskRecord));
    expect((await store.get(task.taskId))?.status).toBe("failed");
    expect((await store.stats()).unfinished).toBe(0);
    // Watchers hear of it like any other change.
    expect(pushed.map((d) => d.status)).toEqual(["failed"]);
    // A finished task is not ended again.
    expect((await here.get(task.taskId, "alice"))?.status).toBe("failed");
    expect(leases.ended).toHaveLength(1);
  });

  it("stays as it was when someone else got there first (endLapsed refuses)", async () => {
    const { here, store, leases, task } = await orphan(false);
    const pushed: string[] = [];
    await here.watch(task.taskId, (d) => pushed.push(d));
    const before = await store.get(task.taskId);
    const got = await here.get(task.taskId, "alice");
    expect(leases.ended).toHaveLength(1);
    expect(got?.status).toBe("working");
    expect(got?.json).toBe(before?.json);
    expect(got?.record.error).toBeUndefined();
    expect((await store.get(task.taskId))?.json).toBe(before?.json);
    expect(pushed).toEqual([]);
  });

  it("is ended by the sweep even if nobody reads it", async () => {
    const { here, store, leases, task, gone } = await orphan(true);
    expect(await here.sweep()).toBe(1);
    expect(leases.ended).toHaveLength(1);
    const stored = await store.get(task.taskId);
    expect(stored?.status).toBe("failed");
    expect(stored?.record.error?.data).toMatchObject({ reason: "runner_lost" });
    // The replica that ran it is gone: nothing here had its call to cancel.
    expect(gone.cancels).toEqual([]);
  });
});

describe("TaskEngine.apply: a store that fails to write", () => {
  it("is logged, the change is not applied, apply rejects (so tasks/update can answer 503) and the upstream call goes on", async () => {
    const inner = new MemoryTaskStore(16 * 1024 * 1024, () => T0);
    // Fails the first update only; the store works again afterwards.
    let failures = 1;
    const flaky = wrapStore(inner, {
      update: (task) => (failures-- > 0 ? Promise.reject(new Error("store unavailable")) : inner.update(task)),
    });
    const engine = engineOn(flaky);
    const rt = fakeRuntime();
    const t = await created(engine, "alice", rt);
    const pushed: string[] = [];
    await engine.watch(t.taskId, (d) => pushed.push(d));
    await expect(engine.apply(t.taskId, { type: "progress", message: "progress 1/2" })).rejects.toThrow(
      /store unavailable/,
    );
    expect(rt.cancels).toEqual([]);
    expect(engine.runningHere).toBe(1);
    expect(pushed).toEqual([]);
    expect((await inner.get(t.taskId))?.record.statusMessage).toBeUndefined();
    // Not applied to the live record either: the same event is a change the next time.
    const next = await engine.apply(t.taskId, { type: "progress", message: "progress 1/2" });
    expect(next?.statusMessage).toBe("progress 1/2");
    expect((await inner.get(t.taskId))?.record.statusMessage).toBe("progress 1/2");
    expect(pushed.map(parsed).map((d) => d.statusMessage)).toEqual(["progress 1/2"]);
  });
});

describe("TaskEngine.drain", () => {
  it("refuses new tasks afterwards and resolves with the ids still running", async () => {
    const h = harness();
    const done = await created(h.engine);
    const running = await created(h.engine);
    await h.engine.apply(done.taskId, { type: "complete", result: textResult(1) });
    expect(await h.engine.drain(0)).toEqual([running.taskId]);
    const before = await h.store.stats();
    const refused = await h.engine.create("alice", 60_000, 500, fakeRuntime());
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reason).toMatch(/shutting down/);
    expect(await h.store.stats()).toEqual(before);
    // The running task is still served.
    expect(await h.engine.apply(running.taskId, { type: "progress", message: "still going" })).toBeDefined();
  });

  it("resolves with nothing once the running tasks finish within the drain time", async () => {
    const h = harness();
    const t = await created(h.engine);
    const drained = h.engine.drain(60_000);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect(await drained).toEqual([]);
  });
});

describe("TaskEngine.abandon", () => {
  it("ends the task failed with the given message and cancels its upstream call", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const pushed: JsonObject[] = [];
    await h.engine.watch(t.taskId, (d) => pushed.push(parsed(d)));
    h.advance(20);
    await h.engine.abandon(t.taskId, "The gateway is shutting down");
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("failed");
    expect(after?.record.statusMessage).toBe("The gateway is shutting down");
    expect(after?.record.error).toMatchObject({ code: -32603, message: "The gateway is shutting down" });
    expect(after?.record.lastUpdatedAt).toBe(new Date(T0 + 20).toISOString());
    expect(rt.cancels).toHaveLength(1);
    expect(h.engine.runningHere).toBe(0);
    expect((await h.store.stats()).unfinished).toBe(0);
    expect(pushed.map((d) => d.status)).toEqual(["failed"]);
  });

  it("does nothing for a task this process does not run", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    await h.engine.abandon(t.taskId, "too late");
    await h.engine.abandon("no-such-task", "nothing");
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("completed");
    expect(rt.cancels).toEqual([]);
  });
});
