// The in-memory TaskStore (src/store/memory-store.ts), beyond the contract every
// store meets (test/integration/store-contract.test.ts): what a task is charged,
// the byte budget held by evicting least recently used finished tasks, TTLs from creation
// on an injected clock, and why the store says it dropped a task.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  ENTRY_OVERHEAD_BYTES,
  FINISH_RESERVE_BYTES,
  MemoryTaskStore,
  taskBytes,
} from "../../src/store/memory-store.js";
import {
  storedTask,
  type CreateLimits,
  type EvictionReason,
  type StoredTask,
  type TaskRecord,
} from "../../src/store/task-store.js";
import { taskRecord } from "../helpers/task-record.js";

const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const ROOMY: CreateLimits = { maxTasks: 100_000, maxTasksPerCaller: 100_000 };

const record = (taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord =>
  taskRecord(taskId, T0, { owner: "owner-a", ...overrides });

/** The tasks/get result the engine stores beside a record. */
function wireJson(r: TaskRecord): string {
  const { owner: _owner, inputRequests, result, error, ...rest } = r;
  return JSON.stringify({
    resultType: "complete",
    ...rest,
    ...(r.status === "input_required" && { inputRequests }),
    ...(r.status === "completed" && { result: result ?? {} }),
    ...(r.status === "failed" && { error }),
  });
}

const stored = (r: TaskRecord): StoredTask => storedTask(r, wireJson(r));

function completed(taskId: string, textBytes: number, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return record(taskId, {
    status: "completed",
    result: { content: [{ type: "text", text: "x".repeat(textBytes) }], isError: false },
    ...overrides,
  });
}

/** A clock the test moves by hand. */
function clock(start = T0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

function recordingStore(
  maxBytes: number,
  now: () => number,
): { store: MemoryTaskStore; drops: Array<[string, EvictionReason]> } {
  const store = new MemoryTaskStore(maxBytes, now);
  const drops: Array<[string, EvictionReason]> = [];
  store.onEvict((t, reason) => drops.push([t.taskId, reason]));
  return { store, drops };
}

/** Creates a working task, then (if the version given is not working) updates it to that version. */
async function put(store: MemoryTaskStore, r: TaskRecord, limits = ROOMY): Promise<void> {
  const created = await store.create(stored({ ...r, status: "working", result: undefined, error: undefined }), limits);
  if (!created.ok) throw new Error(`create refused: ${created.refusal}`);
  if (r.status !== "working") expect(await store.update(stored(r))).toBe("ok");
}

describe("MemoryTaskStore: what is kept", () => {
  it("get parses the record from the stored JSON afresh each time: nothing parsed is kept", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    const r = completed("a", 100);
    await put(store, r);
    const first = await store.get("a");
    expect(first?.record).toEqual(r);
    // A caller scribbling on what it got changes nothing stored.
    if (first) first.record.status = "failed";
    const second = await store.get("a");
    expect(second?.status).toBe("completed");
    expect(second?.record).toEqual(r);
    expect(second?.record).not.toBe(first?.record);
  });

  it("getBytesNow gives the stored tasks/get JSON as its UTF-8 bytes, at once, and the same owner and status as get", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    const r = completed("a", 100, { statusMessage: "fini — ✓ 完了" });
    await put(store, r);
    const now = store.getBytesNow("a");
    const got = await store.get("a");
    expect(now?.bytes.equals(Buffer.from(wireJson(r), "utf8"))).toBe(true);
    expect(now?.bytes.toString("utf8")).toBe(got?.json);
    expect([now?.owner, now?.status]).toEqual([got?.owner, got?.status]);
    expect(store.getBytesNow("missing")).toBeUndefined();
  });

  it("close() empties the store", async () => {
    const { store, drops } = recordingStore(1_000_000, clock().now);
    await put(store, record("a"));
    await store.close();
    expect(await store.get("a")).toBeUndefined();
    expect(await store.stats()).toEqual({ stored: 0, bytes: 0, unfinished: 0 });
    expect(drops).toEqual([]);
  });

  it("creating an id that is already stored is a caller bug and rejects", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    await put(store, record("a"));
    await expect(store.create(stored(record("a")), ROOMY)).rejects.toThrow(/already stored/);
  });
});

