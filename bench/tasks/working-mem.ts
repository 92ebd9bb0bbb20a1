// Memory per working task (issue 14): what one task whose upstream call is
// still running costs the gateway, sockets included, at several counts.
//
//   node --import tsx bench/tasks/working-mem.ts [--tasks 5000,10000] [--compiled] [--snapshot]
//
// For each count, a fresh legacy upstream (bench/tasks/legacy-upstream.ts) and
// a fresh gateway (memory store, rule `always` for the tool `hold`, one
// upstream connection per call): a warm-up, then RSS and the live heap (after
// a forced GC, bench/tasks/mem-probe.ts), then N tasks whose calls the
// upstream holds open (SSE headers sent, no answer), then the same figures.
// Per task = (after - before) / N. `--snapshot` also writes a V8 heap snapshot
// of the gateway before and after (bench/out/working-*.heapsnapshot), for
// bench/tasks/heap-diff.ts. Prints one JSON line per count and a table.
// The open-files limit must exceed N + 1,000 (each call holds one socket in
// the gateway and one in the upstream).
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { OUT_DIR } from '../lib/paths.js';
import { installCleanup, setChildLifetime, stopAll } from '../lib/procs.js';
import { heapReport, memoryOf, nodePid, openFiles, startGateway, startLegacyUpstream, upstreamStats } from './children.js';
import type { HeapReport, Memory } from './children.js';
import { createTasks, McpClient } from './client.js';
import { kill } from './run.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '5000,10000' },
    compiled: { type: 'boolean', default: false },
    snapshot: { type: 'boolean', default: false },
  },
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const SNAPSHOT_SIGNAL = 'SIGWINCH';

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
  await waitFor('the heap snapshot', 300_000, async () => {
    file = readdirSync(OUT_DIR).find((f) => f.endsWith('.heapsnapshot') && !existing.has(f));
    // Complete once its closing "]}" is written.
    return file !== undefined && readFileSync(join(OUT_DIR, file)).subarray(-2).toString() === ']}';
  });
  if (file !== undefined) renameSync(join(OUT_DIR, file), join(OUT_DIR, `working-${name}.heapsnapshot`));
}

interface Point {
  tasks: number;
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
  const upstream = await startLegacyUpstream();
  const gateway = await startGateway(
    `gateway-working-${n}`,
    upstream.url,
    {
      upstream: { connections: n + 2_000 },
      tasks: { rules: [{ tool: 'promoted', mode: 'always' }, { tool: 'hold', mode: 'always' }, { tool: 'plain', mode: 'never' }], maxTasks: n + 1_000, maxTasksPerCaller: n + 1_000 },
    },
    join(OUT_DIR, `working-mem-${n}.json`),
    { memProbe: true, compiled: values.compiled, nodeArgs: values.snapshot ? [`--heapsnapshot-signal=${SNAPSHOT_SIGNAL}`, `--diagnostic-dir=${OUT_DIR}`] : [] },
  );
  const client = new McpClient(gateway.url, 64);
  try {
    const pid = nodePid(gateway.child, '/main.');
    // Warm-up: completed tasks and plain calls, so that code and pools are in place before "before".
    await createTasks(client, 500, 64, 'promoted', { size: 1024 });
    for (let i = 0; i < 500; i += 64) await Promise.all(Array.from({ length: 64 }, () => client.callTool('plain', { size: 1024 })));
    await sleep(1_500);
    const before = memoryOf(pid);
    const heapBefore = await heapReport(gateway.child, pid);
    if (values.snapshot) await snapshot(pid, `${n}-before`);
    const { calls } = await upstreamStats(upstream.url);
    await createTasks(client, n, 64, 'hold', { hold: true });
    await waitFor(`the upstream to hold ${n} calls`, 120_000, async () => (await upstreamStats(upstream.url)).held >= n);
    await sleep(2_000);
    const after = memoryOf(pid);
    const fds = openFiles(pid);
    const heapAfter = await heapReport(gateway.child, pid);
    if (values.snapshot) await snapshot(pid, `${n}-after`);
    const stats = await upstreamStats(upstream.url);
    if (stats.calls - calls < n) throw new Error(`only ${stats.calls - calls} upstream calls for ${n} tasks`);
    const per = (a: number, b: number): number => Math.round((a - b) / n);
    return {
      tasks: n,
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
  }
}

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(3_600);
  const counts = values.tasks.split(',').map(Number);
  const points: Point[] = [];
  for (const n of counts) {
    const point = await measure(n);
    process.stdout.write(`${JSON.stringify(point)}\n`);
    points.push(point);
  }
  const MiB = 1024 * 1024;
  process.stdout.write('\n| tasks | RSS before MiB | RSS after MiB | RSS/task B | RSS/task after GC B | live heap/task B | external/task B | open fds |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n');
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
