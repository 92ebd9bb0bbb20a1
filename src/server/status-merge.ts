// `--workers N`: /status.json shows every worker (issue 23). Each worker's snapshot (server/metrics-routes.ts) is
// collected through the primary (metrics/cluster.ts) and merged here: what each process holds (running tasks,
// the oldest of them, sessions, streams, the last minute's counts) is summed over the workers; what they share
// (the store, the upstreams' health, the configuration) is the answering worker's. `workers` lists each worker:
// its id (the `worker` of its log lines), pid, replica, the tasks it runs, and its own last reload (each worker
// reloads for itself, so one may have taken a SIGHUP that another refused).
import type { StatusReload, StatusWorker } from "../metrics/status-page.js";

interface Part {
  replica: string;
  worker?: { worker: number | null; pid: number } | undefined;
  reload: StatusReload;
  tasks: { working: number; inputRequired: number };
  oldest: Array<{ ageSeconds: number }>;
  sessions: { legacy: number; pendingInputs: number; eventStreams: number; inFlight: number };
  lastMinute: { windowSeconds: number; counts: Record<string, number> } | null;
}

function workerRow(p: Part): StatusWorker {
  return {
    worker: p.worker?.worker ?? null,
    pid: p.worker?.pid ?? 0,
    replica: p.replica,
    tasks: { working: p.tasks.working, inputRequired: p.tasks.inputRequired },
    reload: { lastSuccessAt: p.reload.lastSuccessAt, failures: p.reload.failures, lastOk: p.reload.last?.ok ?? true },
  };
}

export function mergeStatus<T extends Part>(parts: readonly T[], oldest: number): T & { workers?: StatusWorker[] } {
  const [first, ...rest] = parts;
  if (!first) throw new Error("no status to merge");
  // One process, or a worker alone (the primary did not answer): its own row, under --workers.
  if (rest.length === 0) return first.worker ? { ...first, workers: [workerRow(first)] } : first;
  const sum = (read: (p: T) => number): number => parts.reduce((n, p) => n + read(p), 0);
  const minutes = parts.map((p) => p.lastMinute);
  const lastMinute = minutes.every((m) => m !== null)
    ? {
        windowSeconds: Math.max(...minutes.map((m) => m.windowSeconds)),
        counts: Object.fromEntries(
          Object.keys(minutes[0]?.counts ?? {}).map((k) => [k, minutes.reduce((n, m) => n + (m.counts[k] ?? 0), 0)]),
        ),
      }
    : null;
  return {
    ...first,
    tasks: {
      ...first.tasks,
      working: sum((p) => p.tasks.working),
      inputRequired: sum((p) => p.tasks.inputRequired),
    },
    oldest: parts
      .flatMap((p) => p.oldest)
      .sort((a, b) => b.ageSeconds - a.ageSeconds)
      .slice(0, oldest),
    sessions: {
      legacy: sum((p) => p.sessions.legacy),
      pendingInputs: sum((p) => p.sessions.pendingInputs),
      eventStreams: sum((p) => p.sessions.eventStreams),
      inFlight: sum((p) => p.sessions.inFlight),
    },
    lastMinute,
    workers: [...parts].sort((a, b) => (a.worker?.worker ?? 0) - (b.worker?.worker ?? 0)).map(workerRow),
  };
}
