// Adaptive promotion's latency history (src/tasks/latency-history.ts) and its use
// by planPromotion, on an injected clock: warm-up and the sample minimum, a fast
// tool that never turns into a task, a tool tracked as it slows down and speeds
// up again, the hysteresis band, a bounded memory under 100,000 random tool names,
// poll hints within their bounds, and how a call's timing decides what is a sample.
import { describe, expect, it } from "vitest";
import {
  bucketOf,
  BUCKETS,
  CallTiming,
  LatencyHistory,
  MIN_SAMPLES,
  type AdaptiveSettings,
  type LatencyHistoryOptions,
} from "../../src/tasks/latency-history.js";
import { planPromotion } from "../../src/tasks/promotion.js";
import { TaskPolicy, type TaskRule } from "../../src/policy/policy.js";
import type { ModernRequest } from "../../src/protocol/modern-request.js";

const T0 = 1_767_225_600_000;
const THRESHOLD = 5_000;
const DECISION = { thresholdMs: THRESHOLD, pollIntervalMs: 1_000 };

function settings(over: Partial<AdaptiveSettings> = {}): AdaptiveSettings {
  return { enabled: true, minPollIntervalMs: 250, maxPollIntervalMs: 5_000, ...over };
}

function clocked(opts: Partial<LatencyHistoryOptions> = {}): { history: LatencyHistory; advance(ms: number): void } {
  let t = T0;
  const history = new LatencyHistory({ now: () => t, settings: settings(), ...opts });
  return { history, advance: (ms) => (t += ms) };
}

/** One call of `tool` that takes `ms` on the injected clock, answered; returns whether it was planned at once. */
function call(
  h: { history: LatencyHistory; advance(ms: number): void },
  tool: string,
  ms: number,
  threshold = THRESHOLD,
): boolean {
  const atOnce = h.history.atOnce(tool, threshold);
  const timing = h.history.begin(tool, { thresholdMs: threshold, pollIntervalMs: 1_000 }, false);
  if (!timing) throw new Error("adaptive promotion is off");
  if (atOnce) timing.promoted("atOnce");
  h.advance(ms);
  timing.answered();
  return atOnce;
}

describe("buckets", () => {
  it("are log-spaced by √2 from 10 ms, with everything small in the first and everything huge in the last", () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(14)).toBe(0);
    expect(bucketOf(15)).toBe(1);
    expect(bucketOf(20)).toBe(2);
    expect(bucketOf(40)).toBe(4);
    expect(bucketOf(1e12)).toBe(BUCKETS - 1);
  });
});

