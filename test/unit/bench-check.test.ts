// The pure logic of the benchmark regression guard (bench/lib/check.ts, issue 14):
// ratios to the floor, verdicts against the baseline, the baseline file, calibration.
// No timing is measured here; the figures are made up.
import { describe, expect, it } from "vitest";
import {
  boundVerdict,
  calibrate,
  checkMetrics,
  compare,
  DEFAULT_MARGIN,
  exitCodeOf,
  median,
  parseBaseline,
  passRatios,
  passThroughRatios,
  renderCheck,
  serializeBaseline,
  summarizePass,
  tasksGetRatios,
  updateRatios,
  verdictOf,
  worsening,
  type Baseline,
} from "../../bench/lib/check.js";
import type { Point } from "../../bench/lib/results.js";
import type { TargetName } from "../../bench/lib/targets.js";
import type { TasksGet } from "../../bench/tasks/results.js";
import type { LoadPoint } from "../../bench/lib/load.js";

function point(scenario: string, target: TargetName, rps: number, cpuUs: number, round?: number, errors = 0): Point {
  return {
    scenario,
    target,
    concurrency: 64,
    ...(round !== undefined && { round }),
    threads: 1,
    durationSec: 3,
    requests: rps * 3,
    rps,
    latencyMs: { p50: 1, p90: 2, p99: 3, p999: 4, mean: 1, max: 5 },
    errors: { connect: 0, read: 0, write: 0, status: errors, timeout: 0, total: errors },
    cpu: { proxyUsPerReq: cpuUs, upstreamUsPerReq: 10, wrkUsPerReq: 5, foreignCores: 0, irqCores: 0, stealCores: 0 },
  };
}

function load(rps: number, cpuUs: number, errors = 0): LoadPoint {
  return {
    requests: rps * 3,
    rps,
    p50: 1,
    p90: 2,
    p99: 3,
    p999: 4,
    mean: 1,
    errors,
    bytesPerResponse: 1600,
    gatewayCpuUs: cpuUs,
    upstreamCpuUs: 0,
    wrkCpuUs: 20,
    foreignCores: 0,
    irqCores: 0,
    stealCores: 0,
  };
}

function baseline(metrics: Baseline["metrics"]): Baseline {
  return { version: 1, about: "", updated: { date: "d", command: "c", machine: "m" }, calibration: null, metrics };
}

