// The task engine (src/tasks/engine.ts): durable creation, unguessable ids,
// caller binding, limits, result bounds, eviction and expiry reaching the
// upstream call, watchers, tasks/update and tasks/cancel semantics.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { MemoryTaskStore, recordBytes } from "../../src/store/memory-store.js";
import type { EvictionReason, TaskStore } from "../../src/store/task-store.js";
import { newTaskId, TaskEngine, type TaskLimits, type TaskRuntime } from "../../src/tasks/engine.js";
import { detailedTask, type TaskRecord } from "../../src/tasks/task.js";
import type { JsonObject } from "../../src/protocol/json.js";

const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const LIMITS: TaskLimits = { maxTasks: 100, maxTasksPerCaller: 10, maxResultBytes: 64 * 1024 };
const log = createLogger("silent");

const ELICIT = {
  method: "elicitation/create",
  params: { mode: "form", message: "Name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } },
};

interface FakeRuntime extends TaskRuntime {
  answers: Array<[string, unknown]>;
  cancels: string[];
}

function fakeRuntime(): FakeRuntime {
  const answers: Array<[string, unknown]> = [];
  const cancels: string[] = [];
  return {
    answers,
    cancels,
    answer: (key, value) => {
      answers.push([key, value]);
      return Promise.resolve();
    },
    cancel: (reason) => {
      cancels.push(reason);
    },
  };
}

interface Harness {
  engine: TaskEngine;
  store: MemoryTaskStore;
  advance(ms: number): void;
  now(): number;
}

function harness(opts: { limits?: Partial<TaskLimits>; storeBytes?: number } = {}): Harness {
  let t = T0;
  const now = (): number => t;
  const store = new MemoryTaskStore(opts.storeBytes ?? 16 * 1024 * 1024, now);
  const engine = new TaskEngine(store, { ...LIMITS, ...opts.limits }, now, log);
  return { engine, store, now, advance: (ms) => (t += ms) };
}

async function created(engine: TaskEngine, owner = "alice", runtime: TaskRuntime = fakeRuntime(), ttlMs = 60_000): Promise<TaskRecord> {
  const out = await engine.create(owner, ttlMs, 500, runtime);
  if (!out.ok) throw new Error(`create refused: ${out.reason}`);
  return out.task;
}

function textResult(bytes: number): JsonObject {
  return { content: [{ type: "text", text: "x".repeat(bytes) }], isError: false };
}

/** A store that delegates everything to `inner` except writes, which go to `put`. */
function withPut(inner: MemoryTaskStore, put: TaskStore["put"]): TaskStore {
  return {
    get: (id) => inner.get(id),
    put,
    delete: (id) => inner.delete(id),
    onEvict: (l: (task: TaskRecord, reason: EvictionReason) => void) => inner.onEvict(l),
    get size() {
      return inner.size;
    },
    get bytes() {
      return inner.bytes;
    },
    close: () => inner.close(),
  };
}

/** One turn of the timer queue (lets lru-cache's 1 ms clock cache lapse; see memory-store.test.ts). */
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
    const puts: TaskRecord[] = [];
    const gated = withPut(inner, async (task) => {
      puts.push(task);
      await gate;
      await inner.put(task);
    });
    const engine = new TaskEngine(gated, LIMITS, () => T0, log);
    let resolved = false;
    const pending = engine.create("alice", 60_000, 500, fakeRuntime()).then((o) => {
      resolved = true;
      return o;
    });
    await nextTimerTurn();
    expect(puts).toHaveLength(1);
    expect(resolved).toBe(false);
    release();
    const out = await pending;
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(await inner.get(out.task.taskId)).toEqual(out.task);
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
    expect(await h.store.get(t.taskId)).toEqual(t);
    expect(await h.engine.get(t.taskId, "alice")).toEqual(t);
    expect(h.engine.unfinished).toBe(1);
  });

  it("gives every task its own id", async () => {
    const h = harness({ limits: { maxTasks: 1_000, maxTasksPerCaller: 1_000 } });
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) ids.add((await created(h.engine)).taskId);
    expect(ids.size).toBe(200);
  });

  it("a store that fails to write leaves no unfinished task behind", async () => {
    const inner = new MemoryTaskStore(1_000_000, () => T0);
    const broken = withPut(inner, () => Promise.reject(new Error("store unavailable")));
    const engine = new TaskEngine(broken, { ...LIMITS, maxTasksPerCaller: 1 }, () => T0, log);
    await expect(engine.create("alice", 60_000, 500, fakeRuntime())).rejects.toThrow(/store unavailable/);
    expect(engine.unfinished).toBe(0);
    // The failed attempt must not use up alice's quota.
    expect(engine.refusal("alice")).toBeUndefined();
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
    expect(h.engine.unfinished).toBe(3);
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
    expect(h.engine.refusal("d")).toBe(out.reason);
  });

  it("a refused create stores nothing", async () => {
    const h = harness({ limits: { maxTasksPerCaller: 1 } });
    await created(h.engine, "alice");
    const before = h.store.size;
    expect((await h.engine.create("alice", 60_000, 500, fakeRuntime())).ok).toBe(false);
    expect(h.store.size).toBe(before);
  });

  it("a task that finishes (any terminal state) frees its caller's slot; the record stays", async () => {
    const h = harness({ limits: { maxTasksPerCaller: 1 } });
    const a = await created(h.engine, "alice");
    expect(h.engine.refusal("alice")).toBeDefined();
    await h.engine.apply(a.taskId, { type: "complete", result: textResult(10) });
    expect(h.engine.refusal("alice")).toBeUndefined();
    const b = await created(h.engine, "alice");
    await h.engine.apply(b.taskId, { type: "fail", error: { code: -32603, message: "x" }, message: "failed" });
    const c = await created(h.engine, "alice");
    await h.engine.cancel(c.taskId, "alice");
    expect(h.engine.unfinished).toBe(0);
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
    expect(await h.engine.update(t.taskId, "bob", { "input-1": { action: "accept" } })).toBe(false);
    expect(await h.engine.update("no-such-task", "bob", {})).toBe(false);
    expect(await h.engine.cancel(t.taskId, "bob")).toBe(false);
    expect(await h.engine.cancel("no-such-task", "bob")).toBe(false);
    // Nothing reached the upstream, and the task is untouched for its owner.
    expect(rt.answers).toEqual([]);
    expect(rt.cancels).toEqual([]);
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("input_required");
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
    expect(final?.result).toEqual(textResult(3));
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
    expect(stored?.result).toBeUndefined();
    expect(h.engine.unfinished).toBe(0);
  });

  it("an error past maxResultBytes is not buffered whole (tasks.maxResultBytes covers results and errors)", async () => {
    const h = harness({ limits: { maxResultBytes: 2_000 } });
    const t = await created(h.engine);
    const huge = { code: -32603, message: "upstream exploded", data: { dump: "z".repeat(10_000) } };
    const next = await h.engine.apply(t.taskId, { type: "fail", error: huge, message: "The call failed: upstream exploded" });
    expect(next?.status).toBe("failed");
    expect(Buffer.byteLength(JSON.stringify(next?.error))).toBeLessThanOrEqual(2_000);
    expect(next?.error?.code).toBe(-32603);
  });

  it("a change that makes the record too big for the whole store does not orphan the upstream call", async () => {
    // The store budget is smaller than one input request: the record cannot be stored.
    const h = harness({ storeBytes: 4_096, limits: { maxResultBytes: 1_000 } });
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    const huge = { method: "elicitation/create", params: { mode: "form", message: "x".repeat(8_000), requestedSchema: { type: "object" } } };
    await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: huge });
    const now = await h.engine.get(t.taskId, "alice");
    // Either the task is still there (in some state the client can see), or it is gone and its upstream call was stopped.
    if (now === undefined) {
      expect(rt.cancels).toHaveLength(1);
      expect(h.engine.unfinished).toBe(0);
    } else {
      expect(["input_required", "failed"]).toContain(now.status);
    }
  });
});

