// A Prometheus histogram whose series are plain counters the hot path increments, handed to prom-client's
// registry in its own format at scrape time. prom-client's Histogram hashes a series' labels into a string on
// every observe(), even through a child from labels(): about 1 % of a pass-through request's CPU, for the
// upstream latency histogram every upstream request feeds. Here a handle holds its series, and observing is a
// bucket search and three additions. The exposition is prom-client's own (same values, order and labels);
// test/unit/series-histogram.test.ts compares the two.

/** One label set's counts: per bucket (not cumulative), the sum and the count. */
interface Series {
  readonly labels: Record<string, string>;
  readonly buckets: number[];
  sum: number;
  count: number;
}

/** What prom-client's registry reads of a metric (its get() and getForPromString()). */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  exemplar?: null | undefined;
}

interface MetricData {
  name: string;
  help: string;
  type: "histogram";
  values: MetricValue[];
  aggregator: "sum";
}

export interface HistogramSeries {
  observe(value: number): void;
}

export class SeriesHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** By label values joined with NUL, in the order they were first observed (as prom-client lists them). */
  private readonly series = new Map<string, Series>();
  /** Bumped by reset(): a handle holding a series from before looks it up again. */
  private generation = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly upperBounds: readonly number[],
  ) {}

  /** A handle on the series of these label values (in labelNames' order); the series exists once observed. */
  labels(...values: string[]): HistogramSeries {
    const key = values.join("\0");
    let held: Series | undefined;
    let heldIn = -1;
    return {
      observe: (value) => {
        if (!Number.isFinite(value)) return;
        // Opened at the first observation, and again after a reset(), which forgets every series as prom-client's does.
        if (held === undefined || heldIn !== this.generation) {
          held = this.open(key, values);
          heldIn = this.generation;
        }
        const series = held;
        const bounds = this.upperBounds;
        for (let i = 0; i < bounds.length; i++) {
          if (value <= (bounds[i] as number)) {
            (series.buckets[i] as number) += 1;
            break;
          }
        }
        series.sum += value;
        series.count += 1;
      },
    };
  }

  private open(key: string, values: readonly string[]): Series {
    let series = this.series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ""));
      series = { labels, buckets: this.upperBounds.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    return series;
  }

  reset(): void {
    this.series.clear();
    this.generation += 1;
  }

  /** The text exposition's form: each value's own labels (le) apart from the series' (sharedLabels). */
  getForPromString(): Promise<MetricData> {
    const values: MetricValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.buckets[i] as number;
        values.push({
          labels: { le },
          sharedLabels: s.labels,
          value: cumulative,
          metricName: bucketName,
          exemplar: null,
        });
      });
      values.push(
        { labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: bucketName, exemplar: null },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count`, exemplar: undefined },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** The JSON form (getMetricsAsJSON, the workers' aggregation): every value with all its labels. */
  async get(): Promise<MetricData> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...v.labels, ...sharedLabels } }));
    return data;
  }
}
