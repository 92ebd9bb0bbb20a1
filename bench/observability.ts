// What metrics and tracing cost (issue 11): the gateway's CPU per request and its
// throughput, for the legacy pass-through (a 1 KB tools/call on a session) and
// tasks/get (64 pollers over 1,000 completed tasks), in three setups:
//
//   off                  metrics.enabled false, no tracing
//   metrics              metrics on (the default), no tracing
//   metrics + tracing    metrics on, and every span exported over OTLP/HTTP to a
//                        small receiver in this process (it drains and counts)
//
// Each setup gets a fresh gateway process per repeat; setups are interleaved
// within a repeat, so slow drifts of a shared machine spread over all three. The
// table shows medians over the repeats.
//
//   npm run bench -- observability                      3 repeats, 5 s per point
//   npm run bench -- observability --repeats 5 --duration 10 --write
//                                                    --write: rewrite the section in bench/RESULTS.md
// npm run bench runs it after the pass-through table (add --no-observability to skip it).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { findBinary, APT_HINT } from "./lib/binaries.js";
import { BENCH_DIR, OUT_DIR } from "./lib/paths.js";
import { exitAfter, installCleanup, setChildLifetime, stopAll } from "./lib/procs.js";
import { openSession } from "./lib/upstreams.js";
import { startGateway, startLegacyUpstream, type Running } from "./tasks/children.js";
import { createTasks, McpClient, resolveTasks } from "./tasks/client.js";
import { measureLoad, runLoad, type LoadPoint, type LoadSpec } from "./lib/load.js";
import { kill } from "./tasks/run.js";
import { PrometheusMetrics } from "../src/metrics/prometheus.js";

const HELP = `Usage: npm run bench -- observability [--repeats N] [--duration S] [--write]`;

type SetupName = "off" | "metrics" | "metrics + tracing";
type Workload = "pass-through" | "tasks/get";
const SETUPS: readonly SetupName[] = ["off", "metrics", "metrics + tracing"];
const WORKLOADS: readonly Workload[] = ["pass-through", "tasks/get"];
const CONCURRENCY = 64;
const TASKS = 1_000;
const RULES = [
  { tool: "promoted", mode: "always" },
  { tool: "plain", mode: "never" },
];

interface Options {
  repeats: number;
  durationSec: number;
  warmupSec: number;
  write: boolean;
}

export interface ObservabilityRow {
  setup: SetupName;
  workload: Workload;
  /** Medians over the repeats. */
  rps: number;
  gatewayCpuUs: number;
  p50Ms: number;
  p99Ms: number;
  /** Every repeat's gateway CPU per request (µs), to show the spread. */
  cpuRuns: number[];
  errors: number;
}

export interface ObservabilityResults {
  at: string;
  repeats: number;
  durationSec: number;
  concurrency: number;
  rows: ObservabilityRow[];
  /** Spans the receiver got, per request of the tracing runs. */
  spansPerRequest: number | null;
  /** Cores' worth of CPU used by other processes during the runs (median): above ~0.25 the figures are noisy. */
  foreignCores: number;
  /** What the metrics hooks of one pass-through request cost, measured in-process (µs, median of 5 rounds). */
  hookCostUs: number;
}

/**
 * The metrics work one pass-through request does, timed in a loop in this process: the request counter, the
 * upstream histogram, the observer's two clock reads and its extra await. Far less noisy than the end-to-end
 * difference, which the shared machine's noise swamps.
 */
export async function metricsHookCostUs(iterations = 200_000): Promise<number> {
  // The hooks only: no state is read at scrape time here.
  const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default"], replicaId: "bench-replica" });
  const upstream = metrics.upstreamObserver("default");
  const answer = { statusCode: 200 };
  const observed = async (sent: Promise<typeof answer>): Promise<typeof answer> => {
    const start = performance.now();
    const res = await sent;
    upstream.answered("POST", res.statusCode, (performance.now() - start) / 1000);
    return res;
  };
  const round = async (): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) {
      await observed(Promise.resolve(answer));
      metrics.request("mcp", "legacy", "tools/call", 200, "default");
    }
    const withHooks = performance.now() - t0;
    const t1 = performance.now();
    for (let i = 0; i < iterations; i++) await Promise.resolve(answer);
    const bare = performance.now() - t1;
    return ((withHooks - bare) / iterations) * 1000;
  };
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) rounds.push(await round());
  return Math.round(median(rounds) * 100) / 100;
}

