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

/** A worker asks the primary for every worker's status snapshot; the primary collects one from each. */
const STATUS_REQUEST = "mcp-task-gateway:status";
const STATUS_COLLECT = "mcp-task-gateway:status-collect";
const STATUS_PART = "mcp-task-gateway:status-part";
const STATUS_ANSWER = "mcp-task-gateway:status-parts";
let statusAnswered = false;

/**
 * In a worker: answers the primary's status collection with `local()`, and returns a gather that asks the
 * primary for every worker's (this worker's alone when the primary does not answer in time). Outside a worker:
 * `local()` alone.
 */
export function clusterStatus<T>(local: () => Promise<T>): () => Promise<T[]> {
  // One gateway per worker: the first to ask answers the primary (another, in the same worker, is served alone).
  if (!cluster.isWorker || !process.send || statusAnswered) return async () => [await local()];
  statusAnswered = true;
  const waiting = new Map<string, (parts: T[]) => void>();
  process.on("message", (m: unknown) => {
    if (isMessage(m, STATUS_COLLECT)) {
      void local().then(
        (part) => process.send?.({ type: STATUS_PART, id: m.id, part }, undefined, {}, (err: Error | null) => void err),
        () => undefined,
      );
    } else if (isMessage(m, STATUS_ANSWER)) {
      waiting.get(m.id)?.((m as unknown as { parts: T[] }).parts);
    }
  });
  return async () => {
    const id = randomBytes(8).toString("hex");
    const parts = await new Promise<T[] | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), CLUSTER_SCRAPE_MS);
      timer.unref();
      waiting.set(id, (p) => {
        clearTimeout(timer);
        resolve(p);
      });
      process.send?.({ type: STATUS_REQUEST, id }, undefined, {}, (err: Error | null) => {
        if (err) resolve(undefined);
      });
    });
    waiting.delete(id);
    return parts && parts.length > 0 ? parts : [await local()];
  };
}

/** In the primary: collects a status snapshot from every worker for the one that asked (what answers in 5 s). */
export function serveClusterStatus(): void {
  const gathering = new Map<string, { parts: unknown[]; left: number; done: () => void }>();
  cluster.on("message", (worker, m: unknown) => {
    if (isMessage(m, STATUS_PART)) {
      const g = gathering.get(m.id);
      if (!g) return;
      g.parts.push((m as unknown as { part: unknown }).part);
      if (--g.left === 0) g.done();
      return;
    }
    if (!isMessage(m, STATUS_REQUEST)) return;
    const id = m.id;
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w?.isConnected());
    const g = { parts: [] as unknown[], left: workers.length, done: () => {} };
    const timer = setTimeout(() => g.done(), CLUSTER_SCRAPE_MS);
    g.done = () => {
      clearTimeout(timer);
      gathering.delete(id);
      if (worker.isConnected())
        worker.send({ type: STATUS_ANSWER, id, parts: g.parts }, (err: Error | null) => void err);
    };
    gathering.set(id, g);
    for (const w of workers) w?.send({ type: STATUS_COLLECT, id }, (err: Error | null) => void err);
    if (workers.length === 0) g.done();
  });
}
