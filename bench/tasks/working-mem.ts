// Memory per working task (issue 14): what one task whose upstream call is
// still running costs the gateway, sockets included, at several counts.
//
//   node --import tsx bench/tasks/working-mem.ts [--tasks 5000,10000] [--compiled] [--snapshot] [--h2 [--h2-streams 100]]
//
// For each count, a fresh legacy upstream (bench/tasks/legacy-upstream.ts) and
// a fresh gateway (memory store, rule `always` for the tool `hold`, one
// upstream connection per call): a warm-up, then RSS and the live heap (after
// a forced GC, bench/lib/mem-probe.ts), then N tasks whose calls the
// upstream holds open (SSE headers sent, no answer), then the same figures.
// Per task = (after - before) / N. `--snapshot` also writes a V8 heap snapshot
// of the gateway before and after (bench/out/working-*.heapsnapshot), for
// bench/investigations/heap-diff.ts. Prints one JSON line per count and a table.
// The open-files limit must exceed N + 1,000 (each call holds one socket in
// the gateway and one in the upstream).
//
// `--h2`: the upstream serves HTTPS through node:http2 (h2 by ALPN, HTTP/1.1
// allowed; a throwaway self-signed certificate made with the openssl CLI in a
// temporary directory) and the gateway is configured with upstream.http2,
// upstream.caFile and upstream.http2MaxStreams = `--h2-streams` (default 100,
// the gateway's default): the held calls share ⌈N / streams⌉ connections, so
// neither the open-files limit nor the ephemeral port range bounds N.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Agent, request } from "undici";
import { OUT_DIR } from "../lib/paths.js";
import { installCleanup, setChildLifetime, stopAll } from "../lib/procs.js";
import { fromDist } from "../lib/gateway-program.js";
import {
  heapReport,
  memoryOf,
  startBenchServer,
  nodePid,
  openFiles,
  startGateway,
  startLegacyUpstream,
  upstreamStats,
} from "./children.js";
import type { HeapReport, Memory, Running, UpstreamStats } from "./children.js";
import { createTasks, McpClient } from "./client.js";
import { kill } from "./run.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "5000,10000" },
    compiled: { type: "boolean", default: false },
    snapshot: { type: "boolean", default: false },
    h2: { type: "boolean", default: false },
    "h2-streams": { type: "string", default: "100" },
  },
});
const h2Streams = Number(values["h2-streams"]);

