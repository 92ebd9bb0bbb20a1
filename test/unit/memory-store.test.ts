// The in-memory TaskStore (src/store/memory-store.ts): records expire at their
// ttlMs counted from creation (an injected clock drives it), the byte budget
// is never exceeded, least recently used records go first, and the store says
// why it dropped a record on its own.
import { describe, expect, it } from "vitest";
import { MemoryTaskStore, recordBytes } from "../../src/store/memory-store.js";
import type { EvictionReason } from "../../src/store/task-store.js";
import type { TaskRecord } from "../../src/tasks/task.js";

const T0 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

function record(taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  const stamp = new Date(T0).toISOString();
  return {
    taskId,
    owner: "owner-a",
    status: "working",
    createdAt: stamp,
    lastUpdatedAt: stamp,
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    inputRequests: {},
    ...overrides,
  };
}

function completed(taskId: string, textBytes: number): TaskRecord {
  return record(taskId, { status: "completed", result: { content: [{ type: "text", text: "x".repeat(textBytes) }], isError: false } });
}

/** A clock the test moves by hand. */
function clock(start = T0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

function recordingStore(maxBytes: number, now: () => number): { store: MemoryTaskStore; drops: Array<[string, EvictionReason]> } {
  const store = new MemoryTaskStore(maxBytes, now);
  const drops: Array<[string, EvictionReason]> = [];
  store.onEvict((t, reason) => drops.push([t.taskId, reason]));
  return { store, drops };
}

describe("MemoryTaskStore: basic operations", () => {
  it("put then get returns the record; delete removes it without an eviction event", async () => {
    const { store, drops } = recordingStore(1_000_000, clock().now);
    const t = record("a");
    await store.put(t);
    expect(await store.get("a")).toEqual(t);
    expect(store.size).toBe(1);
    await store.delete("a");
    expect(await store.get("a")).toBeUndefined();
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
    expect(drops).toEqual([]);
  });

  it("put replaces a record (same id) without an eviction event", async () => {
    const { store, drops } = recordingStore(1_000_000, clock().now);
    await store.put(record("a"));
    const next = record("a", { status: "completed", result: { content: [] } });
    await store.put(next);
    expect(await store.get("a")).toEqual(next);
    expect(store.size).toBe(1);
    expect(drops).toEqual([]);
  });

  it("an unknown id is undefined", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    expect(await store.get("nope")).toBeUndefined();
  });

  it("close() empties the store", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    await store.put(record("a"));
    await store.close();
    expect(store.size).toBe(0);
    expect(await store.get("a")).toBeUndefined();
  });
});

