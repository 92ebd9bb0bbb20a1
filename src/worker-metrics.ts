// One scrape shows every worker (`--workers N`). node:cluster hands each connection to one worker, so a
// scrape of /metrics on the shared port reached one worker at random. Now the worker that gets it asks the
// primary, which asks every worker for its metrics (prom-client's AggregatorRegistry over IPC) and answers
// with their aggregate:
//   - counters and histograms are summed;
//   - per-process gauges carry a `replica` label (each worker is a replica of its own), so their series stay
//     apart: one per worker;
//   - a gauge without one says the same in every process (the store's counts, the config's upstreams), so it
//     is aggregated with max rather than counted once per worker.
// A worker that cannot get the aggregate (the primary does not answer in time) serves its own metrics, with
// a comment line saying so, rather than failing the scrape.
import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

const REQUEST = "mcp-task-gateway:metrics";
const ANSWER = "mcp-task-gateway:metrics-answer";
/** How long a worker waits for the primary's aggregate (prom-client's own per-worker wait is 5 s). */
const ANSWER_TIMEOUT_MS = 6_000;

interface MetricsRequest {
  type: typeof REQUEST;
  id: number;
}
interface MetricsAnswer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

const isRequest = (m: unknown): m is MetricsRequest =>
  typeof m === "object" && m !== null && (m as { type?: unknown }).type === REQUEST;
const isAnswer = (m: unknown): m is MetricsAnswer =>
  typeof m === "object" && m !== null && (m as { type?: unknown }).type === ANSWER;

/** In the primary: answers every worker's request for the aggregate of all workers' metrics. */
export function serveWorkerMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker: Worker, message: unknown) => {
    if (!isRequest(message)) return;
    const reply = (answer: Omit<MetricsAnswer, "type" | "id">): void => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer }, (err) => void err);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => reply({ error: (err as Error).message }),
    );
  });
}

/**
 * In a worker: `registries` are what the primary collects from this worker (prom-client answers its requests),
 * and the returned render asks the primary for every worker's aggregate, `own` serving when it cannot.
 */
export function aggregatedRender(registries: Registry[], own: () => Promise<string>): () => Promise<string> {
  AggregatorRegistry.setRegistries(registries);
  // Constructing one installs prom-client's listener that answers the primary's requests in this worker.
  new AggregatorRegistry();
  const waiting = new Map<number, (answer: MetricsAnswer | undefined) => void>();
  let nextId = 0;
  process.on("message", (message: unknown) => {
    if (isAnswer(message)) waiting.get(message.id)?.(message);
  });
  return async () => {
    const id = nextId++;
    const answer = await new Promise<MetricsAnswer | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ANSWER_TIMEOUT_MS);
      waiting.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      process.send?.({ type: REQUEST, id } satisfies MetricsRequest);
    });
    waiting.delete(id);
    if (answer?.text !== undefined) return answer.text;
    const why = answer?.error ?? "the primary did not answer in time";
    return `# mcp-task-gateway: this worker's metrics only (${why.replace(/\s+/g, " ")})\n${await own()}`;
  };
}
