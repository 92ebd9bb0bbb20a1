import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ParkedCalls, type ParkLimits } from "../../src/bridge-to-legacy/parked-calls.js";

interface Call {
  name: string;
}

const LIMITS: ParkLimits = { max: 10, maxPerCaller: 3, ttlMs: 1_000 };

// lru-cache reads its injected `perf.now` for staleness and schedules a ttl+1 ms
// autopurge timer per entry; it also caches `now` for 1 ms with a timer. With fake
// timers faking Date too, `() => Date.now()` keeps the clock and the timers in step.
function store(limits: Partial<ParkLimits> = {}): { s: ParkedCalls<Call>; abandoned: string[] } {
  const abandoned: string[] = [];
  const s = new ParkedCalls<Call>(
    { ...LIMITS, ...limits },
    (c) => abandoned.push(c.name),
    () => Date.now(),
  );
  return { s, abandoned };
}

describe("ParkedCalls", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("parks and claims an exchange once", () => {
    const { s, abandoned } = store();
    const call = { name: "a" };
    expect(s.park("x1", "alice", call)).toBe(true);
    expect(s.size).toBe(1);
    expect(s.claim("x1", "alice")).toBe(call);
    expect(s.size).toBe(0);
    // A second (concurrent) retry finds nothing.
    expect(s.claim("x1", "alice")).toBeUndefined();
    expect(abandoned).toEqual([]);
  });

  it("claiming an unknown id finds nothing", () => {
    const { s } = store();
    expect(s.claim("nope", "alice")).toBeUndefined();
  });

  it("another caller cannot claim it, and the owner still can afterwards", () => {
    const { s } = store();
    s.park("x1", "alice", { name: "a" });
    expect(s.claim("x1", "mallory")).toBeUndefined();
    expect(s.size).toBe(1);
    expect(s.claim("x1", "alice")).toEqual({ name: "a" });
  });

  it("limits parked exchanges per caller, and a claim frees a slot", () => {
    const { s, abandoned } = store({ maxPerCaller: 2 });
    expect(s.park("a1", "alice", { name: "a1" })).toBe(true);
    expect(s.park("a2", "alice", { name: "a2" })).toBe(true);
    expect(s.park("a3", "alice", { name: "a3" })).toBe(false);
    expect(s.size).toBe(2);
    // Other callers are not affected.
    expect(s.park("b1", "bob", { name: "b1" })).toBe(true);
    s.claim("a1", "alice");
    expect(s.park("a3", "alice", { name: "a3" })).toBe(true);
    expect(abandoned).toEqual([]);
  });

  it("the overall limit evicts the least recently used exchange, abandoning it and freeing its caller's slot", () => {
    const { s, abandoned } = store({ max: 2, maxPerCaller: 2 });
    s.park("a1", "alice", { name: "a1" });
    s.park("b1", "bob", { name: "b1" });
    s.park("c1", "carol", { name: "c1" });
    expect(s.size).toBe(2);
    expect(abandoned).toEqual(["a1"]);
    expect(s.claim("a1", "alice")).toBeUndefined();
    // alice's count went back down with the eviction.
    expect(s.park("a2", "alice", { name: "a2" })).toBe(true);
    expect(s.park("a3", "alice", { name: "a3" })).toBe(true);
    expect(abandoned).toEqual(["a1", "b1", "c1"]);
    expect(s.park("a4", "alice", { name: "a4" })).toBe(false);
  });

  it("expiry abandons an unclaimed exchange on its own (autopurge), and frees the caller's slot", async () => {
    const { s, abandoned } = store({ maxPerCaller: 1 });
    s.park("x1", "alice", { name: "a" });
    await vi.advanceTimersByTimeAsync(500);
    expect(abandoned).toEqual([]);
    expect(s.size).toBe(1);
    await vi.advanceTimersByTimeAsync(600);
    expect(abandoned).toEqual(["a"]);
    expect(s.size).toBe(0);
    expect(s.park("x2", "alice", { name: "b" })).toBe(true);
  });

  it("a claim after expiry finds nothing and the exchange is abandoned exactly once", async () => {
    const { s, abandoned } = store();
    s.park("x1", "alice", { name: "a" });
    vi.setSystemTime(Date.now() + 1_500);
    // The clock moved without running the purge timer: the claim sees it stale.
    expect(s.claim("x1", "alice")).toBeUndefined();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(abandoned).toEqual(["a"]);
  });

  it("claimed exchanges are not abandoned later", async () => {
    const { s, abandoned } = store();
    s.park("x1", "alice", { name: "a" });
    s.park("x2", "alice", { name: "b" });
    await vi.advanceTimersByTimeAsync(400);
    expect(s.claim("x1", "alice")).toEqual({ name: "a" });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(abandoned).toEqual(["b"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("clear() abandons everything parked, once each, and frees all slots", async () => {
    const { s, abandoned } = store({ maxPerCaller: 2 });
    s.park("a1", "alice", { name: "a1" });
    s.park("a2", "alice", { name: "a2" });
    s.park("b1", "bob", { name: "b1" });
    s.claim("b1", "bob");
    s.clear();
    expect(abandoned.sort()).toEqual(["a1", "a2"]);
    expect(s.size).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(abandoned).toHaveLength(2);
    expect(s.park("a3", "alice", { name: "a3" })).toBe(true);
    expect(s.park("a4", "alice", { name: "a4" })).toBe(true);
  });
});
