// Plain-text tables for the terminal.
import type { Results } from "./results.js";
import { formatNumber, formatRatio, metricsFor, REFERENCES, summarize, warnings } from "./summary.js";
import type { Cell, Metric } from "./summary.js";

export function renderTextTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** "0.290 (3.58 · 2.64 · 1.02)": the value, then its ratios to direct, nginx and floor. */
export function cellText(cell: Cell | undefined, metric: Metric): string {
  if (cell === undefined || cell.value === null) return "—";
  return `${formatNumber(cell.value, metric.digits)} (${REFERENCES.map((r) => formatRatio(cell.ratio[r])).join(" · ")})`;
}

export function renderResultsText(results: Results): string {
  const out: string[] = [];
  for (const scenario of results.scenarios) {
    const rows = summarize(results, scenario.id);
    if (rows.length === 0) continue;
    const metrics = metricsFor(results, scenario.id);
    out.push(`\n${scenario.id}: ${scenario.label}   [value (÷direct · ÷nginx · ÷floor)]`);
    out.push(
      renderTextTable(
        ["metric", ...rows.map((r) => r.target)],
        metrics.map((m) => [m.label, ...rows.map((r) => cellText(r.cells[m.key], m))]),
      ),
    );
  }
  for (const skip of results.skipped) out.push(`skipped ${skip.target} in ${skip.scenario}: ${skip.reason}`);
  const warn = warnings(results);
  if (warn.length > 0) out.push("", "warnings:", ...warn.map((w) => `  ${w}`));
  return out.join("\n");
}