describe("MemoryTaskStore: byte accounting", () => {
  it("recordBytes is the record's JSON length plus a fixed per-entry overhead", () => {
    const small = record("a");
    const big = completed("b", 10_000);
    const overhead = recordBytes(small) - Buffer.byteLength(JSON.stringify(small));
    expect(overhead).toBeGreaterThan(0);
    expect(recordBytes(big)).toBe(Buffer.byteLength(JSON.stringify(big)) + overhead);
    // Multi-byte characters count as bytes, not UTF-16 units.
    const emoji = completed("c", 0);
    const withEmoji = { ...emoji, result: { content: [{ type: "text", text: "🚀".repeat(100) }], isError: false } };
    expect(recordBytes(withEmoji) - recordBytes(emoji)).toBe(400);
  });

  it("bytes is the sum of the stored records' sizes, across puts, replacements and deletes", async () => {
    const { store } = recordingStore(1_000_000, clock().now);
    const a = record("a");
    const b = completed("b", 2_000);
    await store.put(a);
    await store.put(b);
    expect(store.bytes).toBe(recordBytes(a) + recordBytes(b));
    const a2 = completed("a", 5_000);
    await store.put(a2);
    expect(store.bytes).toBe(recordBytes(a2) + recordBytes(b));
    await store.delete("b");
    expect(store.bytes).toBe(recordBytes(a2));
  });

  it("under a flood of puts (new records and growing replacements) bytes never exceed the budget", async () => {
    const budget = 64 * 1024;
    const { store, drops } = recordingStore(budget, clock().now);
    let maxSeen = 0;
    for (let i = 0; i < 500; i++) {
      // Sizes vary from tiny to a quarter of the budget; every fifth put grows an existing record.
      const id = i % 5 === 4 ? `t${i - 1}` : `t${i}`;
      await store.put(completed(id, (i * 7919) % (budget / 4)));
      expect(store.bytes).toBeLessThanOrEqual(budget);
      maxSeen = Math.max(maxSeen, store.bytes);
    }
    // The budget was actually under pressure, and the drops were reported as evictions.
    expect(maxSeen).toBeGreaterThan(budget / 2);
    expect(drops.length).toBeGreaterThan(0);
    expect(drops.every(([, reason]) => reason === "evicted")).toBe(true);
  });

  it("evicts least recently used first; a get counts as a use", async () => {
    const rec = completed("x", 1_000);
    const size = recordBytes(rec);
    // Room for exactly three records of this size.
    const { store, drops } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.put(completed(id, 1_000));
    expect(store.size).toBe(3);
    await store.get("a"); // a is now the most recently used; b is the least
    await store.put(completed("d", 1_000));
    expect(drops).toEqual([["b", "evicted"]]);
    expect(await store.get("b")).toBeUndefined();
    for (const id of ["a", "c", "d"]) expect(await store.get(id)).toBeDefined();
  });

  it("a put that updates a record counts as a use", async () => {
    const size = recordBytes(completed("x", 1_000));
    const { store, drops } = recordingStore(Math.floor(size * 3.5), clock().now);
    for (const id of ["a", "b", "c"]) await store.put(completed(id, 1_000));
    await store.put(completed("a", 1_000));
    await store.put(completed("d", 1_000));
    expect(drops).toEqual([["b", "evicted"]]);
  });

  it("a record larger than the whole budget is not stored, and the budget holds", async () => {
    const budget = 8 * 1024;
    const { store } = recordingStore(budget, clock().now);
    await store.put(record("small"));
    await store.put(completed("huge", budget * 2));
    expect(await store.get("huge")).toBeUndefined();
    expect(await store.get("small")).toBeDefined();
    expect(store.bytes).toBeLessThanOrEqual(budget);
  });
});

describe("MemoryTaskStore: TTL on the injected clock", () => {
  it("a record is there until its ttlMs has passed, then gone, reported as expired", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    await store.put(record("a", { ttlMs: 1_000 }));
    c.advance(1_000);
    expect(await store.get("a")).toBeDefined();
    c.advance(1);
    // Read the clock afresh: the time just moved, with no real time in between.
    expect(await store.get("a")).toBeUndefined();
    expect(drops).toEqual([["a", "expired"]]);
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  it("each record keeps its own ttlMs", async () => {
    const c = clock();
    const { store } = recordingStore(1_000_000, c.now);
    await store.put(record("short", { ttlMs: 1_000 }));
    await store.put(record("long", { ttlMs: 10_000 }));
    c.advance(5_000);
    expect(await store.get("short")).toBeUndefined();
    expect(await store.get("long")).toBeDefined();
    c.advance(5_001);
    expect(await store.get("long")).toBeUndefined();
  });

  it("noUpdateTTL: updating a record does not extend its life (TTL counts from creation)", async () => {
    const c = clock();
    const { store, drops } = recordingStore(1_000_000, c.now);
    await store.put(record("a", { ttlMs: 1_000 }));
    c.advance(900);
    await store.put(record("a", { ttlMs: 1_000, statusMessage: "progress 1/2" }));
    c.advance(900);
    await store.put(record("a", { ttlMs: 1_000, status: "completed", result: { content: [] } }));
    c.advance(201); // 2001 ms after creation, 201 after the last update
    expect(await store.get("a")).toBeUndefined();
    expect(drops).toEqual([["a", "expired"]]);
  });

  it("gets do not extend a record's life either", async () => {
    const c = clock();
    const { store } = recordingStore(1_000_000, c.now);
    await store.put(record("a", { ttlMs: 1_000 }));
    for (let i = 0; i < 5; i++) {
      c.advance(200);
      expect(await store.get("a")).toBeDefined();
    }
    c.advance(1);
    expect(await store.get("a")).toBeUndefined();
  });

  it("an expired record frees its bytes", async () => {
    const c = clock();
    const { store } = recordingStore(1_000_000, c.now);
    const keep = completed("keep", 100);
    await store.put({ ...keep, ttlMs: 100_000 });
    await store.put({ ...completed("old", 5_000), ttlMs: 1_000 });
    c.advance(1_001);
    expect(await store.get("old")).toBeUndefined();
    expect(store.bytes).toBe(recordBytes({ ...keep, ttlMs: 100_000 }));
  });
});