describe("MemoryTaskStore: byte accounting", () => {
  it("taskBytes is the JSON's bytes plus the owner's plus a fixed per-entry overhead", () => {
    const small = stored(record("a"));
    // At least what an entry of this store was measured to cost beyond its JSON (bench/investigations/store-entry-cost.ts:
    // 596–632 B), so a byte budget bounds the memory the tasks really take.
    expect(ENTRY_OVERHEAD_BYTES).toBeGreaterThanOrEqual(632);
    expect(taskBytes(small)).toBe(
      Buffer.byteLength(small.json) + Buffer.byteLength(small.owner) + ENTRY_OVERHEAD_BYTES,
    );
    // Multi-byte characters count as bytes, not UTF-16 units.
    const plain = stored(completed("c", 0));
    const withEmoji = stored({
      ...completed("c", 0),
      result: { content: [{ type: "text", text: "🚀".repeat(100) }], isError: false },
    });
    expect(taskBytes(withEmoji) - taskBytes(plain)).toBe(400);
    expect(taskBytes({ owner: "ü", json: "{}" }) - taskBytes({ owner: "u", json: "{}" })).toBe(1);
  });

  it("bytes is the sum of the stored tasks' sizes, across creates and updates", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    const a = record("a");
    const b = completed("b", 2_000);
    await put(store, a);
    await put(store, b);
    expect((await store.stats()).bytes).toBe(taskBytes(stored(a)) + taskBytes(stored(b)));
    const a2 = completed("a", 5_000);
    await store.update(stored(a2));
    expect((await store.stats()).bytes).toBe(taskBytes(stored(a2)) + taskBytes(stored(b)));
  });

  it("under a flood of creates, growing updates and finishes, bytes never exceed the budget; only finished tasks are evicted", async () => {
    const budget = 64 * 1024;
    const { store, drops } = recordingStore(budget, clock().now);
    const working = new Map<string, TaskRecord>();
    let maxSeen = 0;
    let refused = 0;
    for (let i = 0; i < 500; i++) {
      // Sizes vary from tiny to a quarter of the budget.
      const size = (i * 7919) % (budget / 4);
      const [oldest] = working.keys();
      if (i % 3 === 2 && oldest !== undefined) {
        // Finish the oldest working task; a result the store has no room for is "full" (the task stays as it was).
        const outcome = await store.update(stored(completed(oldest, size)));
        expect(["ok", "full"]).toContain(outcome);
        working.delete(oldest);
        if (outcome === "full") expect(await store.update(stored(completed(oldest, 0)))).toBe("ok");
      } else if (i % 5 === 4 && oldest !== undefined) {
        const grown = record(oldest, { statusMessage: "y".repeat(size) });
        const outcome = await store.update(stored(grown));
        expect(["ok", "full"]).toContain(outcome);
      } else {
        const r = record(`t${i}`, { statusMessage: "x".repeat(size) });
        const created = await store.create(stored(r), ROOMY);
        if (created.ok) working.set(r.taskId, r);
        else refused++;
      }
      const { bytes } = await store.stats();
      expect(bytes).toBeLessThanOrEqual(budget);
      maxSeen = Math.max(maxSeen, bytes);
    }
    // The budget was actually under pressure, and the drops were evictions of finished tasks.
    expect(maxSeen).toBeGreaterThan(budget / 2);
    expect(drops.length).toBeGreaterThan(0);
    expect(drops.every(([, reason]) => reason === "evicted")).toBe(true);
    for (const [id] of drops) expect(working.has(id), id).toBe(false);
    // Every task still working is still stored.
    for (const id of working.keys()) expect((await store.get(id))?.status, id).toBe("working");
    expect(refused).toBeGreaterThan(0);
  });

  it("evicts the least recently used finished task first; a get counts as a use", async () => {
    const size = taskBytes(stored(completed("x", 1_000)));
    // Room for exactly three tasks of this size.
    const { store, drops } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.create(stored(completed(id, 1_000)), ROOMY);
    expect((await store.stats()).stored).toBe(3);
    await store.get("a"); // a is now the most recently used; b is the least
    await store.create(stored(completed("d", 1_000)), ROOMY);
    expect(drops).toEqual([["b", "evicted"]]);
    expect(await store.get("b")).toBeUndefined();
    for (const id of ["a", "c", "d"]) expect(await store.get(id)).toBeDefined();
  });

  it("getBytesNow counts as a use as get does, and charges nothing: bytes and eviction order stay right", async () => {
    const size = taskBytes(stored(completed("x", 1_000)));
    const { store, drops } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.create(stored(completed(id, 1_000)), ROOMY);
    const before = await store.stats();
    store.getBytesNow("a"); // a is now the most recently used; b is the least
    expect(await store.stats()).toEqual(before);
    await store.create(stored(completed("d", 1_000)), ROOMY);
    expect(drops).toEqual([["b", "evicted"]]);
    expect(store.getBytesNow("b")).toBeUndefined();
    expect(await store.stats()).toEqual({ stored: 3, bytes: 3 * size, unfinished: 0 });
  });

  it("getBytesNow of an expired task is undefined, and the task is reported expired", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    await put(store, completed("a", 10, { ttlMs: 1_000 }));
    c.advance(1_001);
    expect(store.getBytesNow("a")).toBeUndefined();
    await Promise.resolve();
    expect(drops).toEqual([["a", "expired"]]);
  });

  it("finishing counts as a use: tasks finished later are evicted later", async () => {
    const size = taskBytes(stored(completed("x", 1_000)));
    const { store, drops } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.create(stored(record(id)), ROOMY);
    for (const id of ["b", "a", "c"]) expect(await store.update(stored(completed(id, 1_000)))).toBe("ok");
    await store.create(stored(completed("d", 1_000)), ROOMY);
    expect(drops).toEqual([["b", "evicted"]]);
    await store.create(stored(completed("e", 1_000)), ROOMY);
    expect(drops).toEqual([
      ["b", "evicted"],
      ["a", "evicted"],
    ]);
  });

  it("an unfinished task is never evicted: another owner's create is refused (store_full) and nothing is dropped", async () => {
    const working = stored(record("x", { statusMessage: "m".repeat(1_000) }));
    const { store, drops } = recordingStore(2 * (taskBytes(working) + FINISH_RESERVE_BYTES), clock().now);
    const limits = { maxTasks: 100, maxTasksPerCaller: 2 };
    await store.create(stored(record("a", { statusMessage: "m".repeat(1_000) })), limits);
    await store.create(stored(record("b", { statusMessage: "m".repeat(1_000) })), limits);
    expect(await store.create(stored(record("other", { owner: "owner-b" })), limits)).toEqual({
      ok: false,
      refusal: "store_full",
    });
    expect(drops).toEqual([]);
    for (const id of ["a", "b"]) expect((await store.get(id))?.status).toBe("working");
    expect(await store.get("other")).toBeUndefined();
    expect((await store.stats()).unfinished).toBe(2);
  });

  it("a task larger than the whole budget is refused; the others stay", async () => {
    const budget = 8 * 1024;
    const { store, drops } = recordingStore(budget, clock().now);
    await put(store, record("small"));
    expect(await store.create(stored(completed("huge", budget * 2)), ROOMY)).toEqual({
      ok: false,
      refusal: "store_full",
    });
    expect(await store.get("huge")).toBeUndefined();
    expect(await store.get("small")).toBeDefined();
    expect((await store.stats()).bytes).toBeLessThanOrEqual(budget);
    expect(drops).toEqual([]);
  });

  it("an update larger than the whole budget is full: nothing is written or dropped, the others stay", async () => {
    const budget = 8 * 1024;
    const { store, drops } = recordingStore(budget, clock().now);
    await put(store, record("keep"));
    await put(store, record("grows"));
    const before = await store.stats();
    expect(await store.update(stored(completed("grows", budget * 2)))).toBe("full");
    expect((await store.get("grows"))?.status).toBe("working");
    expect(await store.get("keep")).toBeDefined();
    expect(await store.stats()).toEqual(before);
    expect(drops).toEqual([]);
  });
});

