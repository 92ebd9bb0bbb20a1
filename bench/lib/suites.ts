// The suites of `npm run bench -- SUITE` (bench/main.ts): each a file under bench/ that also runs alone.

/** Each suite: its file under bench/ and what it measures (for --help). */
export const SUITES: Readonly<Record<string, { file: string; about: string }>> = {
  tasks: { file: "tasks/run.ts", about: "promotion, tasks/get against its floor, memory per task (--store, --only)" },
  shared: { file: "tasks/shared.ts", about: "the Redis store and --workers beside the memory store (≈ 5 min)" },
  redis: { file: "redis-topologies.ts", about: "single node, Cluster, Sentinel, with and without WAIT (≈ 3 min)" },
  adaptive: { file: "tasks/adaptive.ts", about: "adaptive promotion: time to the handle, poll hints, Redis ops" },
  stdio: { file: "stdio.ts", about: "stdio upstreams: session start, RSS per session, echo over stdio" },
  "stdio-peers": { file: "stdio-peers.ts", about: "the stdio path against supergateway and mcp-proxy" },
  sessions: { file: "sessions.ts", about: "gateway-held sessions on every replica: forwarding, workers" },
  federation: { file: "federation.ts", about: "a federated endpoint's added cost" },
  observability: { file: "observability.ts", about: "metrics and tracing overhead (also run by the table)" },
  auth: { file: "auth.ts", about: "bearer JWT verification per request, with and without its cache" },
  startup: { file: "startup.ts", about: "start time and RSS of the built gateway (--dist PATH… to compare builds)" },
  upstreams: { file: "upstreams.ts", about: "serving many upstreams" },
  ratelimit: { file: "ratelimit.ts", about: "rate limits' cost" },
  catalog: { file: "catalog.ts", about: "catalog overrides and argument validation, in process" },
  pinning: { file: "pinning.ts", about: "pinned definitions: the check in process, and through a gateway" },
  credentials: { file: "credentials.ts", about: "a token-cache hit, a client-credentials fetch, a token exchange" },
  soak: { file: "soak.ts", about: "two replicas through Redis failovers and restarts (CI: npm run soak)" },
};

/** The suite named by the first argument or by --suite NAME (or --only NAME before any other option), and the rest. */
export function pickSuite(argv: readonly string[]): { suite: string | undefined; rest: string[]; src: boolean } {
  const rest = argv.filter((a) => a !== "--src");
  const src = rest.length !== argv.length;
  const first = rest[0];
  if (first !== undefined && !first.startsWith("-")) return { suite: first, rest: rest.slice(1), src };
  const i = rest.indexOf("--suite");
  if (i !== -1) return { suite: rest[i + 1], rest: [...rest.slice(0, i), ...rest.slice(i + 2)], src };
  return { suite: undefined, rest, src };
}
