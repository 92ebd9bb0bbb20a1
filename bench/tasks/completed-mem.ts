// RSS of a gateway holding many finished tasks against its byte budget
// (issue 14: "100,000 finished 1 KB results under a 64 MiB budget: RSS at most
// idle + budget + 64 MB"), and where RSS beyond the live store goes: V8 heap
// kept after the creation's garbage, or native memory malloc keeps.
//
//   node --import tsx bench/tasks/completed-mem.ts [--tasks 100000] [--store-mb 64] [--compiled]
//        [--node-args=--max-old-space-size=192] [--idle-sec 30] [--traffic-sec 60]
//   MALLOC_ARENA_MAX=2 node --import tsx bench/tasks/completed-mem.ts …   (glibc: fewer malloc arenas)
//
// A fresh legacy upstream and gateway (memory store, rule `always`): a warm-up,
// "idle" (RSS with nothing stored), then N calls that each become a task and
// complete at once with a 1 KB result, then RSS: 2 s after the last one, after a
// forced full GC (bench/lib/mem-probe.ts), every 5 s over an idle period (V8's
// memory reducer and malloc trimming happen when the process is idle), and after
// a last forced GC (and 1 s later, once V8 has unmapped what it freed). Prints one JSON line and two tables: the RSS figures, and
// where RSS sits (malloc, V8's pages, other anonymous memory, files) at idle and at the end.
// `--traffic-sec N`: before the idle period, N more seconds of the same creations (64 at a time, each task
// finished and evicting an older one), RSS read every second: the figure of a gateway that never idles (V8 gives
// heap pages back only when it does). Its table gives the gateway's CPU per task created (what a heap setting
// costs), the median and the largest RSS of the traffic's second half, and the heap as it stood when the
// traffic stopped (before any forced GC).
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cpuSeconds } from "../lib/cpu.js";
import { OUT_DIR } from "../lib/paths.js";
import { installCleanup, setChildLifetime, stopAll, type Child } from "../lib/procs.js";
import { fromDist } from "../lib/gateway-program.js";
import { heapReport, memoryOf, nodePid, startGateway, startLegacyUpstream, upstreamStats } from "./children.js";
import { createTasks, McpClient } from "./client.js";
import { kill } from "./run.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "100000" },
    "store-mb": { type: "string", default: "64" },
    compiled: { type: "boolean", default: false },
    "node-args": { type: "string", default: "" },
    "idle-sec": { type: "string", default: "30" },
    "traffic-sec": { type: "string", default: "0" },
  },
});

const MiB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number): number => Math.round((bytes / MiB) * 10) / 10;

/** The process's largest mappings by resident size (/proc/PID/smaps): which allocator holds the RSS. */
function largestMappings(pid: number, count: number): { mapping: string; rssKiB: number }[] {
  const out: { mapping: string; rssKiB: number }[] = [];
  let current = "";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
      const [range, , , , , ...name] = line.split(/\s+/);
      const [lo, hi] = (range ?? "").split("-").map((h) => parseInt(h, 16));
      current = `${name.join(" ") || "[anon]"} ${Math.round(((hi ?? 0) - (lo ?? 0)) / 1024)} KiB`;
    } else if (line.startsWith("Rss:")) out.push({ mapping: current, rssKiB: Number(line.split(/\s+/)[1]) });
  }
  // Anonymous mappings summed by their size: V8's heap pages are 256 KiB each; malloc arenas reserve 64 MiB.
  const bySize = new Map<string, number>();
  for (const m of out) {
    if (!m.mapping.startsWith("[anon]")) continue;
    const key = `[anon ×] ${m.mapping.slice("[anon] ".length)}`;
    bySize.set(key, (bySize.get(key) ?? 0) + m.rssKiB);
  }
  const grouped = [...bySize].map(([mapping, rssKiB]) => ({ mapping, rssKiB }));
  return [...out, ...grouped].sort((a, b) => b.rssKiB - a.rssKiB).slice(0, count);
}

/**
 * The process's RSS by where it sits (/proc/PID/smaps), in bytes: glibc's main arena ([heap]), anonymous
 * mappings of 256 KiB (V8's heap pages), other anonymous mappings (thread arenas, V8's large objects and code,
 * stacks), and mapped files (the node binary, libraries). Read at idle and at the end, the growth of each is
 * where the tasks' RSS went.
 */
function rssByKind(pid: number): { mallocHeap: number; v8Pages: number; otherAnon: number; files: number } {
  const out = { mallocHeap: 0, v8Pages: 0, otherAnon: 0, files: 0 };
  let kind: keyof typeof out = "files";
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
      const [range, , , , , ...name] = line.split(/\s+/);
      const [lo, hi] = (range ?? "").split("-").map((h) => parseInt(h, 16));
      const label = name.join(" ");
      if (label === "[heap]") kind = "mallocHeap";
      else if (label !== "" && !label.startsWith("[anon")) kind = "files";
      else kind = (hi ?? 0) - (lo ?? 0) === 256 * 1024 ? "v8Pages" : "otherAnon";
    } else if (line.startsWith("Rss:")) out[kind] += Number(line.split(/\s+/)[1]) * 1024;
  }
  return out;
}

/**
 * `seconds` more of the creations, RSS read every second; then the heap as it stands (the probe's figures from
 * before its forced GC). Undefined for 0 s.
 */