describe("TaskEngine: eviction and expiry reach the upstream call", () => {
  it("a working task evicted at the byte budget has its upstream call cancelled and its slot freed", async () => {
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
    const budget = recordBytes(probe) * 4;
    const h = harness({ storeBytes: budget, limits: { maxResultBytes: resultBytes * 2, maxTasksPerCaller: 100 } });
    const rt = fakeRuntime();
    const victim = await created(h.engine, "alice", rt);
    for (let i = 0; i < 6; i++) {
      const t = await created(h.engine, "bob");
      await h.engine.apply(t.taskId, { type: "complete", result: textResult(resultBytes) });
      expect(h.store.bytes).toBeLessThanOrEqual(budget);
    }
    expect(await h.engine.get(victim.taskId, "alice")).toBeUndefined();
    expect(rt.cancels).toHaveLength(1);
    expect(rt.cancels[0]).toMatch(/evicted/);
    expect(h.engine.unfinished).toBe(0);
    expect(h.engine.refusal("alice")).toBeUndefined();
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
    await nextTimerTurn();
    h.advance(2);
    expect(await h.engine.get(t.taskId, "alice")).toBeUndefined();
    expect(rt.cancels).toHaveLength(1);
    expect(rt.cancels[0]).toMatch(/expired/);
    expect(h.engine.unfinished).toBe(0);
    // Late upstream events for it change nothing.
    expect(await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) })).toBeUndefined();
  });

  it("updates do not extend a task's TTL", async () => {
    const h = harness();
    const t = await created(h.engine, "alice", fakeRuntime(), 1_000);
    h.advance(800);
    await h.engine.apply(t.taskId, { type: "progress", message: "progress 1/2" });
    await nextTimerTurn();
    h.advance(300);
    expect(await h.engine.get(t.taskId, "alice")).toBeUndefined();
  });
});

