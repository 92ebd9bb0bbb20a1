// Turns raw points into the figures the issue asks for: per scenario and target,
// each metric as an absolute and as ratios to direct, nginx and the floor.
import type { Point, Results } from "./results.js";
import type { TargetName } from "./targets.js";

export const REFERENCES = ["direct", "nginx", "floor"] as const satisfies readonly TargetName[];
type Reference = (typeof REFERENCES)[number];

export interface Metric {
  key: string;
  label: string;
  concurrency: number;
  digits: number;
  value(point: Point, direct: Point | undefined): number | null;
}

const latency = (key: "p50" | "p99", c: number): Metric => ({
  key: `${key}@${c}`,
  label: `${key} c=${c} ms`,
  concurrency: c,
  digits: 3,
  value: (p) => p.latencyMs[key],
});
const rps = (c: number): Metric => ({
  key: `rps@${c}`,
  label: `req/s c=${c}`,
  concurrency: c,
  digits: 0,
  value: (p) => p.rps,
});
const cpu = (c: number): Metric => ({
  key: `cpu@${c}`,
  label: `CPU µs/req c=${c}`,
  concurrency: c,
  digits: 1,
  value: (p) => p.cpu.proxyUsPerReq,
});

const METRICS: readonly Metric[] = [
  latency("p50", 1),
  latency("p99", 1),
  {
    key: "added@1",
    label: "added p50 ms",
    concurrency: 1,
    digits: 3,
    // What the proxy adds to a lone request: its p50 minus direct's p50 in the same run.
    value: (p, direct) =>
      p.target === "direct" || direct === undefined ? null : p.latencyMs.p50 - direct.latencyMs.p50,
  },
  rps(32),
  rps(64),
  cpu(1),
  cpu(32),
  cpu(64),
];

export interface Cell {
  value: number | null;
  ratio: Record<Reference, number | null>;
}

export interface Row {
  target: TargetName;
  cells: Record<string, Cell>;
}

function findPoint(points: readonly Point[], scenario: string, target: TargetName, c: number): Point | undefined {
  return points.find((p) => p.scenario === scenario && p.target === target && p.concurrency === c);
}

function metricValue(points: readonly Point[], scenario: string, target: TargetName, m: Metric): number | null {
  const point = findPoint(points, scenario, target, m.concurrency);
  if (point === undefined) return null;
  return m.value(point, findPoint(points, scenario, "direct", m.concurrency));
}

/** The metrics whose concurrency was measured in this scenario (e.g. no c=64 for server-everything). */
export function metricsFor(results: Results, scenario: string): Metric[] {
  const measured = new Set(results.points.filter((p) => p.scenario === scenario).map((p) => p.concurrency));
  return METRICS.filter((m) => measured.has(m.concurrency));
}

export function summarize(results: Results, scenario: string): Row[] {
  const targets = [...new Set(results.points.filter((p) => p.scenario === scenario).map((p) => p.target))];
  return targets.map((target) => {
    const cells: Record<string, Cell> = {};
    for (const m of METRICS) {
      const value = metricValue(results.points, scenario, target, m);
      const ratioTo = (ref: Reference): number | null => {
        const base = metricValue(results.points, scenario, ref, m);
        return value === null || base === null || base <= 0 || ref === target ? null : value / base;
      };
      cells[m.key] = { value, ratio: { direct: ratioTo("direct"), nginx: ratioTo("nginx"), floor: ratioTo("floor") } };
    }
    return { target, cells };
  });
}

export function formatNumber(value: number | null, digits: number): string {
  if (value === null) return "—";
  return digits === 0 ? Math.round(value).toLocaleString("en-US") : value.toFixed(digits);
}

export function formatRatio(value: number | null): string {
  return value === null ? "—" : value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

const NOISY_CORES = 0.25;

/** Points whose measurement is suspect: errors, or much other work on the machine meanwhile. */
export function warnings(results: Results): string[] {
  const out: string[] = [];
  for (const p of results.points) {
    if (p.errors.total > 0)
      out.push(
        `${p.scenario} / ${p.target} c=${p.concurrency}: ${p.errors.total} errors (${JSON.stringify(p.errors)})`,
      );
  }
  const noisy = results.points.filter((p) => p.cpu.foreignCores > NOISY_CORES || p.cpu.stealCores > NOISY_CORES);
  if (noisy.length > 0) {
    const loads = noisy.map((p) => p.cpu.foreignCores + p.cpu.stealCores).sort((a, b) => a - b);
    const median = loads[Math.floor(loads.length / 2)] ?? 0;
    const max = loads[loads.length - 1] ?? 0;
    const which =
      noisy.length <= 4 ? `: ${noisy.map((p) => `${p.scenario} / ${p.target} c=${p.concurrency}`).join(", ")}` : "";
    out.push(
      `${noisy.length} of ${results.points.length} points ran while other processes (or the hypervisor) took more than ${NOISY_CORES} cores ` +
        `(median ${median.toFixed(2)}, max ${max.toFixed(2)})${which}; their figures are noisy, compare within a row rather than across runs`,
    );
  }
  return out;
}