describe("promotion at once", () => {
  it("a slow tool becomes a task at once after the warm-up, and not one call earlier (the sample minimum)", () => {
    const h = clocked();
    const planned: boolean[] = [];
    for (let i = 0; i < MIN_SAMPLES + 3; i++) planned.push(call(h, "report", 10_000));
    // MIN_SAMPLES calls wait the threshold; the next one is a task at once, and so are the rest.
    expect(planned).toEqual([...Array<boolean>(MIN_SAMPLES).fill(false), true, true, true]);
    expect(h.history.counts.atOnce).toBe(3);
  });

  it("a fast tool never does, however many calls", () => {
    const h = clocked();
    for (let i = 0; i < 500; i++) expect(call(h, "echo", 40)).toBe(false);
    expect(h.history.estimate("echo", DECISION)).toMatchObject({ samples: 500, slowShare: 0, atOnce: false });
  });

  it("a tool just under the threshold stays plain; one just over it (√2) becomes a task at once", () => {
    const h = clocked();
    for (let i = 0; i < 20; i++) call(h, "under", THRESHOLD / 1.5);
    for (let i = 0; i < 20; i++) call(h, "over", THRESHOLD * 1.5);
    expect(h.history.atOnce("under", THRESHOLD)).toBe(false);
    expect(h.history.atOnce("over", THRESHOLD)).toBe(true);
  });

  it("a tool that slows down and speeds up again is tracked both ways, within a bounded number of calls", () => {
    const h = clocked();
    for (let i = 0; i < 50; i++) expect(call(h, "search", 100)).toBe(false);
    // Slows down: the fast history decays; at most a handful of slow calls wait the threshold.
    let waited = 0;
    while (!call(h, "search", 20_000)) waited++;
    expect(waited).toBeGreaterThanOrEqual(MIN_SAMPLES - 1);
    expect(waited).toBeLessThanOrEqual(8);
    for (let i = 0; i < 20; i++) expect(call(h, "search", 20_000)).toBe(true);
    // Speeds up again (an upstream got faster, or the arguments changed): at most 4 fast calls are tasks.
    let tasks = 0;
    while (call(h, "search", 100)) tasks++;
    expect(tasks).toBeGreaterThanOrEqual(1);
    expect(tasks).toBeLessThanOrEqual(4);
    for (let i = 0; i < 20; i++) expect(call(h, "search", 100)).toBe(false);
  });

  it("hysteresis: inside the band (50–75 % slow) a tool keeps the state it had", () => {
    // 2 slow calls in 3: about two thirds of the weight is slow, inside the band.
    const pattern = [20_000, 20_000, 100];
    const fromPlain = clocked();
    for (let i = 0; i < 30; i++) call(fromPlain, "mixed", 100);
    const plainStates = new Set<boolean>();
    for (let i = 0; i < 60; i++) plainStates.add(call(fromPlain, "mixed", pattern[i % 3] as number));
    expect([...plainStates]).toEqual([false]);

    const fromAtOnce = clocked();
    for (let i = 0; i < 30; i++) call(fromAtOnce, "mixed", 20_000);
    expect(fromAtOnce.history.atOnce("mixed", THRESHOLD)).toBe(true);
    const taskStates = new Set<boolean>();
    for (let i = 0; i < 60; i++) taskStates.add(call(fromAtOnce, "mixed", pattern[i % 3] as number));
    expect([...taskStates]).toEqual([true]);
  });

  it("one odd fast call does not turn a slow tool plain, nor one odd slow call a fast tool into a task", () => {
    const slow = clocked();
    for (let i = 0; i < 10; i++) call(slow, "s", 30_000);
    call(slow, "s", 50);
    expect(slow.history.atOnce("s", THRESHOLD)).toBe(true);
    const fast = clocked();
    for (let i = 0; i < 10; i++) call(fast, "f", 50);
    call(fast, "f", 30_000);
    expect(fast.history.atOnce("f", THRESHOLD)).toBe(false);
  });

  it("the state is per threshold: a tool slow for one rule's threshold is not for a longer one", () => {
    const h = clocked();
    for (let i = 0; i < 10; i++) call(h, "t", 10_000);
    expect(h.history.atOnce("t", 5_000)).toBe(true);
    expect(h.history.atOnce("t", 60_000)).toBe(false);
  });

  it("tasks.adaptive false: nothing is timed or promoted at once", () => {
    let t = T0;
    const s = settings({ enabled: false });
    const history = new LatencyHistory({ now: () => t, settings: s });
    expect(history.begin("x", DECISION, false)).toBeUndefined();
    history.record("x", 10_000);
    expect(history.size).toBe(0);
    // A reload turns it on in place.
    s.enabled = true;
    for (let i = 0; i < 6; i++) {
      const timing = history.begin("x", DECISION, false);
      t += 10_000;
      timing?.answered();
    }
    expect(history.atOnce("x", THRESHOLD)).toBe(true);
  });
});

describe("bounded memory", () => {
  it("100,000 random tool names keep the history within maxTools + a quarter, and a real slow tool survives them", () => {
    const h = clocked({ maxTools: 1_000 });
    for (let i = 0; i < 10; i++) call(h, "real_slow_tool", 10_000);
    for (let i = 0; i < 100_000; i++) {
      call(h, `random-${i}-${Math.random().toString(36).slice(2)}`, 10);
      // The real tool keeps being used now and then.
      if (i % 5_000 === 0) call(h, "real_slow_tool", 10_000);
    }
    expect(h.history.size).toBeLessThanOrEqual(1_250);
    expect(h.history.atOnce("real_slow_tool", THRESHOLD)).toBe(true);
  });

  it("looking a tool up never adds it", () => {
    const h = clocked();
    for (let i = 0; i < 1_000; i++) h.history.atOnce(`unknown-${i}`, THRESHOLD);
    expect(h.history.size).toBe(0);
  });
});

