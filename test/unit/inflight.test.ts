import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { InFlight, type InFlightEntry } from "../../src/http/inflight.js";

function entry(longLived: boolean): InFlightEntry & { stops: number } {
  const e = {
    longLived,
    stops: 0,
    stop(): void {
      e.stops += 1;
    },
  };
  return e;
}

describe("InFlight", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("counts entries as they are added and released; release is idempotent", () => {
    const inflight = new InFlight();
    expect(inflight.size).toBe(0);
    const releaseA = inflight.add(entry(false));
    const releaseB = inflight.add(entry(true));
    expect(inflight.size).toBe(2);
    releaseA();
    expect(inflight.size).toBe(1);
    releaseA();
    expect(inflight.size).toBe(1);
    releaseB();
    expect(inflight.size).toBe(0);
  });

  it("drained resolves true at once when nothing is in flight", async () => {
    const inflight = new InFlight();
    await expect(inflight.drained(1_000)).resolves.toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("drained resolves true when the last entry is released before the deadline", async () => {
    const inflight = new InFlight();
    const releaseA = inflight.add(entry(false));
    const releaseB = inflight.add(entry(false));
    let settled: boolean | undefined;
    const drained = inflight.drained(10_000).then((v) => (settled = v));

    await vi.advanceTimersByTimeAsync(5_000);
    releaseA();
    await Promise.resolve();
    expect(settled).toBeUndefined();

    releaseB();
    await expect(drained).resolves.toBe(true);
    // Its deadline timer is cleared.
    expect(vi.getTimerCount()).toBe(0);
  });

  it("drained resolves false when the deadline passes first, and a later release does not throw", async () => {
    const inflight = new InFlight();
    const release = inflight.add(entry(false));
    let settled: boolean | undefined;
    const drained = inflight.drained(2_000).then((v) => (settled = v));

    await vi.advanceTimersByTimeAsync(1_999);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await expect(drained).resolves.toBe(false);
    expect(inflight.size).toBe(1);
    expect(() => release()).not.toThrow();
    expect(inflight.size).toBe(0);
  });

  it("wakes every waiter when emptied", async () => {
    const inflight = new InFlight();
    const release = inflight.add(entry(false));
    const waits = [inflight.drained(1_000), inflight.drained(5_000), inflight.drained(60_000)];
    release();
    await expect(Promise.all(waits)).resolves.toEqual([true, true, true]);
  });

  it("a timed-out waiter does not affect another that is still waiting", async () => {
    const inflight = new InFlight();
    const release = inflight.add(entry(false));
    const short = inflight.drained(100);
    const long = inflight.drained(10_000);
    await vi.advanceTimersByTimeAsync(100);
    await expect(short).resolves.toBe(false);
    release();
    await expect(long).resolves.toBe(true);
  });

  it("stopLongLived stops only long-lived entries, once each", () => {
    const inflight = new InFlight();
    const call = entry(false);
    const stream1 = entry(true);
    const stream2 = entry(true);
    inflight.add(call);
    inflight.add(stream1);
    inflight.add(stream2);
    inflight.stopLongLived();
    expect([call.stops, stream1.stops, stream2.stops]).toEqual([0, 1, 1]);
    // Stopping does not release: the exchange releases itself when it has ended.
    expect(inflight.size).toBe(3);
  });

  it("stopLongLived tolerates entries that release themselves while being stopped", () => {
    const inflight = new InFlight();
    const stopped: string[] = [];
    const releases: Array<() => void> = [];
    for (const name of ["a", "b", "c"]) {
      const idx = releases.length;
      releases.push(
        inflight.add({
          longLived: true,
          stop: () => {
            stopped.push(name);
            releases[idx]?.();
          },
        }),
      );
    }
    inflight.stopLongLived();
    expect(stopped).toEqual(["a", "b", "c"]);
    expect(inflight.size).toBe(0);
  });

  it("stopAll stops every entry", () => {
    const inflight = new InFlight();
    const call = entry(false);
    const stream = entry(true);
    inflight.add(call);
    inflight.add(stream);
    inflight.stopAll();
    expect([call.stops, stream.stops]).toEqual([1, 1]);
  });
});
