// `--workers N`: one scrape shows every worker (issue 23). node:cluster hands a scrape of the shared port to one
// worker; that worker asks the primary, which collects every worker's registries over IPC with prom-client's
// AggregatorRegistry and answers the merged text. Counters and histograms are summed; per-process gauges carry
// each worker's `replica` label (the default process metrics too), so they stay one series per worker; the
// store's gauges, the same in every worker, are aggregated with max (their `aggregator`), never summed.
import cluster from "node:cluster";
import { randomBytes } from "node:crypto";
import { AggregatorRegistry, type Registry } from "prom-client";

/** A worker asks the primary for every worker's metrics. */
const METRICS_REQUEST = "mcp-task-gateway:metrics";
/** The primary's answer: the merged text, or why there is none. */
const METRICS_ANSWER = "mcp-task-gateway:metrics-text";

interface Answer {
  type: typeof METRICS_ANSWER;
  id: string;
  text?: string;
  error?: string;
}

function isMessage(m: unknown, type: string): m is { type: string; id: string } {
  return typeof m === "object" && m !== null && (m as { type?: unknown }).type === type;
}

/** How long a worker waits for the merged scrape before it answers with its own numbers. */
const CLUSTER_SCRAPE_MS = 5_000;

/**
 * In a worker: `registries` answer the primary's collection, and the returned render asks the primary for every
 * worker's metrics (falling back on `local`, this worker's alone, when the primary does not answer in time).
 * Outside a worker: `local` itself.
 */
export function clusterRender(registries: () => Registry[], local: () => Promise<string>): () => Promise<string> {
  if (!cluster.isWorker || !process.send) return local;
  // Constructing one installs prom-client's answer to the primary's collection; setRegistries says what it reads.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries(registries());
  const waiting = new Map<string, (answer: Answer | undefined) => void>();
  process.on("message", (m: unknown) => {
    if (!isMessage(m, METRICS_ANSWER)) return;
    waiting.get(m.id)?.(m as Answer);
  });
  return async () => {
    const id = randomBytes(8).toString("hex");
    const answer = await new Promise<Answer | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), CLUSTER_SCRAPE_MS);
      timer.unref();
      waiting.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      process.send?.({ type: METRICS_REQUEST, id }, undefined, {}, (err: Error | null) => {
        if (err) resolve(undefined);
      });
    });
    waiting.delete(id);
    return answer?.text ?? (await local());
  };
}

/** In the primary: answers every worker's scrape request with the merged metrics of all workers. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker, m: unknown) => {
    if (!isMessage(m, METRICS_REQUEST)) return;
    const reply = (answer: Omit<Answer, "type" | "id">): void => {
      if (worker.isConnected())
        worker.send({ type: METRICS_ANSWER, id: m.id, ...answer }, (err: Error | null) => void err);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => reply({ error: (err as Error).message }),
    );
  });
}