describe("poll hints", () => {
  const bounds = { minPollIntervalMs: 250, maxPollIntervalMs: 5_000 };

  it("follow the expected remaining time (a tenth of it), within the configured bounds", () => {
    const h = clocked();
    for (let i = 0; i < 10; i++) call(h, "three_s", 3_000);
    for (let i = 0; i < 10; i++) call(h, "thirty_min", 30 * 60_000);
    for (let i = 0; i < 10; i++) call(h, "instant", 20);
    const three = h.history.pollIntervalMs("three_s", 0, 1_000);
    // A 3 s job is polled every few hundred ms (±19 % bucket resolution); a 30-minute one at the ceiling.
    expect(three).toBeGreaterThanOrEqual(240);
    expect(three).toBeLessThanOrEqual(360);
    expect(h.history.pollIntervalMs("thirty_min", 0, 1_000)).toBe(bounds.maxPollIntervalMs);
    expect(h.history.pollIntervalMs("instant", 0, 1_000)).toBe(bounds.minPollIntervalMs);
    // No history: the configured interval.
    expect(h.history.pollIntervalMs("never_seen", 0, 1_000)).toBe(1_000);
  });

  it("are taken at the call's elapsed time: promoted at the threshold, the remaining time is shorter", () => {
    const h = clocked();
    for (let i = 0; i < 10; i++) call(h, "twelve_s", 12_000);
    const atStart = h.history.pollIntervalMs("twelve_s", 0, 1_000);
    const atThreshold = h.history.pollIntervalMs("twelve_s", THRESHOLD, 1_000);
    expect(atStart).toBeGreaterThan(1_000);
    expect(atThreshold).toBeLessThan(atStart);
    expect(atThreshold).toBeGreaterThan(500);
    // Past everything seen: as much again as it has run (here 60 s → the ceiling).
    expect(h.history.pollIntervalMs("twelve_s", 60_000, 1_000)).toBe(5_000);
  });

  it("always stay within the bounds, whatever the history and the elapsed time", () => {
    const h = clocked();
    const durations = [1, 7, 90, 400, 2_500, 11_000, 70_000, 600_000, 7_200_000, 90_000_000];
    for (const d of durations) for (let i = 0; i < 3; i++) call(h, "varied", d);
    for (const e of [0, 3, 250, 5_000, 100_000, 1e9]) {
      const hint = h.history.pollIntervalMs("varied", e, 1_000);
      expect(hint).toBeGreaterThanOrEqual(bounds.minPollIntervalMs);
      expect(hint).toBeLessThanOrEqual(bounds.maxPollIntervalMs);
    }
  });

  it("a rule's own pollIntervalMs wins", () => {
    const h = clocked();
    for (let i = 0; i < 10; i++) call(h, "pinned", 30 * 60_000);
    const timing = h.history.begin(
      "pinned",
      { thresholdMs: THRESHOLD, pollIntervalMs: 700, pollIntervalPinned: true },
      false,
    );
    expect(timing?.pollIntervalMs()).toBe(700);
  });
});

describe("what a call contributes (CallTiming)", () => {
  const timingOf = (h: ReturnType<typeof clocked>, tool: string): CallTiming => {
    const t = h.history.begin(tool, DECISION, false);
    if (!t) throw new Error("off");
    return t;
  };

  it("an answer is a sample of the time since the plan, promoted or not; the first ending counts", () => {
    const h = clocked();
    const t = timingOf(h, "a");
    h.advance(8_000);
    t.answered();
    t.answered();
    t.cancelled();
    expect(h.history.estimate("a", DECISION)?.samples).toBe(1);
    expect(h.history.quantileMs("a", 0.5)).toBeGreaterThan(5_700);
    expect(h.history.quantileMs("a", 0.5)).toBeLessThan(11_400);
    expect(h.history.counts.plain).toBe(1);
  });

  it("a call cut before the threshold is not a sample; one cut after it counts as slow", () => {
    const h = clocked();
    const early = timingOf(h, "c");
    h.advance(1_000);
    early.cancelled();
    expect(h.history.estimate("c", DECISION)).toBeUndefined();
    const late = timingOf(h, "c");
    h.advance(7_000);
    late.cancelled();
    expect(h.history.estimate("c", DECISION)).toMatchObject({ samples: 1, slowShare: 1 });
  });

  it("a call that asked the client for input is not a sample", () => {
    const h = clocked();
    const t = timingOf(h, "ask");
    t.inputRequested(false);
    h.advance(60_000);
    t.answered();
    expect(h.history.estimate("ask", DECISION)).toBeUndefined();
  });

  it("counts each call once: at once, at the threshold (even if the answer raced the task), or plain", () => {
    const h = clocked();
    const a = timingOf(h, "x");
    a.promoted("atOnce");
    a.answered();
    const b = timingOf(h, "x");
    b.answered();
    b.promoted("atThreshold");
    const c = timingOf(h, "x");
    c.answered();
    h.history.begin("x", DECISION, true)?.answered();
    expect(h.history.counts).toEqual({ atOnce: 1, atThreshold: 1, plain: 2, eager: 0 });
  });
});