async function keepCreating(client: McpClient, gateway: Child, pid: number, seconds: number) {
  if (!(seconds > 0)) return undefined;
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(memoryOf(pid).rss), 1_000);
  const until = performance.now() + seconds * 1000;
  const cpuBefore = cpuSeconds(pid);
  let created = 0;
  try {
    while (performance.now() < until) {
      await createTasks(client, 1_000, 64, "promoted", { size: 1024 });
      created += 1_000;
    }
  } finally {
    clearInterval(sampler);
  }
  const cpuUsPerTask = Math.round(((cpuSeconds(pid) - cpuBefore) / created) * 1e6);
  const heap = (await heapReport(gateway, pid)).before;
  const late = samples.slice(Math.floor(samples.length / 2)).sort((a, b) => a - b);
  return {
    seconds,
    created,
    cpuUsPerTask,
    samples,
    medianRss: late[Math.floor(late.length / 2)] ?? Number.NaN,
    maxRss: late.at(-1) ?? Number.NaN,
    heap,
  };
}

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(3_600);
  // A fresh checkout has no bench/out yet: the gateway's config file goes there.
  mkdirSync(OUT_DIR, { recursive: true });
  const n = Number(values.tasks);
  const storeBytes = Number(values["store-mb"]) * MiB;
  const idleSec = Number(values["idle-sec"]);
  const nodeArgs = values["node-args"].split(" ").filter((a) => a !== "");
  const upstream = await startLegacyUpstream();
  const gateway = await startGateway(
    "gateway-completed",
    upstream.url,
    {
      tasks: { rules: [{ tool: "promoted", mode: "always" }], storeBytes, maxTasks: 10_000, maxTasksPerCaller: 10_000 },
    },
    join(OUT_DIR, "completed-mem.json"),
    { memProbe: true, compiled: values.compiled || fromDist(), nodeArgs },
  );
  const client = new McpClient(gateway.url, 64);
  try {
    const pid = nodePid(gateway.child, "/main.");
    await createTasks(client, 500, 64, "promoted", { size: 1024 });
    await sleep(1_500);
    const idle = (await heapReport(gateway.child, pid)).afterGc;
    const idleRss = rssByKind(pid);
    const { calls } = await upstreamStats(upstream.url);
    const started = performance.now();
    await createTasks(client, n, 64, "promoted", { size: 1024 });
    while ((await upstreamStats(upstream.url)).calls - calls < n) await sleep(200);
    const createSec = (performance.now() - started) / 1000;
    await sleep(2_000);
    const afterCreate = memoryOf(pid);
    const traffic = await keepCreating(client, gateway.child, pid, Number(values["traffic-sec"]));
    const gc = await heapReport(gateway.child, pid);
    const idleSamples: number[] = [];
    for (let t = 0; t < idleSec; t += 5) {
      await sleep(5_000);
      idleSamples.push(memoryOf(pid).rss);
    }
    const final = await heapReport(gateway.child, pid);
    // V8 unmaps the pages a full GC freed from a background thread, after the GC: RSS read at once still
    // counts them (100 MiB and more when the GC shrank the heap). Read it again once they are gone.
    await sleep(1_000);
    const settled = memoryOf(pid);
    const aim = idle.rss + storeBytes + 64 * MiB;
    const mappings = largestMappings(pid, 12);
    const finalRss = rssByKind(pid);
    const point = {
      tasks: n,
      storeBytes,
      nodeArgs,
      mallocArenaMax: process.env["MALLOC_ARENA_MAX"] ?? null,
      compiled: values.compiled || fromDist(),
      createSec: Math.round(createSec * 10) / 10,
      idle,
      afterCreate,
      gc,
      idleSamples,
      final,
      settled,
      aimRss: aim,
      mappings,
      rssByKind: { idle: idleRss, final: finalRss },
      traffic,
    };
    process.stdout.write(`${JSON.stringify(point)}\n\n`);
    process.stdout.write(
      "| idle RSS MiB | RSS after creating MiB | after GC MiB | after idle MiB | after idle + GC MiB | 1 s later MiB | heap used / total after MiB | external MiB | aim (idle + budget + 64) MiB | met |\n",
    );
    process.stdout.write("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    const last = idleSamples.at(-1) ?? final.before.rss;
    process.stdout.write(
      `| ${mib(idle.rss)} | ${mib(afterCreate.rss)} | ${mib(gc.afterGc.rss)} | ${mib(last)} | ${mib(final.afterGc.rss)} | ${mib(settled.rss)} | ${mib(final.afterGc.heapUsed)} / ${mib(final.afterGc.heapTotal)} | ${mib(final.afterGc.external)} | ${mib(aim)} | ${settled.rss <= aim ? "yes" : "no"} |\n`,
    );
    if (traffic) {
      process.stdout.write(
        "\n| traffic s | tasks created | gateway CPU µs/task | RSS median, 2nd half MiB | RSS max, 2nd half MiB | heap used / total at its end MiB | external MiB | met (median ≤ aim) |\n|---:|---:|---:|---:|---:|---:|---:|---|\n",
      );
      process.stdout.write(
        `| ${traffic.seconds} | ${traffic.created} | ${traffic.cpuUsPerTask} | ${mib(traffic.medianRss)} | ${mib(traffic.maxRss)} | ${mib(traffic.heap.heapUsed)} / ${mib(traffic.heap.heapTotal)} | ${mib(traffic.heap.external)} | ${traffic.medianRss <= aim ? "yes" : "no"} |\n`,
      );
    }
    const kinds = Object.keys(idleRss) as (keyof typeof idleRss)[];
    process.stdout.write(`\n| RSS MiB | ${kinds.join(" | ")} |\n|---|${kinds.map(() => "---:").join("|")}|\n`);
    for (const [label, at] of [
      ["idle", idleRss],
      ["end", finalRss],
    ] as const)
      process.stdout.write(`| ${label} | ${kinds.map((k) => mib(at[k])).join(" | ")} |\n`);
  } finally {
    await client.close();
    await kill(gateway.child);
    await kill(upstream.child);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`completed-mem failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void stopAll());
