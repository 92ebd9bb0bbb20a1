// `--workers N`: /status.json shows every worker (issue 23). Each worker's snapshot (server/metrics-routes.ts) is
// collected through the primary (metrics/cluster.ts) and merged here: what each process holds (running tasks,
// the oldest of them, sessions, streams, the last minute's counts) is summed over the workers; what they share
// (the store, the upstreams' health, the configuration) is the answering worker's.

interface Part {
  replica: string;
  tasks: { working: number; inputRequired: number };
  oldest: Array<{ ageSeconds: number }>;
  sessions: { legacy: number; pendingInputs: number; eventStreams: number; inFlight: number };
  lastMinute: { windowSeconds: number; counts: Record<string, number> } | null;
}

export function mergeStatus<T extends Part>(parts: readonly T[], oldest: number): T & { workers?: string[] } {
  const [first, ...rest] = parts;
  if (!first) throw new Error("no status to merge");
  if (rest.length === 0) return first;
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
    workers: parts.map((p) => p.replica),
  };
}
