// The upstream latency histogram's own series (src/metrics/series-histogram.ts) expose exactly what prom-client's
// Histogram exposes for the same observations: text and JSON, bucket edges, +Inf, sums, series order, a reset.
import { describe, expect, it } from "vitest";
import { Histogram, Registry, type Metric } from "prom-client";
import { SeriesHistogram } from "../../src/metrics/series-histogram.js";

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];
const LABELS = ["upstream", "method", "status_class"];
const OBSERVATIONS: Array<[string[], number]> = [
  [["a", "POST", "2xx"], 0.0004],
  [["a", "POST", "2xx"], 0.001],
  [["b", "GET", "error"], 0.5],
  [["a", "POST", "2xx"], 0.0101],
  [["a", "POST", "5xx"], 12],
  [["b", "GET", "error"], 0.1],
  [["a", "POST", "2xx"], 0.3333333],
];

function pair(): { theirs: Registry; ours: Registry; observe: (labels: string[], v: number) => void; reset(): void } {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: "h_seconds",
    help: "help",
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [theirs],
  });
  const mine = new SeriesHistogram("h_seconds", "help", LABELS, BUCKETS);
  ours.registerMetric(mine as unknown as Metric);
  // Handles are taken once and kept, as the upstream observer does.
  const handles = new Map<string, { a: { observe(v: number): void }; b: { observe(v: number): void } }>();
  return {
    theirs,
    ours,
    observe(labels, v) {
      const key = labels.join(" ");
      let h = handles.get(key);
      if (!h) handles.set(key, (h = { a: reference.labels(...labels), b: mine.labels(...labels) }));
      h.a.observe(v);
      h.b.observe(v);
    },
    reset() {
      reference.reset();
      mine.reset();
    },
  };
}

describe("SeriesHistogram", () => {
  it("exposes what prom-client's Histogram exposes, as text and as JSON", async () => {
    const p = pair();
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    for (const [labels, v] of OBSERVATIONS) p.observe(labels, v);
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    expect(await p.ours.getMetricsAsJSON()).toEqual(await p.theirs.getMetricsAsJSON());
  });

  it("forgets every series on a reset, and a kept handle counts again from zero", async () => {
    const p = pair();
    for (const [labels, v] of OBSERVATIONS) p.observe(labels, v);
    p.reset();
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    p.observe(["b", "GET", "error"], 0.2);
    p.observe(["a", "POST", "2xx"], 2);
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
  });

  it("creates no series for a handle that never observed", async () => {
    const ours = new SeriesHistogram("h_seconds", "help", LABELS, BUCKETS);
    ours.labels("a", "POST", "2xx");
    expect((await ours.get()).values).toEqual([]);
  });
});