describe("TaskEngine.watch", () => {
  it("pushes the full DetailedTask on every change, and nothing for no-ops", async () => {
    const h = harness();
    const t = await created(h.engine);
    const pushed: JsonObject[] = [];
    h.engine.watch(t.taskId, (d) => pushed.push(d));
    const snapshots: JsonObject[] = [];
    const step = async (e: Parameters<TaskEngine["apply"]>[1]): Promise<void> => {
      h.advance(10);
      const r = await h.engine.apply(t.taskId, e);
      if (r) snapshots.push(detailedTask(r));
    };
    await step({ type: "progress", message: "progress 1/2" });
    await step({ type: "progress", message: "progress 1/2" }); // no change
    await step({ type: "input", key: "input-1", request: ELICIT });
    await step({ type: "answered", keys: ["nope"] }); // no change
    await step({ type: "answered", keys: ["input-1"] });
    await step({ type: "complete", result: textResult(5) });
    await step({ type: "progress", message: "late" }); // terminal: no change
    expect(pushed.map((d) => d.status)).toEqual(["working", "input_required", "working", "completed"]);
    expect(pushed[0]).toMatchObject({ taskId: t.taskId, statusMessage: "progress 1/2" });
    expect(pushed[1]).toMatchObject({ inputRequests: { "input-1": ELICIT } });
    expect(pushed[3]).toMatchObject({ result: textResult(5) });
    // Each push is exactly what tasks/get would have returned at that moment.
    expect(pushed).toEqual([snapshots[0], snapshots[2], snapshots[4], snapshots[5]]);
    expect(new Set(pushed.map((d) => d.lastUpdatedAt)).size).toBe(4);
    for (const d of pushed) expect(d).not.toHaveProperty("owner");
  });

  it("each watcher gets every change; an unsubscribed watcher gets no more", async () => {
    const h = harness();
    const t = await created(h.engine);
    const a: unknown[] = [];
    const b: unknown[] = [];
    const stopA = h.engine.watch(t.taskId, (d) => a.push(d.statusMessage));
    h.engine.watch(t.taskId, (d) => b.push(d.statusMessage));
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
    h.engine.watch(t1.taskId, (d) => heard.push(d.taskId));
    await h.engine.apply(t2.taskId, { type: "progress", message: "x" });
    await h.engine.apply(t1.taskId, { type: "progress", message: "y" });
    expect(heard).toEqual([t1.taskId]);
  });

  it("a cancel is pushed too", async () => {
    const h = harness();
    const t = await created(h.engine);
    const pushed: JsonObject[] = [];
    h.engine.watch(t.taskId, (d) => pushed.push(d));
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
    expect(await h.engine.update(t.taskId, "alice", { "input-1": answer })).toBe(true);
    expect(rt.answers).toEqual([["input-1", answer]]);
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("working");
    expect(after?.inputRequests).toEqual({});
  });

  it("ignores unknown keys: acknowledged, nothing delivered, nothing changed", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    const before = await h.engine.get(t.taskId, "alice");
    expect(await h.engine.update(t.taskId, "alice", { "input-99": { action: "accept" } })).toBe(true);
    expect(rt.answers).toEqual([]);
    expect(await h.engine.get(t.taskId, "alice")).toEqual(before);
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
    expect(Object.keys(mid?.inputRequests ?? {})).toEqual(["input-1"]);
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
    expect(await h.engine.update(t.taskId, "alice", { "input-1": { action: "decline" } })).toBe(true);
    expect(rt.answers).toEqual([["input-1", { action: "accept" }]]);
  });

  it("an update for a finished task is acknowledged and does nothing", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await waiting(h, rt, ["input-1"]);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect(await h.engine.update(t.taskId, "alice", { "input-1": { action: "accept" } })).toBe(true);
    expect(rt.answers).toEqual([]);
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("completed");
  });

  it("an unknown task is false", async () => {
    const h = harness();
    expect(await h.engine.update("nope", "alice", {})).toBe(false);
  });
});