describe("MemoryTaskStore: answer bytes recycled", () => {
  it("an evicted task's memory serves the next task of its size, and every stored answer stays intact", async () => {
    const size = taskBytes(stored(completed("x", 1_000)));
    const { store } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.create(stored(completed(id, 1_000)), ROOMY);
    const memoryOfA = store.getBytesNow("a")?.bytes.buffer;
    // Reads are uses: b and c read after a leave a the least recently used again.
    store.getBytesNow("b");
    store.getBytesNow("c");
    // a is evicted (least recently used) to make room for d, whose answer takes a's memory.
    await store.create(stored(completed("d", 1_000)), ROOMY);
    expect(store.getBytesNow("a")).toBeUndefined();
    expect(store.getBytesNow("d")?.bytes.buffer).toBe(memoryOfA);
    for (const id of ["b", "c", "d"])
      expect(store.getBytesNow(id)?.bytes.toString("utf8"), id).toBe(wireJson(completed(id, 1_000)));
  });

  it("a task's replaced version gives its memory to the next task of that size", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    await put(store, record("a"));
    const workingMemory = store.getBytesNow("a")?.bytes.buffer;
    expect(await store.update(stored(completed("a", 1_000)))).toBe("ok");
    await put(store, record("b"));
    expect(store.getBytesNow("b")?.bytes.buffer).toBe(workingMemory);
    expect((await store.get("a"))?.record).toEqual(completed("a", 1_000));
    expect((await store.get("b"))?.record).toEqual(record("b"));
  });
});

