// The regression guard of issue 14 (`npm run bench -- --check`): the gateway's
// figures as ratios to its floor, compared with the committed ones in
// bench/baseline.json. Ratios, not absolutes, because a ratio measured within
// seconds of its floor on the same machine survives a slower or busier machine
// far better than req/s does.
//
// Everything here is pure (no processes, no timing), so test/unit/bench-check.test.ts
// covers it; bench/run.ts does the measuring.
import type { TasksGet } from "../tasks/results.js";
import type { Point } from "./results.js";
import { renderTextTable } from "./table.js";

/** Which way is good: a throughput ratio should not fall, a CPU ratio should not rise. */
export type Better = "higher" | "lower";

export interface CheckMetric {
  key: string;
  label: string;
  better: Better;
  /**
   * A fixed limit the figure is judged against instead of the baseline's ratio and margin (a ceiling when lower is
   * better, a floor when higher is): for a figure that is either near its usual value or many times it, and spreads
   * too much between passes for a margin around the baseline to tell the two apart. --calibrate and --update still
   * record its ratio (and spread) in the baseline, for the change column and the record.
   */
  bound?: number;
}

/** The pass-through scenarios (bench/lib/scenarios.ts) the check measures, at one concurrency. */
export const CHECK_SCENARIOS = ["json-1k", "json-100k", "sse-1k", "sse-100k"] as const;
export const CHECK_CONCURRENCY = 64;
const TASKS_GET_KEY = "tasks-get";

/** Used for a metric that has never been calibrated (e.g. a new one after --update). */
export const DEFAULT_MARGIN = 0.15;
export const DEFAULT_SAFETY = 2;
export const DEFAULT_MIN_MARGIN = 0.03;

export function checkMetrics(withTasksGet: boolean): CheckMetric[] {
  const out: CheckMetric[] = [];
  for (const s of CHECK_SCENARIOS) {
    out.push({
      key: `${s}/rps@${CHECK_CONCURRENCY}`,
      label: `${s} req/s c=${CHECK_CONCURRENCY} ÷ floor`,
      better: "higher",
    });
    out.push({
      key: `${s}/cpu@${CHECK_CONCURRENCY}`,
      label: `${s} CPU/req c=${CHECK_CONCURRENCY} ÷ floor`,
      better: "lower",
    });
  }
  if (withTasksGet) {
    out.push({ key: `${TASKS_GET_KEY}/rps@64`, label: "tasks/get req/s c=64 ÷ get floor", better: "higher" });
    out.push({ key: `${TASKS_GET_KEY}/cpu@64`, label: "tasks/get CPU/get c=64 ÷ get floor", better: "lower" });
  }
  return out;
}

// ---------------------------------------------------------------------------
// The committed figures

export interface BaselineEntry {
  /** The gateway's figure ÷ its floor's. */
  ratio: number;
  /** Largest relative worsening that still counts as noise (0.1 = 10 %). */
  margin: number;
  /** The calibration passes' ratios this entry came from, if it was calibrated. */
  passes?: number[];
  /** Their largest relative deviation from their median. */
  maxDeviation?: number;
}

interface Calibration {
  date: string;
  command: string;
  passes: number;
  safety: number;
  minMargin: number;
  machine: string;
  /** Cores' worth of other processes' CPU during the measured points: median and max over every point. */
  otherLoad: { median: number; max: number };
  method: string;
}