describe("TaskEngine.cancel", () => {
  it("marks the task cancelled and stops the upstream call", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    h.advance(50);
    expect(await h.engine.cancel(t.taskId, "alice")).toBe(true);
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("cancelled");
    expect(after?.lastUpdatedAt).toBe(new Date(T0 + 50).toISOString());
    expect(rt.cancels).toHaveLength(1);
    expect(h.engine.unfinished).toBe(0);
  });

  it("cancels an input_required task too, dropping its input requests", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "input", key: "input-1", request: ELICIT });
    await h.engine.cancel(t.taskId, "alice");
    const after = await h.engine.get(t.taskId, "alice");
    expect(after?.status).toBe("cancelled");
    expect(detailedTask(after as TaskRecord)).not.toHaveProperty("inputRequests");
    expect(rt.cancels).toHaveLength(1);
  });

  it("cancelling a finished task is acknowledged, changes nothing and reaches no upstream", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.apply(t.taskId, { type: "complete", result: textResult(1) });
    expect(await h.engine.cancel(t.taskId, "alice")).toBe(true);
    expect((await h.engine.get(t.taskId, "alice"))?.status).toBe("completed");
    expect(rt.cancels).toEqual([]);
  });

  it("a second cancel is acknowledged without a second upstream cancellation", async () => {
    const h = harness();
    const rt = fakeRuntime();
    const t = await created(h.engine, "alice", rt);
    await h.engine.cancel(t.taskId, "alice");
    expect(await h.engine.cancel(t.taskId, "alice")).toBe(true);
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
    expect(h.engine.unfinished).toBe(0);
  });
});