describe("MemoryTaskStore: TTL on the injected clock", () => {
  it("a task is there until its ttlMs has passed, then gone, reported as expired", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    await put(store, record("a", { ttlMs: 1_000 }));
    c.advance(1_000);
    expect(await store.get("a")).toBeDefined();
    c.advance(1);
    // Read the clock afresh: the time just moved, with no real time in between.
    expect(await store.get("a")).toBeUndefined();
    expect(drops).toEqual([["a", "expired"]]);
    expect(await store.stats()).toEqual({ stored: 0, bytes: 0, unfinished: 0 });
  });

  it("each task keeps its own ttlMs", async () => {
    const c = clock();
    const { store } = recordingStore(1_000_000, c.now);
    await put(store, record("short", { ttlMs: 1_000 }));
    await put(store, record("long", { ttlMs: 10_000 }));
    c.advance(5_000);
    expect(await store.get("short")).toBeUndefined();
    expect(await store.get("long")).toBeDefined();
    c.advance(5_001);
    expect(await store.get("long")).toBeUndefined();
  });

  it("updates do not extend a task's life (TTL counts from creation)", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    await put(store, record("a", { ttlMs: 1_000 }));
    c.advance(900);
    expect(await store.update(stored(record("a", { ttlMs: 1_000, statusMessage: "progress 1/2" })))).toBe("ok");
    c.advance(100);
    expect(await store.update(stored(completed("a", 10, { ttlMs: 1_000 })))).toBe("ok");
    c.advance(1); // 1001 ms after creation, 1 after the last update
    expect(await store.get("a")).toBeUndefined();
    expect(drops).toEqual([["a", "expired"]]);
  });

  it("gets do not extend a task's life either", async () => {
    const c = clock();
    const { store } = recordingStore(1_000_000, c.now);
    await put(store, record("a", { ttlMs: 1_000 }));
    for (let i = 0; i < 5; i++) {
      c.advance(200);
      expect(await store.get("a")).toBeDefined();
    }
    c.advance(1);
    expect(await store.get("a")).toBeUndefined();
  });

  it("an expired task frees its bytes, and a finished one is reported too", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    const keep = completed("keep", 100, { ttlMs: 100_000 });
    await put(store, keep);
    await put(store, completed("old", 5_000, { ttlMs: 1_000 }));
    c.advance(1_001);
    expect(await store.get("old")).toBeUndefined();
    expect(drops).toEqual([["old", "expired"]]);
    expect((await store.stats()).bytes).toBe(taskBytes(stored(keep)));
  });

  it("at a limit, unfinished tasks that expired without being touched give their slots back", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    const limits = { maxTasks: 2, maxTasksPerCaller: 2 };
    await store.create(stored(record("a", { ttlMs: 1_000 })), limits);
    await store.create(stored(record("b", { ttlMs: 5_000 })), limits);
    expect(await store.create(stored(record("c")), limits)).toEqual({ ok: false, refusal: "max_tasks" });
    c.advance(1_001);
    expect(await store.create(stored(record("c")), limits)).toEqual({ ok: true });
    expect(drops).toEqual([["a", "expired"]]);
    expect((await store.stats()).unfinished).toBe(2);
  });

  it("a listener may use the store while it is told of a drop", async () => {
    const c = clock();
    const store = new MemoryTaskStore(1_000_000, c.now);
    const seen: Array<[string, boolean]> = [];
    store.onEvict((task) => {
      void store.get(task.taskId).then((t) => seen.push([task.taskId, t === undefined]));
    });
    await put(store, record("a", { ttlMs: 1_000 }));
    c.advance(1_001);
    expect(await store.get("a")).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([["a", true]]);
  });
});