const progress = (what: string): void => void process.stderr.write(`working-mem: ${what}\n`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const SNAPSHOT_SIGNAL = "SIGWINCH";

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

/** Signals the gateway to write a heap snapshot and renames it once written. */
async function snapshot(pid: number, name: string): Promise<void> {
  const existing = new Set(readdirSync(OUT_DIR));
  process.kill(pid, SNAPSHOT_SIGNAL);
  let file: string | undefined;
  await waitFor("the heap snapshot", 300_000, async () => {
    file = readdirSync(OUT_DIR).find((f) => f.endsWith(".heapsnapshot") && !existing.has(f));
    // Complete once its closing "]}" is written.
    return file !== undefined && readFileSync(join(OUT_DIR, file)).subarray(-2).toString() === "]}";
  });
  if (file !== undefined) renameSync(join(OUT_DIR, file), join(OUT_DIR, `working-${name}.heapsnapshot`));
}

/** The upstream of one count: plain HTTP/1.1, or HTTPS with h2 (`--h2`) and the CA the gateway must trust. */
interface BenchUpstream extends Running {
  stats(): Promise<UpstreamStats>;
  gatewayUpstream: Record<string, unknown>;
  dispose(): void;
}

async function startUpstream(n: number): Promise<BenchUpstream> {
  if (!values.h2) {
    const plain = await startLegacyUpstream();
    return {
      ...plain,
      stats: () => upstreamStats(plain.url),
      gatewayUpstream: { connections: n + 2_000 },
      dispose: () => undefined,
    };
  }
  const dir = mkdtempSync(join(tmpdir(), "bench-h2-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=bench-upstream",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const { child, url } = await startBenchServer(
    "legacy-upstream-h2",
    "bench/tasks/legacy-upstream.ts",
    ["--tls", dir],
    "https",
  );
  // The harness's own reads of /stats, over HTTPS with the same CA.
  const agent = new Agent({ connect: { ca: readFileSync(join(dir, "cert.pem"), "utf8") } });
  const stats = async (): Promise<UpstreamStats> => {
    const res = await request(new URL("/stats", url), { dispatcher: agent, signal: AbortSignal.timeout(5_000) });
    const v = (await res.body.json()) as Record<string, unknown>;
    return { held: Number(v["held"]), calls: Number(v["calls"]), sessions: Number(v["sessions"]) };
  };
  return {
    url,
    child,
    stats,
    gatewayUpstream: { connections: n + 2_000, http2: true, http2MaxStreams: h2Streams, caFile: join(dir, "cert.pem") },
    dispose: () => {
      void agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Point {
  tasks: number;
  upstream: string;
  before: Memory;
  after: Memory;
  heapBefore: HeapReport;
  heapAfter: HeapReport;
  openFiles: number;
  rssPerTask: number;
  rssAfterGcPerTask: number;
  heapPerTask: number;
  externalPerTask: number;
}

async function measure(n: number): Promise<Point> {
  const upstream = await startUpstream(n);
  const gateway = await startGateway(
    `gateway-working-${n}`,
    upstream.url,
    {
      upstream: upstream.gatewayUpstream,
      tasks: {
        rules: [
          { tool: "promoted", mode: "always" },
          { tool: "hold", mode: "always" },
          { tool: "plain", mode: "never" },
        ],
        maxTasks: n + 1_000,
        maxTasksPerCaller: n + 1_000,
      },
    },
    join(OUT_DIR, `working-mem-${n}.json`),
    {
      memProbe: true,
      compiled: values.compiled || fromDist(),
      nodeArgs: values.snapshot ? [`--heapsnapshot-signal=${SNAPSHOT_SIGNAL}`, `--diagnostic-dir=${OUT_DIR}`] : [],
    },
  );
  const client = new McpClient(gateway.url, 64);
  try {
    const pid = nodePid(gateway.child, "/main.");
    progress(`${n}: warming up (${upstream.url})`);
    // Warm-up: completed tasks and plain calls, so that code and pools are in place before "before".
    await createTasks(client, 500, 64, "promoted", { size: 1024 });
    for (let i = 0; i < 500; i += 64)
      await Promise.all(Array.from({ length: 64 }, () => client.callTool("plain", { size: 1024 })));
    await sleep(1_500);
    const before = memoryOf(pid);
    const heapBefore = await heapReport(gateway.child, pid);
    if (values.snapshot) await snapshot(pid, `${n}-before`);
    const { calls } = await upstream.stats();
    progress(`${n}: creating ${n} working tasks`);
    await createTasks(client, n, 64, "hold", { hold: true });
    // A call that failed (its task failed) never reaches the upstream: give up rather than wait forever.
    await waitFor(
      `the upstream to hold ${n} calls`,
      60_000 + 2 * n,
      async () => (await upstream.stats()).held >= n,
    ).catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message} (held ${(await upstream.stats()).held}); gateway output:\n${gateway.child.recentOutput()}`,
      );
    });
    await sleep(2_000);
    const after = memoryOf(pid);
    const fds = openFiles(pid);
    const heapAfter = await heapReport(gateway.child, pid);
    if (values.snapshot) await snapshot(pid, `${n}-after`);
    const stats = await upstream.stats();
    if (stats.calls - calls < n) throw new Error(`only ${stats.calls - calls} upstream calls for ${n} tasks`);
    const per = (a: number, b: number): number => Math.round((a - b) / n);
    return {
      tasks: n,
      upstream: values.h2 ? `h2 (${h2Streams} streams per connection)` : "HTTP/1.1",
      before,
      after,
      heapBefore,
      heapAfter,
      openFiles: fds,
      rssPerTask: per(after.rss, before.rss),
      rssAfterGcPerTask: per(heapAfter.afterGc.rss, heapBefore.afterGc.rss),
      heapPerTask: per(heapAfter.afterGc.heapUsed, heapBefore.afterGc.heapUsed),
      externalPerTask: per(heapAfter.afterGc.external, heapBefore.afterGc.external),
    };
  } finally {
    await client.close();
    await kill(gateway.child);
    await kill(upstream.child);
    upstream.dispose();
  }
}

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(3_600);
  const counts = values.tasks.split(",").map(Number);
  const points: Point[] = [];
  for (const n of counts) {
    const point = await measure(n);
    process.stdout.write(`${JSON.stringify(point)}\n`);
    points.push(point);
  }
  const MiB = 1024 * 1024;
  process.stdout.write(`\nupstream: ${points[0]?.upstream ?? ""}\n`);
  process.stdout.write(
    "\n| tasks | RSS before MiB | RSS after MiB | RSS/task B | RSS/task after GC B | live heap/task B | external/task B | open fds |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
  );
  for (const p of points) {
    process.stdout.write(
      `| ${p.tasks} | ${(p.before.rss / MiB).toFixed(1)} | ${(p.after.rss / MiB).toFixed(1)} | ${p.rssPerTask} | ${p.rssAfterGcPerTask} | ${p.heapPerTask} | ${p.externalPerTask} | ${p.openFiles} |\n`,
    );
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`working-mem failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void stopAll());