describe("median", () => {
  it("takes the middle value, or the mean of the two middle ones", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe("ratios to the floor", () => {
  it("pairs gateway and floor per round: req/s and CPU per request", () => {
    const points = [
      point("json-1k", "gateway", 8000, 100, 0),
      point("json-1k", "floor", 10000, 50, 0),
      point("json-1k", "gateway", 9000, 90, 1),
      point("json-1k", "floor", 10000, 60, 1),
      point("json-100k", "gateway", 1, 1, 0),
    ];
    const r = passThroughRatios(points, "json-1k", 64);
    expect(r.rps).toEqual([0.8, 0.9]);
    expect(r.cpu).toEqual([2, 1.5]);
  });

  it("treats points without a round as round 0", () => {
    const r = passThroughRatios(
      [point("sse-1k", "gateway", 500, 20), point("sse-1k", "floor", 1000, 10)],
      "sse-1k",
      64,
    );
    expect(r).toEqual({ rps: [0.5], cpu: [2] });
  });

  it("leaves out a round with errors, a missing partner, other targets and other concurrencies", () => {
    const points = [
      point("json-1k", "gateway", 8000, 100, 0, 3),
      point("json-1k", "floor", 10000, 50, 0),
      point("json-1k", "gateway", 8000, 100, 1),
      point("json-1k", "nginx", 12000, 30, 1),
      { ...point("json-1k", "floor", 10000, 50, 1), concurrency: 32 },
    ];
    expect(passThroughRatios(points, "json-1k", 64)).toEqual({ rps: [], cpu: [] });
  });

  it("takes tasks/get rounds, or the single point and floor", () => {
    const single: TasksGet = {
      ids: 10,
      checkedBodyBytes: 1,
      point: load(7000, 120),
      floor: load(10000, 80),
      stillCompleted: 1,
      sampled: 1,
    };
    expect(tasksGetRatios(single)).toEqual({ rps: [0.7], cpu: [1.5] });
    const rounds: TasksGet = {
      ...single,
      rounds: [
        { gateway: load(6000, 120), floor: load(10000, 60) },
        { gateway: load(8000, 100), floor: load(10000, 80, 2) },
        { gateway: load(9000, 90) },
      ],
    };
    expect(tasksGetRatios(rounds)).toEqual({ rps: [0.6], cpu: [2] });
    const old: TasksGet = {
      ids: 10,
      checkedBodyBytes: 1,
      point: load(7000, 120),
      reference: load(10000, 80),
      stillCompleted: 1,
      sampled: 1,
    };
    expect(tasksGetRatios(old)).toEqual({ rps: [], cpu: [] });
  });

  it("summarizes a pass per metric as the median of its rounds, null when none", () => {
    const points = [0, 1, 2].flatMap((round) => [
      point("json-1k", "gateway", [7, 8, 9][round] ?? 0, 10, round),
      point("json-1k", "floor", 10, 5, round),
    ]);
    const figures = summarizePass(passRatios(points, null));
    expect(figures["json-1k/rps@64"]).toBeCloseTo(0.8);
    expect(figures["json-1k/cpu@64"]).toBe(2);
    expect(figures["sse-100k/rps@64"]).toBeNull();
    expect("tasks-get/rps@64" in figures).toBe(false);
  });
});

describe("verdicts", () => {
  it("measures worsening in the bad direction of each metric", () => {
    expect(worsening("higher", 0.8, 0.72)).toBeCloseTo(0.1);
    expect(worsening("higher", 0.8, 0.88)).toBeCloseTo(-0.1);
    expect(worsening("lower", 2, 2.2)).toBeCloseTo(0.1);
    expect(worsening("lower", 2, 1.8)).toBeCloseTo(-0.1);
  });

  it("is worse only beyond the margin, better beyond it the other way", () => {
    expect(verdictOf("higher", 0.8, 0.75, 0.1)).toBe("ok");
    expect(verdictOf("higher", 0.8, 0.7, 0.1)).toBe("worse");
    expect(verdictOf("higher", 0.8, 0.9, 0.1)).toBe("better");
    expect(verdictOf("lower", 2, 2.1, 0.1)).toBe("ok");
    expect(verdictOf("lower", 2, 2.3, 0.1)).toBe("worse");
    expect(verdictOf("lower", 2, 1.7, 0.1)).toBe("better");
    expect(verdictOf("lower", 2, 2, 0)).toBe("ok");
  });

  it("says missing without a figure and new without a baseline", () => {
    expect(verdictOf("higher", 0.8, null, 0.1)).toBe("missing");
    expect(verdictOf("higher", undefined, 0.8, 0.1)).toBe("new");
  });

  it("compares every metric and fails on worse or missing, not on better or new", () => {
    const metrics = checkMetrics(false);
    const b = baseline({
      "json-1k/rps@64": { ratio: 0.8, margin: 0.1 },
      "json-1k/cpu@64": { ratio: 2, margin: 0.1 },
    });
    const rows = compare(b, { "json-1k/rps@64": 0.85, "json-1k/cpu@64": 2.05 }, metrics);
    expect(rows).toHaveLength(8);
    expect(rows[0]).toMatchObject({ key: "json-1k/rps@64", baseline: 0.8, now: 0.85, margin: 0.1, verdict: "ok" });
    expect(rows[0]?.change).toBeCloseTo(0.0625);
    expect(rows[2]).toMatchObject({ key: "json-100k/rps@64", baseline: null, now: null, verdict: "missing" });
    expect(exitCodeOf(rows)).toBe(1);
    expect(exitCodeOf(rows.slice(0, 2))).toBe(0);
    const worse = compare(b, { "json-1k/rps@64": 0.6, "json-1k/cpu@64": 1 }, metrics).slice(0, 2);
    expect(worse.map((r) => r.verdict)).toEqual(["worse", "better"]);
    expect(exitCodeOf(worse)).toBe(1);
    const fresh = compare(baseline({}), { "json-1k/rps@64": 0.8 }, metrics).slice(0, 1);
    expect(fresh[0]?.verdict).toBe("new");
    expect(exitCodeOf(fresh)).toBe(0);
  });

  it("judges a metric with a fixed bound against the bound, not the baseline's margin", () => {
    const bounded = [{ key: "b", label: "bounded ÷ floor", better: "lower" as const, bound: 3 }];
    // 2.5× a baseline of 1 is far beyond a 10 % margin, but within the bound; 3.5 is beyond it.
    const b = baseline({ b: { ratio: 1, margin: 0.1 } });
    const ok = compare(b, { b: 2.5 }, bounded);
    expect(ok[0]).toMatchObject({ baseline: 1, now: 2.5, margin: null, bound: 3, verdict: "ok" });
    expect(ok[0]?.change).toBeCloseTo(1.5);
    expect(exitCodeOf(ok)).toBe(0);
    expect(compare(b, { b: 3.5 }, bounded)[0]?.verdict).toBe("worse");
    // Without a baseline entry the bound still decides; without a figure it is missing.
    expect(compare(baseline({}), { b: 0.9 }, bounded)[0]).toMatchObject({ baseline: null, verdict: "ok" });
    expect(compare(baseline({}), { b: 45 }, bounded)[0]?.verdict).toBe("worse");
    expect(exitCodeOf(compare(baseline({}), {}, bounded))).toBe(1);
    expect(boundVerdict("higher", 0.5, 0.4)).toBe("worse");
    expect(boundVerdict("higher", 0.5, 0.6)).toBe("ok");
    expect(renderCheck(ok)).toMatch(/bounded ÷ floor\s+lower\s+1\.000\s+2\.500\s+\+150\.0 %\s+fixed ≤ 3\s+ok/);
  });

  it("renders a row per metric with its verdict", () => {
    const rows = compare(
      baseline({ "json-1k/rps@64": { ratio: 0.8, margin: 0.1 } }),
      { "json-1k/rps@64": 0.6 },
      checkMetrics(false),
    ).slice(0, 1);
    const text = renderCheck(rows);
    expect(text).toContain("baseline");
    expect(text).toMatch(/json-1k req\/s c=64 ÷ floor\s+higher\s+0\.800\s+0\.600\s+-25\.0 %\s+10\.0 %\s+WORSE/);
  });
});

describe("the baseline file", () => {
  it("round-trips what it serializes", () => {
    const b = baseline({
      "json-1k/rps@64": { ratio: 0.8, margin: 0.12, passes: [0.79, 0.8, 0.81], maxDeviation: 0.0125 },
    });
    expect(parseBaseline(serializeBaseline(b))).toEqual(b);
    const withTree = { ...b, updated: { ...b.updated, tree: "abc123 + uncommitted src/ changes" } };
    expect(parseBaseline(serializeBaseline(withTree))).toEqual(withTree);
  });

  it("refuses what it cannot trust, saying why", () => {
    expect(() => parseBaseline("{")).toThrow(/not JSON/);
    expect(() => parseBaseline("[]")).toThrow(/JSON object/);
    expect(() => parseBaseline('{"version":2,"metrics":{}}')).toThrow(/version 2/);
    expect(() => parseBaseline('{"version":1}')).toThrow(/"metrics"/);
    expect(() => parseBaseline('{"version":1,"metrics":{"a":{"ratio":0,"margin":0.1}}}')).toThrow(/a: ratio/);
    expect(() => parseBaseline('{"version":1,"metrics":{"a":{"ratio":1,"margin":1}}}')).toThrow(/a: margin/);
    expect(() => parseBaseline('{"version":1,"metrics":{"a":{"ratio":1}}}')).toThrow(/a: margin/);
  });

  it("fills what an older or hand-written file leaves out", () => {
    const b = parseBaseline('{"version":1,"metrics":{"a":{"ratio":1.5,"margin":0.2}}}');
    expect(b).toEqual({
      version: 1,
      about: "",
      updated: { date: "", command: "", machine: "" },
      calibration: null,
      metrics: { a: { ratio: 1.5, margin: 0.2 } },
    });
  });
});

describe("calibration and update", () => {
  const metrics = checkMetrics(false).slice(0, 2);

  it("takes the median of the passes and the max deviation × safety as the margin", () => {
    const passes = [
      { "json-1k/rps@64": 0.8, "json-1k/cpu@64": 2 },
      { "json-1k/rps@64": 0.76, "json-1k/cpu@64": 2 },
      { "json-1k/rps@64": 0.84, "json-1k/cpu@64": null },
    ];
    const out = calibrate(passes, metrics, 2, 0.03);
    expect(out["json-1k/rps@64"]).toEqual({ ratio: 0.8, margin: 0.1, passes: [0.8, 0.76, 0.84], maxDeviation: 0.05 });
    // No spread at all still leaves the minimum margin.
    expect(out["json-1k/cpu@64"]).toMatchObject({ ratio: 2, margin: 0.03, maxDeviation: 0 });
  });

  it("rounds the margin up to a whole per cent and leaves out metrics never measured", () => {
    const out = calibrate(
      [{ "json-1k/rps@64": 1 }, { "json-1k/rps@64": 1.031 }, { "json-1k/rps@64": 0.99 }],
      metrics,
      1.5,
      0.01,
    );
    expect(out["json-1k/rps@64"]?.margin).toBe(0.05);
    expect(out["json-1k/cpu@64"]).toBeUndefined();
  });

  it("--update writes new ratios and keeps each margin; a new metric gets the default", () => {
    const old = baseline({ "json-1k/rps@64": { ratio: 0.8, margin: 0.07, passes: [0.8], maxDeviation: 0 } });
    const out = updateRatios(old, { "json-1k/rps@64": 0.91234567, "json-1k/cpu@64": 1.5 }, metrics);
    expect(out).toEqual({
      "json-1k/rps@64": { ratio: 0.9123, margin: 0.07 },
      "json-1k/cpu@64": { ratio: 1.5, margin: DEFAULT_MARGIN },
    });
    // A metric this pass could not measure keeps its old entry.
    expect(updateRatios(old, { "json-1k/rps@64": null }, metrics)).toEqual({
      "json-1k/rps@64": old.metrics["json-1k/rps@64"],
    });
  });

  it("lists the tasks/get ratios only when they are measured", () => {
    expect(checkMetrics(false).map((m) => m.key)).not.toContain("tasks-get/rps@64");
    expect(checkMetrics(true).map((m) => m.key)).toEqual(
      expect.arrayContaining(["tasks-get/rps@64", "tasks-get/cpu@64"]),
    );
    expect(checkMetrics(true)).toHaveLength(10);
  });
});