describe("MemoryTaskStore: expired tasks nobody reads", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("one timer for the whole store, not one per task; close() stops it", async () => {
    vi.useFakeTimers();
    const { store } = recordingStore(10_000_000, clock().now);
    for (let i = 0; i < 200; i++) await put(store, completed(`t${i}`, 10, { ttlMs: 1_000 + i }));
    expect(vi.getTimerCount()).toBe(1);
    await store.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a periodic pass drops expired tasks without a read, reports them expired, and frees their bytes and slots", async () => {
    vi.useFakeTimers();
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    const keep = completed("keep", 100, { ttlMs: 100_000 });
    await put(store, keep);
    await put(store, completed("done", 5_000, { ttlMs: 1_000 }));
    await store.create(stored(record("working", { ttlMs: 1_000 })), ROOMY);
    // Until the task's clock says expired, the passes leave it alone.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(drops).toEqual([]);
    c.advance(1_001);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(drops.sort()).toEqual([
      ["done", "expired"],
      ["working", "expired"],
    ]);
    expect(await store.stats()).toEqual({ stored: 1, bytes: taskBytes(stored(keep)), unfinished: 0 });
    await store.close();
  });
});

describe("MemoryTaskStore: LRU eviction against a model (property)", () => {
  it("any creates and reads by three owners evict, per owner's quota and the budget, what a list of uses says", async () => {
    // Every task the same size (ids and owners of equal lengths), so the budgets are counts: room for G tasks
    // overall and Q per owner. The model: ids least recently used first; a create evicts the owner's oldest
    // past its quota, then anyone's oldest past the budget; a read of a stored task moves it to the end.
    const size = taskBytes(stored(completed("t000", 100, { owner: "owner-a" })));
    type Op = { kind: "create"; owner: number } | { kind: "get" | "getBytesNow"; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("create" as const), owner: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constantFrom("get" as const, "getBytesNow" as const), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(op, { maxLength: 60 }),
        async (g, q, ops) => {
          const store = new MemoryTaskStore(g * size + size / 2, clock().now, {
            maxBytesPerCaller: q * size + size / 2,
          });
          const drops: string[] = [];
          store.onEvict((t, reason) => drops.push(`${t.taskId}:${reason}`));
          const model: Array<{ id: string; owner: string }> = [];
          const expected: string[] = [];
          const made: string[] = [];
          const evict = (at: number): void => {
            const [gone] = model.splice(at, 1);
            if (gone) expected.push(`${gone.id}:evicted`);
          };
          for (const o of ops) {
            if (o.kind === "create") {
              const owner = `owner-${"abc"[o.owner]}`;
              const id = `t${made.length.toString().padStart(3, "0")}`;
              made.push(id);
              while (model.filter((m) => m.owner === owner).length + 1 > q)
                evict(model.findIndex((m) => m.owner === owner));
              while (model.length + 1 > g) evict(0);
              model.push({ id, owner });
              expect((await store.create(stored(completed(id, 100, { owner })), ROOMY)).ok).toBe(true);
            } else if (made.length > 0) {
              const id = made[o.pick % made.length] as string;
              const at = model.findIndex((m) => m.id === id);
              if (at !== -1) model.push(...model.splice(at, 1));
              const found = o.kind === "get" ? await store.get(id) : store.getBytesNow(id);
              expect(found !== undefined).toBe(at !== -1);
            }
            await Promise.resolve();
            expect(drops).toEqual(expected);
            expect(await store.stats()).toEqual({ stored: model.length, bytes: model.length * size, unfinished: 0 });
          }
          await store.close();
        },
      ),
      { numRuns: 200 },
    );
  });
});