describe("planPromotion with a history", () => {
  const TASKS = "io.modelcontextprotocol/tasks";
  const req = (name: string, declared = true): ModernRequest =>
    ({
      kind: "request",
      id: 1,
      method: "tools/call",
      params: { name, arguments: {} },
      envelope: {
        clientCapabilities: declared ? { extensions: { [TASKS]: {} } } : {},
        protocolVersion: "2026-07-28",
        logLevel: undefined,
      },
    }) as unknown as ModernRequest;
  const rules: TaskRule[] = [
    { tool: "always_*", mode: "always" },
    { tool: "never_*", mode: "never" },
    { tool: "required_*", mode: "required" },
    { tool: "opted_out", mode: "auto", adaptive: false },
  ];
  const policy = new TaskPolicy(rules, {
    thresholdMs: THRESHOLD,
    ttlMs: 60_000,
    maxTtlMs: 60_000,
    pollIntervalMs: 1_000,
  });

  it("auto + declaring client + a tool known to be slow: an eager task whose refusal keeps the call plain", () => {
    const h = clocked();
    for (let i = 0; i < 10; i++) call(h, "slow_report", 30_000);
    const plan = planPromotion(req("slow_report"), policy, undefined, { history: h.history });
    expect(plan).toMatchObject({ kind: "task", eager: true, atOnce: true });
    if (plan.kind !== "task") throw new Error("expected a task plan");
    // The hint for a task created now: the remaining 30 s / 10 (within the bucket's resolution).
    expect(plan.timing?.pollIntervalMs()).toBeGreaterThan(2_500);
    expect(plan.timing?.pollIntervalMs()).toBeLessThan(3_600);
  });

  it("a tool without history races the threshold as before; a non-declaring client stays plain (and is timed)", () => {
    const h = clocked();
    expect(planPromotion(req("new_tool"), policy, undefined, { history: h.history })).toMatchObject({
      kind: "task",
      eager: false,
      atOnce: false,
    });
    for (let i = 0; i < 10; i++) call(h, "slow_report", 30_000);
    const plain = planPromotion(req("slow_report", false), policy, undefined, { history: h.history });
    expect(plain.kind).toBe("plain");
    expect(plain.kind === "plain" && plain.timing).toBeInstanceOf(CallTiming);
  });

  it("always, never and required ignore the history; a rule with adaptive false is left alone", () => {
    const h = clocked();
    for (const tool of ["always_x", "never_x", "required_x", "opted_out"])
      for (let i = 0; i < 10; i++) h.history.record(tool, 30_000);
    expect(planPromotion(req("always_x"), policy, undefined, { history: h.history })).toMatchObject({
      kind: "task",
      eager: true,
      atOnce: false,
    });
    expect(planPromotion(req("never_x"), policy, undefined, { history: h.history })).toMatchObject({ kind: "plain" });
    expect(planPromotion(req("required_x"), policy, undefined, { history: h.history })).toMatchObject({
      kind: "task",
      eager: true,
      atOnce: false,
    });
    const opted = planPromotion(req("opted_out"), policy, undefined, { history: h.history });
    expect(opted).toMatchObject({ kind: "task", eager: false, atOnce: false, timing: undefined });
  });

  it("without a history, plans are what they always were", () => {
    expect(planPromotion(req("anything"), policy)).toEqual({
      kind: "task",
      decision: policy.decide("anything"),
      eager: false,
      atOnce: false,
      timing: undefined,
    });
  });
});

describe("issue 26: the poll hint and the state follow the recent calls", () => {
  it("a tool that turned fast: its next immediate task hints a short poll, and its state goes immediate → plain", () => {
    const h = clocked();
    for (let i = 0; i < 8; i++) call(h, "t", 20_000);
    expect(h.history.estimate("t", DECISION)).toMatchObject({ state: "immediate", atOnce: true });
    expect(h.history.pollIntervalMs("t", 0, 1_000)).toBeGreaterThan(1_500);
    // One fast answer: still promoted at once (hysteresis), but polled at the fast pace (the minimum here).
    expect(call(h, "t", 100)).toBe(true);
    expect(h.history.atOnce("t", THRESHOLD)).toBe(true);
    expect(h.history.pollIntervalMs("t", 0, 1_000)).toBe(250);
    let calls = 0;
    while (call(h, "t", 100)) calls++;
    expect(calls).toBeLessThanOrEqual(4);
    expect(h.history.estimate("t", DECISION)).toMatchObject({ state: "plain", atOnce: false });
  });

  it("a tool most of whose recent calls run past the threshold, not yet at once, is at the threshold", () => {
    const h = clocked();
    for (let i = 0; i < 3; i++) call(h, "s", 20_000);
    expect(h.history.estimate("s", DECISION)).toMatchObject({ state: "threshold", atOnce: false });
  });
});