/** A minimal OTLP/HTTP receiver: drains POST /v1/traces, counts spans, answers {}. */
async function startReceiver(): Promise<{ url: string; spans: () => number; close: () => Promise<void> }> {
  let spans = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      spans += body.split('"spanId"').length - 1;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function configOf(setup: SetupName, receiver: string): Record<string, unknown> {
  const tasks = { rules: RULES, maxTasks: TASKS + 1_000, maxTasksPerCaller: TASKS + 1_000 };
  switch (setup) {
    case "off":
      return { tasks, metrics: { enabled: false } };
    case "metrics":
      return { tasks, metrics: { enabled: true } };
    case "metrics + tracing":
      return { tasks, metrics: { enabled: true }, telemetry: { endpoint: receiver } };
  }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

async function measureSetup(
  setup: SetupName,
  upstream: Running,
  receiver: string,
  opts: Options,
  log: (line: string) => void,
): Promise<Record<Workload, LoadPoint>> {
  mkdirSync(OUT_DIR, { recursive: true });
  const safe = setup.replaceAll(/[^a-z]+/g, "-");
  const gateway = await startGateway(
    `gateway-${safe}`,
    upstream.url,
    configOf(setup, receiver),
    join(OUT_DIR, `observability-${safe}.json`),
  );
  const client = new McpClient(gateway.url, CONCURRENCY);
  try {
    // Pass-through: a legacy session through the gateway, byte for byte.
    const session = await openSession(gateway.url);
    const pass: LoadSpec = {
      url: gateway.url,
      script: { method: "tools/call", era: "legacy", name: "plain", args: { size: 1024 }, headers: session },
      concurrency: CONCURRENCY,
      threads: 1,
      durationSec: opts.durationSec,
    };
    await runLoad({ ...pass, durationSec: opts.warmupSec });
    log(`  ${setup}: pass-through`);
    const passPoint = await measureLoad(pass, gateway.child, upstream.child);

    // tasks/get: 1,000 completed tasks, polled by 64 clients.
    const { ids } = await createTasks(client, TASKS, CONCURRENCY, "promoted", { size: 1024 });
    for (let i = 0; ; i++) {
      const r = await resolveTasks(client, ids, CONCURRENCY);
      if (r.byStatus["completed"] === ids.length) break;
      if (i > 100) throw new Error("the tasks did not complete");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const idsFile = join(OUT_DIR, `observability-ids-${safe}.txt`);
    writeFileSync(idsFile, `${ids.join("\n")}\n`);
    const get: LoadSpec = {
      url: gateway.url,
      script: { method: "tasks/get", idsFile },
      concurrency: CONCURRENCY,
      threads: 1,
      durationSec: opts.durationSec,
    };
    await runLoad({ ...get, durationSec: opts.warmupSec });
    log(`  ${setup}: tasks/get`);
    const getPoint = await measureLoad(get, gateway.child, upstream.child);
    return { "pass-through": passPoint, "tasks/get": getPoint };
  } finally {
    await client.close();
    await kill(gateway.child);
  }
}

export async function runObservability(
  opts: Options,
  log: (line: string) => void = console.log,
): Promise<ObservabilityResults> {
  const upstream = await startLegacyUpstream();
  const receiver = await startReceiver();
  const points = new Map<string, LoadPoint[]>();
  let tracedRequests = 0;
  try {
    for (let r = 1; r <= opts.repeats; r++) {
      log(`repeat ${r} of ${opts.repeats}`);
      // Rotate the order, so no setup always runs first (or last) in a repeat.
      const order = SETUPS.map((_, i) => SETUPS[(i + r - 1) % SETUPS.length] as SetupName);
      for (const setup of order) {
        const got = await measureSetup(setup, upstream, receiver.url, opts, log);
        for (const w of WORKLOADS) {
          const key = `${setup}\0${w}`;
          points.set(key, [...(points.get(key) ?? []), got[w]]);
        }
        if (setup === "metrics + tracing") {
          // The batch exporter flushes on its own schedule; what arrived by now is a lower bound.
          tracedRequests += got["pass-through"].requests + got["tasks/get"].requests;
        }
      }
    }
  } finally {
    await receiver.close();
    await kill(upstream.child);
  }
  const rows: ObservabilityRow[] = [];
  const foreign: number[] = [];
  for (const setup of SETUPS) {
    for (const workload of WORKLOADS) {
      const runs = points.get(`${setup}\0${workload}`) ?? [];
      foreign.push(...runs.map((p) => p.foreignCores));
      rows.push({
        setup,
        workload,
        rps: Math.round(median(runs.map((p) => p.rps))),
        gatewayCpuUs: Math.round(median(runs.map((p) => p.gatewayCpuUs ?? 0)) * 10) / 10,
        p50Ms: Math.round(median(runs.map((p) => p.p50)) * 1000) / 1000,
        p99Ms: Math.round(median(runs.map((p) => p.p99)) * 1000) / 1000,
        cpuRuns: runs.map((p) => p.gatewayCpuUs ?? 0),
        errors: runs.reduce((n, p) => n + p.errors, 0),
      });
    }
  }
  return {
    at: new Date().toISOString(),
    repeats: opts.repeats,
    durationSec: opts.durationSec,
    concurrency: CONCURRENCY,
    rows,
    spansPerRequest: tracedRequests > 0 ? Math.round((receiver.spans() / tracedRequests) * 100) / 100 : null,
    foreignCores: Math.round(median(foreign) * 100) / 100,
    hookCostUs: await metricsHookCostUs(),
  };
}

export function renderObservability(res: ObservabilityResults): string {
  const base = new Map(res.rows.filter((r) => r.setup === "off").map((r) => [r.workload, r]));
  const lines = [
    `| workload | setup | req/s | gateway CPU per request | vs off | p50 | p99 | CPU per request, each repeat |`,
    `|---|---|---:|---:|---:|---:|---:|---|`,
  ];
  for (const r of res.rows) {
    const off = base.get(r.workload);
    const delta =
      off && r.setup !== "off" && off.gatewayCpuUs > 0
        ? `${(((r.gatewayCpuUs - off.gatewayCpuUs) / off.gatewayCpuUs) * 100).toFixed(1)} %`
        : "—";
    lines.push(
      `| ${r.workload} | ${r.setup} | ${r.rps} | ${r.gatewayCpuUs} µs | ${delta} | ${r.p50Ms} ms | ${r.p99Ms} ms | ${r.cpuRuns.join(", ")} µs${r.errors > 0 ? ` (${r.errors} errors)` : ""} |`,
    );
  }
  return lines.join("\n");
}

const START = "<!-- observability:start -->";
const END = "<!-- observability:end -->";

export function writeObservabilitySection(res: ObservabilityResults): void {
  const file = join(BENCH_DIR, "RESULTS.md");
  const existing = readFileSync(file, "utf8");
  const section = [
    START,
    `## Metrics and tracing overhead`,
    "",
    `Generated by \`npm run bench -- observability --repeats ${res.repeats} --duration ${res.durationSec} --write\` (also run by \`npm run bench\`) on ${res.at.slice(0, 10)}. ` +
      `Legacy pass-through (a 1 KB tools/call on one session) and tasks/get over ${TASKS} completed tasks, ${res.concurrency} connections, ` +
      `wrk on the same two cores; a fresh gateway per setup and repeat, setups interleaved; medians of ${res.repeats} runs of ${res.durationSec} s. ` +
      `Tracing exports every span over OTLP/HTTP to a receiver in the harness (${res.spansPerRequest ?? "?"} spans received per request). ` +
      `Other load on the machine during the runs: ${res.foreignCores} cores (median); the machine is shared, so differences of a few per cent are within the noise.`,
    "",
    renderObservability(res),
    "",
    `The end-to-end difference between "off" and "metrics" is below what this machine can resolve (see the spread of the repeats), so the metrics' own work is also timed in-process: ` +
      `the hooks of one pass-through request (request counter, upstream histogram, the upstream observer's clock reads and extra await) cost **${res.hookCostUs} µs**, ` +
      `${((res.hookCostUs / Math.max(1, res.rows.find((r) => r.setup === "off" && r.workload === "pass-through")?.gatewayCpuUs ?? 1)) * 100).toFixed(1)} % of the pass-through's CPU per request above ` +
      `(a tasks/get pays the request counter alone). Scrapes are not in the loop: they read the store once and run at Prometheus's interval.`,
    END,
  ].join("\n");
  const at = existing.indexOf(START);
  const end = existing.indexOf(END);
  const next =
    at !== -1 && end > at
      ? `${existing.slice(0, at)}${section}${existing.slice(end + END.length)}`
      : `${existing.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      repeats: { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      write: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (findBinary("wrk") === undefined) {
    console.error(`wrk is not installed; ${APT_HINT}`);
    return 1;
  }
  const opts: Options = {
    repeats: Number(values.repeats ?? 3),
    durationSec: Number(values.duration ?? 5),
    warmupSec: Number(values.warmup ?? 1),
    write: values.write,
  };
  installCleanup();
  const ceilingSec = opts.repeats * SETUPS.length * (2 * (opts.durationSec + opts.warmupSec) + 30) + 60;
  setChildLifetime(ceilingSec);
  exitAfter("bench observability", ceilingSec);
  try {
    const res = await runObservability(opts);
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(join(OUT_DIR, "observability.json"), `${JSON.stringify(res, null, 2)}\n`);
    console.log(renderObservability(res));
    console.log(
      `spans received per traced request: ${res.spansPerRequest ?? "n/a"}; other load: ${res.foreignCores} cores; metrics hooks per pass-through request: ${res.hookCostUs} µs (in-process)`,
    );
    if (opts.write) {
      writeObservabilitySection(res);
      console.log("wrote the observability section of bench/RESULTS.md");
    }
    return res.rows.every((r) => r.rps > 0) ? 0 : 1;
  } finally {
    await stopAll();
  }
}

// Run when started as a program; bench/run.ts imports runObservability.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => process.exit(code),
    async (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : err);
      await stopAll();
      process.exit(1);
    },
  );
}