export interface Baseline {
  version: 1;
  /** Free text: what the file is and how it was made (JSON has no comments). */
  about: string;
  /** When the ratios were last written, by which command, on which machine and tree (git HEAD, + uncommitted src/ changes). */
  updated: { date: string; command: string; machine: string; tree?: string };
  calibration: Calibration | null;
  /**
   * How the priced paths' margins (bench/lib/priced-paths.ts) were calibrated, when that was a run of its own
   * (--check --priced-only --calibrate N); absent when `calibration` covers them.
   */
  pricedCalibration?: Calibration;
  metrics: Record<string, BaselineEntry>;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isPositive = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v > 0;

/** Parses and checks bench/baseline.json; throws saying what is wrong. */
export function parseBaseline(text: string): Baseline {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`baseline is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isObj(value)) throw new Error("baseline must be a JSON object");
  if (value["version"] !== 1)
    throw new Error(`baseline version ${JSON.stringify(value["version"])} is not supported (want 1)`);
  const metrics = value["metrics"];
  if (!isObj(metrics)) throw new Error('baseline has no "metrics" object');
  const out: Record<string, BaselineEntry> = {};
  for (const [key, entry] of Object.entries(metrics)) {
    if (!isObj(entry)) throw new Error(`baseline metric ${key} is not an object`);
    if (!isPositive(entry["ratio"])) throw new Error(`baseline metric ${key}: ratio must be a positive number`);
    const margin = entry["margin"];
    if (typeof margin !== "number" || !Number.isFinite(margin) || margin < 0 || margin >= 1) {
      throw new Error(`baseline metric ${key}: margin must be a number in [0, 1)`);
    }
    out[key] = { ...(entry as unknown as BaselineEntry), ratio: entry["ratio"], margin };
  }
  const updated = isObj(value["updated"]) ? value["updated"] : {};
  return {
    version: 1,
    about: typeof value["about"] === "string" ? value["about"] : "",
    updated: {
      date: String(updated["date"] ?? ""),
      command: String(updated["command"] ?? ""),
      machine: String(updated["machine"] ?? ""),
      ...(typeof updated["tree"] === "string" && { tree: updated["tree"] }),
    },
    calibration: isObj(value["calibration"]) ? (value["calibration"] as unknown as Calibration) : null,
    ...(isObj(value["pricedCalibration"]) && {
      pricedCalibration: value["pricedCalibration"] as unknown as Calibration,
    }),
    metrics: out,
  };
}

export function serializeBaseline(b: Baseline): string {
  return `${JSON.stringify(b, null, 2)}\n`;
}

// ---------------------------------------------------------------------------
// From measured points to ratios

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? null) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

const ratioOf = (value: number | null | undefined, floor: number | null | undefined): number | null =>
  value == null || floor == null || !(floor > 0) || !(value > 0) ? null : value / floor;

/** Per round (gateway and floor measured back to back), the gateway's req/s and CPU per request ÷ the floor's. */
export function passThroughRatios(
  points: readonly Point[],
  scenario: string,
  concurrency: number,
): { rps: number[]; cpu: number[] } {
  const rounds = new Map<number, { gateway?: Point; floor?: Point }>();
  for (const p of points) {
    if (p.scenario !== scenario || p.concurrency !== concurrency || (p.target !== "gateway" && p.target !== "floor"))
      continue;
    const r = rounds.get(p.round ?? 0) ?? {};
    r[p.target] = p;
    rounds.set(p.round ?? 0, r);
  }
  const rps: number[] = [];
  const cpu: number[] = [];
  for (const { gateway, floor } of [...rounds.entries()].sort(([a], [b]) => a - b).map(([, r]) => r)) {
    if (gateway === undefined || floor === undefined || gateway.errors.total > 0 || floor.errors.total > 0) continue;
    const r = ratioOf(gateway.rps, floor.rps);
    const c = ratioOf(gateway.cpu.proxyUsPerReq, floor.cpu.proxyUsPerReq);
    if (r !== null) rps.push(r);
    if (c !== null) cpu.push(c);
  }
  return { rps, cpu };
}

/** The same for tasks/get against its floor (bench/tasks/get-floor.ts), whose CPU is read as the answering process's. */
export function tasksGetRatios(g: TasksGet): { rps: number[]; cpu: number[] } {
  const pairs = g.rounds ?? [{ gateway: g.point, ...(g.floor !== undefined && { floor: g.floor }) }];
  const rps: number[] = [];
  const cpu: number[] = [];
  for (const { gateway, floor } of pairs) {
    if (floor === undefined || gateway.errors > 0 || floor.errors > 0) continue;
    const r = ratioOf(gateway.rps, floor.rps);
    const c = ratioOf(gateway.gatewayCpuUs, floor.gatewayCpuUs);
    if (r !== null) rps.push(r);
    if (c !== null) cpu.push(c);
  }
  return { rps, cpu };
}

/** One check pass: every metric's ratio per round. */
export type PassRatios = Record<string, number[]>;

export function passRatios(points: readonly Point[], tasksGet: TasksGet | null): PassRatios {
  const out: PassRatios = {};
  for (const s of CHECK_SCENARIOS) {
    const r = passThroughRatios(points, s, CHECK_CONCURRENCY);
    out[`${s}/rps@${CHECK_CONCURRENCY}`] = r.rps;
    out[`${s}/cpu@${CHECK_CONCURRENCY}`] = r.cpu;
  }
  if (tasksGet !== null) {
    const r = tasksGetRatios(tasksGet);
    out[`${TASKS_GET_KEY}/rps@64`] = r.rps;
    out[`${TASKS_GET_KEY}/cpu@64`] = r.cpu;
  }
  return out;
}

/** A pass's figure per metric: the median of its rounds (null when none was measured). */
/** Per round, a ÷ b of the same round; a round where either side is missing, zero or not finite is left out. */
export function roundRatios(a: readonly number[], b: readonly number[]): number[] {
  return a.flatMap((x, i) => {
    const y = b[i];
    return y !== undefined && y > 0 && x > 0 && Number.isFinite(x / y) ? [x / y] : [];
  });
}

export function summarizePass(ratios: PassRatios): Record<string, number | null> {
  return Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, median(v)]));
}

// ---------------------------------------------------------------------------
// Verdicts

export type Verdict = "ok" | "better" | "worse" | "missing" | "new";

/**
 * How much worse `now` is than `baseline`, relative to the baseline: positive
 * is worse (a lower throughput ratio, a higher CPU ratio), negative is better.
 */
export function worsening(better: Better, baseline: number, now: number): number {
  return better === "higher" ? (baseline - now) / baseline : (now - baseline) / baseline;
}

/** The verdict of a figure with a fixed bound: beyond it is worse, anything within it ok. */
export function boundVerdict(better: Better, bound: number, now: number | null): Verdict {
  if (now === null) return "missing";
  return (better === "lower" ? now > bound : now < bound) ? "worse" : "ok";
}

export function verdictOf(better: Better, baseline: number | undefined, now: number | null, margin: number): Verdict {
  if (now === null) return "missing";
  if (baseline === undefined) return "new";
  const w = worsening(better, baseline, now);
  if (w > margin) return "worse";
  if (-w > margin) return "better";
  return "ok";
}

export interface CheckRow {
  key: string;
  label: string;
  better: Better;
  baseline: number | null;
  now: number | null;
  /** now ÷ baseline − 1 (signed; whether that is good depends on `better`). */
  change: number | null;
  margin: number | null;
  /** The metric's fixed bound, which decided the verdict in place of the margin (see CheckMetric.bound). */
  bound: number | null;
  verdict: Verdict;
}

export function compare(
  baseline: Baseline,
  now: Record<string, number | null>,
  metrics: readonly CheckMetric[],
): CheckRow[] {
  return metrics.map((m) => {
    const entry = baseline.metrics[m.key];
    const value = now[m.key] ?? null;
    return {
      key: m.key,
      label: m.label,
      better: m.better,
      baseline: entry?.ratio ?? null,
      now: value,
      change: entry === undefined || value === null ? null : value / entry.ratio - 1,
      margin: m.bound === undefined ? (entry?.margin ?? null) : null,
      bound: m.bound ?? null,
      verdict:
        m.bound === undefined
          ? verdictOf(m.better, entry?.ratio, value, entry?.margin ?? DEFAULT_MARGIN)
          : boundVerdict(m.better, m.bound, value),
    };
  });
}

/** 1 when any ratio worsened beyond its margin or could not be measured; a metric new to the baseline does not fail. */
export function exitCodeOf(rows: readonly CheckRow[]): 0 | 1 {
  return rows.some((r) => r.verdict === "worse" || r.verdict === "missing") ? 1 : 0;
}

const VERDICT_TEXT: Readonly<Record<Verdict, string>> = {
  ok: "ok",
  better: "better (consider --update)",
  worse: "WORSE",
  missing: "NOT MEASURED",
  new: "new (not in baseline)",
};

const fmtRatio = (r: number | null): string => (r === null ? "—" : r.toFixed(3));
const fmtPct = (r: number | null, sign: boolean): string =>
  r === null ? "—" : `${sign && r >= 0 ? "+" : ""}${(r * 100).toFixed(1)} %`;

export function renderCheck(rows: readonly CheckRow[]): string {
  return renderTextTable(
    ["ratio to the floor", "better", "baseline", "now", "change", "margin", "verdict"],
    rows.map((r) => [
      r.label,
      r.better,
      fmtRatio(r.baseline),
      fmtRatio(r.now),
      fmtPct(r.change, true),
      r.bound === null ? fmtPct(r.margin, false) : `fixed ${r.better === "lower" ? "≤" : "≥"} ${r.bound}`,
      VERDICT_TEXT[r.verdict],
    ]),
  );
}

// ---------------------------------------------------------------------------
// Writing the baseline

const roundTo = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * From N passes on an unchanged tree: each metric's ratio is the median of the
 * passes' figures, and its margin the largest relative deviation of a pass from
 * that median × `safety`, at least `minMargin` (rounded up to whole per cent).
 * A later single pass is one more draw of the same noise, so it should land
 * within the margin unless something changed.
 */
export function calibrate(
  passes: ReadonlyArray<Record<string, number | null>>,
  metrics: readonly CheckMetric[],
  safety = DEFAULT_SAFETY,
  minMargin = DEFAULT_MIN_MARGIN,
): Record<string, BaselineEntry> {
  const out: Record<string, BaselineEntry> = {};
  for (const m of metrics) {
    const values = passes.map((p) => p[m.key]).filter((v): v is number => typeof v === "number");
    const mid = median(values);
    if (mid === null) continue;
    const maxDeviation = Math.max(0, ...values.map((v) => Math.abs(v / mid - 1)));
    const margin = Math.min(0.95, Math.max(minMargin, Math.ceil(maxDeviation * safety * 100 - 1e-9) / 100));
    out[m.key] = {
      ratio: roundTo(mid, 4),
      margin,
      passes: values.map((v) => roundTo(v, 4)),
      maxDeviation: roundTo(maxDeviation, 4),
    };
  }
  return out;
}

/**
 * --update: the ratios from this pass, each metric keeping the margin (and
 * calibration) it had; a metric without one gets DEFAULT_MARGIN.
 */
export function updateRatios(
  old: Baseline | undefined,
  now: Record<string, number | null>,
  metrics: readonly CheckMetric[],
): Record<string, BaselineEntry> {
  const out: Record<string, BaselineEntry> = {};
  for (const m of metrics) {
    const value = now[m.key];
    const prev = old?.metrics[m.key];
    if (typeof value !== "number") {
      if (prev !== undefined) out[m.key] = prev;
      continue;
    }
    out[m.key] = { ratio: roundTo(value, 4), margin: prev?.margin ?? DEFAULT_MARGIN };
  }
  return out;
}
