// The circuit breaker of a federated endpoint's member (src/federation/breaker.ts), on a fake clock.
import { describe, expect, it } from "vitest";
import { Breaker, Breakers, type BreakerSettings } from "../../src/federation/breaker.js";

const settings: BreakerSettings = { failures: 3, backoffMs: 1_000, maxBackoffMs: 4_000 };

function clock() {
  let t = 10_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

function breaker(s: BreakerSettings = settings) {
  const c = clock();
  return { ...c, b: new Breaker(() => s, c.now) };
}

describe("Breaker", () => {
  it("stays closed below the threshold, and a success starts the count again", () => {
    const { b } = breaker();
    b.failed();
    b.failed();
    b.succeeded();
    b.failed();
    b.failed();
    expect(b.allows()).toBe(true);
    expect(b.state()).toEqual({ state: "closed" });
  });

  it("opens after N consecutive failures, for the first back-off", () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    expect(b.allows()).toBe(false);
    expect(b.state()).toEqual({ state: "open", until: 11_000 });
    expect(b.retryAfterMs()).toBe(1_000);
    advance(999);
    expect(b.allows()).toBe(false);
    expect(b.retryAfterMs()).toBe(1);
    advance(1);
    expect(b.allows()).toBe(true);
    expect(b.state()).toEqual({ state: "half-open" });
    expect(b.retryAfterMs()).toBe(0);
  });

  it("half-open: one success closes it", () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    advance(1_000);
    b.succeeded();
    expect(b.state()).toEqual({ state: "closed" });
    // Closed again: it takes N failures to open it once more, for the first back-off.
    b.failed();
    expect(b.allows()).toBe(true);
    b.failed();
    b.failed();
    expect(b.retryAfterMs()).toBe(1_000);
  });

  it("half-open: one failure reopens it with the back-off doubled, up to the most", () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    const backoffs: number[] = [];
    for (let i = 0; i < 4; i++) {
      advance(b.retryAfterMs());
      b.failed();
      backoffs.push(b.retryAfterMs());
    }
    expect(backoffs).toEqual([2_000, 4_000, 4_000, 4_000]);
  });

  it("a failure while open (a request sent before it opened) does not lengthen the back-off", () => {
    const { b, advance } = breaker();
    for (let i = 0; i < 3; i++) b.failed();
    advance(500);
    b.failed();
    expect(b.retryAfterMs()).toBe(500);
  });

  it("reads its settings at each use", () => {
    let s = settings;
    const c = clock();
    const b = new Breaker(() => s, c.now);
    b.failed();
    s = { ...settings, failures: 1, backoffMs: 50 };
    b.failed();
    expect(b.retryAfterMs()).toBe(50);
  });
});

describe("Breakers", () => {
  it("keeps one breaker per endpoint and member, and forgets those a reload removed", () => {
    const c = clock();
    const all = new Breakers(() => ({ ...settings, failures: 1 }), c.now);
    all.of("fed", "a").failed();
    expect(all.state("fed", "a")).toEqual({ state: "open", until: 11_000 });
    expect(all.state("fed", "b")).toEqual({ state: "closed" });
    expect(all.state("other", "a")).toEqual({ state: "closed" });
    expect(all.of("fed", "a")).toBe(all.of("fed", "a"));
    all.keep("fed", ["b"]);
    expect(all.state("fed", "a")).toEqual({ state: "closed" });
    all.of("fed", "b").failed();
    all.keep("fed", undefined);
    expect(all.state("fed", "b")).toEqual({ state: "closed" });
  });
});
