// The latency-vs-concurrency plot of issue 5 item 6, from a run's points.
import type { Results } from "./results.js";
import { lineChartSvg } from "./svg.js";
import type { Series } from "./svg.js";
import type { TargetName } from "./targets.js";

const STYLE: readonly { target: TargetName; color: string; dashed?: boolean }[] = [
  { target: "direct", color: "#555555" },
  { target: "gateway", color: "#d62728" },
  { target: "nginx", color: "#2ca02c" },
  // The floor is context rather than one of the three paths the issue asks for, so it is drawn dashed.
  { target: "floor", color: "#1f77b4", dashed: true },
];

/** One panel per scenario measured at three or more concurrencies; '' if there is none. */
export function latencyPlot(results: Results): string {
  const panels = results.scenarios
    .filter((s) => new Set(results.points.filter((p) => p.scenario === s.id).map((p) => p.concurrency)).size >= 3)
    .map((s) => ({
      title: s.label,
      series: STYLE.map((st): Series => ({
        name: st.target,
        color: st.color,
        dashed: st.dashed ?? false,
        points: results.points
          .filter((p) => p.scenario === s.id && p.target === st.target)
          .map((p) => ({ x: p.concurrency, y: p.latencyMs.p50 })),
      })).filter((series) => series.points.length > 0),
    }));
  if (panels.length === 0) return "";
  return lineChartSvg(panels, {
    title: `p50 latency against concurrency (${results.meta.mode} run, ${results.meta.date.slice(0, 10)})`,
    xLabel: "concurrent connections (wrk -c)",
    yLabel: "p50 latency, ms (log scale)",
  });
}
