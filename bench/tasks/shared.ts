// Shared task state (issue 9): what the Redis store costs beside the memory
// store, in one run on one machine.
//
//   npm run bench -- shared [-- --store redis://127.0.0.1:6379 --workers 2]
//
//   get        tasks/get, 64 pollers over 10,000 completed tasks: memory store;
//              Redis, 1 process; Redis, --workers N (run.ts's polling scenario)
//   lifecycle  what one task costs Redis, read from Redis itself (INFO commandstats,
//              network bytes, used_memory, MEMORY USAGE, MONITOR): create, each
//              progress update, the terminal update, each tasks/get; and what a
//              working task costs while it runs (lease renewal)
//   promotion  rule always vs never vs direct, c=1 and c=64, on both stores (run.ts)
//   working    RSS with 10,000 working tasks, on both stores (run.ts)
//
// Every gateway on Redis gets a key prefix of its own, deleted afterwards.
// Waits (bounded) for other engineers' test runs (vitest) to end before it starts.
// Writes bench/out/shared-results.json and bench/out/shared-results.md; prints the tables.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { redisKeys } from "../../src/store/redis-keys.js";
import { APT_HINT, findBinary } from "../lib/binaries.js";
import { describeMachine } from "../lib/machine.js";
import type { Machine } from "../lib/machine.js";
import { OUT_DIR } from "../lib/paths.js";
import { installCleanup, setChildLifetime, stopAll } from "../lib/procs.js";
import { fromDist } from "../lib/gateway-program.js";
import { renderTextTable } from "../lib/table.js";
import { startLegacyUpstream, upstreamStats } from "./children.js";
import { createTasks, McpClient, resolveTasks } from "./client.js";
import { diffCalls, RedisProbe } from "./redis.js";
import type { RedisSnapshot } from "./redis.js";
import { mdTable } from "../lib/markdown.js";
import type { Plan, PromotionRow, TasksGet, Working } from "./results.js";
import {
  gitState,
  kill,
  PLANS,
  polling,
  promotionCost,
  runPrefix,
  startTaskGateway,
  stopTaskGateway,
  workingTasks,
} from "./run.js";
import type { Ctx, SharedStore } from "./run.js";
import type { LoadPoint } from "../lib/load.js";

const HELP = `Usage: npm run bench -- shared [options]

  --store URL        the Redis to measure (default redis://127.0.0.1:6379)
  --workers N        workers of the third tasks/get variant (default 2)
  --point S          seconds per measured point (default 10)
  --tasks N          completed tasks polled, and tasks held working (default 10000)
  --lifecycle N      tasks per lifecycle measurement (default 1000)
  --only LIST        comma-separated subset of get,lifecycle,promotion,working
  --wait-tests S     wait up to S s for running vitest processes to end first (default 1200)

Writes bench/out/shared-results.json and bench/out/shared-results.md.`;

const PARTS = ["get", "lifecycle", "promotion", "working"] as const;
type Part = (typeof PARTS)[number];
/** Progress notifications per task, and tasks/get per task, in the lifecycle. */
const PROGRESS_UPDATES = 3;
const POLLS = 5;
const RESULT_BYTES = 1024;
/** Tasks whose lifecycle is traced with MONITOR (what the gateway sends vs what scripts run). */
const TRACED = 100;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (line: string): void => void process.stderr.write(`[shared bench] ${line}\n`);

// ---------------------------------------------------------------------------
// Other engineers' test runs

function testsRunning(): boolean {
  try {
    return execFileSync("pgrep", ["-f", "vitest"], { encoding: "utf8" }).trim() !== "";
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}

/** Waits (polling every 10 s) until no vitest runs, at most `maxSec`; returns the seconds waited and whether it ended quiet. */
async function waitForTests(maxSec: number): Promise<{ waitedSec: number; quiet: boolean }> {
  const started = performance.now();
  while (testsRunning()) {
    const waited = (performance.now() - started) / 1000;
    if (waited >= maxSec) return { waitedSec: Math.round(waited), quiet: false };
    log(`vitest is running; waiting (${Math.round(waited)} s so far, up to ${maxSec} s)`);
    await sleep(10_000);
  }
  return { waitedSec: Math.round((performance.now() - started) / 1000), quiet: true };
}

// ---------------------------------------------------------------------------
// The lifecycle, read from Redis

export interface OpCost {
  op: string;
  /** Operations in the measured batch. */
  count: number;
  /** Per operation: commands Redis ran (commandstats; scripts' inner commands included). */
  calls: Record<string, number>;
  /** Per operation, from the MONITOR trace: commands the gateway sent, and commands scripts ran for them. */
  sent: Record<string, number>;
  inScripts: Record<string, number>;
  /** Per operation: bytes gateway → Redis and Redis → gateway, Redis CPU µs, used_memory change. */
  netIn: number;
  netOut: number;
  cpuUs: number;
  memory: number;
}

export interface Lifecycle {
  tasks: number;
  ops: OpCost[];
  /** MEMORY USAGE (bytes) of a task's keys and of the shared counters, after the creates and after completion. */
  keys: Record<string, number | null>;
  /** used_memory per task: with every task working, and with every task completed. */
  perTaskWorking: number;
  perTaskCompleted: number;
  /** Keys under the gateway's prefix once every task completed. */
  keyCount: number;
  /** tasks/get body of a completed task, bytes. */
  getBodyBytes: number;
  /** Holding working tasks: commands per working task per lease renewal, over a window with the default lease. */
  renewal: {
    tasks: number;
    windowSec: number;
    renewals: number;
    perTaskPerRenewal: Record<string, number>;
    perSecond: Record<string, number>;
  };
  /** Commands per second from other clients before the gateway started (should be 0). */
  backgroundPerSec: number;
  quietFailures: string[];
}

function perOp(d: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, Math.round((v / n) * 1000) / 1000]));
}

const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);

async function control(upstreamUrl: string, what: string): Promise<void> {
  const res = await fetch(new URL(`/control/${what}`, upstreamUrl), {
    method: "POST",
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`upstream /control/${what}: HTTP ${res.status}`);
  await res.body?.cancel();
}

async function lifecycle(ctx: Ctx & { shared: SharedStore }, tasks: number): Promise<Lifecycle> {
  const { shared } = ctx;
  const { probe } = shared;
  const quietFailures: string[] = [];
  const settled = async (what: string): Promise<RedisSnapshot> => {
    try {
      return await probe.quiescent();
    } catch {
      quietFailures.push(what);
      return probe.snapshot();
    }
  };
  const b0 = await probe.snapshot();
  await sleep(2_000);
  const backgroundPerSec = sum(diffCalls((await probe.snapshot()).calls, b0.calls)) / 2;

  const upstream = await startLegacyUpstream();
  // Lease renewal and the sweep are timers: pushed out of the measured windows here (renewal every 100 s),
  // and measured on their own below with the default lease.
  const gateway = await startTaskGateway(ctx, "gateway-lifecycle", upstream.url, {
    upstream: { connections: tasks + 1_000 },
    tasks: {
      rules: [{ tool: "hold", mode: "always" }],
      maxTasks: tasks + 1_000,
      maxTasksPerCaller: tasks + 1_000,
      leaseMs: 300_000,
      sweepIntervalMs: 300_000,
    },
  });
  const client = new McpClient(gateway.url, 64);
  const prefix = `${shared.prefix}gateway-lifecycle:`;
  const keys = redisKeys(prefix);
  try {
    const gatewayConns = await probe.clientAddresses("mcp-task-gateway");
    /** One batch through the whole lifecycle; each phase measured between quiet points. */
    const batch = async (
      n: number,
      trace: boolean,
    ): Promise<{ ops: OpCost[]; ids: string[]; mem: { working: number; completed: number } }> => {
      const ops: OpCost[] = [];
      const memStart = (await settled("start")).usedMemory;
      let mem = { working: 0, completed: 0 };
      const phase = async (op: string, count: number, run: () => Promise<void>): Promise<void> => {
        const before = await settled(`${op} (before)`);
        const mon = trace ? await probe.monitor(() => gatewayConns) : undefined;
        await run();
        const after = await settled(op);
        const traced = await mon?.stop();
        ops.push({
          op,
          count,
          calls: perOp(diffCalls(after.calls, before.calls), count),
          sent: perOp(traced?.sent ?? {}, count),
          inScripts: perOp(traced?.inScripts ?? {}, count),
          netIn: Math.round((after.netIn - before.netIn) / count),
          netOut: Math.round((after.netOut - before.netOut) / count),
          cpuUs: Math.round(((after.cpuSec - before.cpuSec) / count) * 1e7) / 10,
          memory: Math.round((after.usedMemory - before.usedMemory) / count),
        });
      };
      let ids: string[] = [];
      await phase("create (tools/call, rule always)", n, async () => {
        ids = (await createTasks(client, n, 64, "hold", { hold: true })).ids;
        for (let i = 0; (await upstreamStats(upstream.url)).held < n; i++) {
          if (i > 300) throw new Error(`the upstream holds fewer than ${n} calls`);
          await sleep(100);
        }
      });
      mem.working = (await settled("memory")).usedMemory - memStart;
      for (let k = 1; k <= PROGRESS_UPDATES; k++) {
        await phase(`progress update ${k} (statusMessage)`, n, () =>
          control(upstream.url, `progress?total=${PROGRESS_UPDATES}`),
        );
      }
      await phase("terminal update (completed, 1 KB result)", n, () =>
        control(upstream.url, `complete?size=${RESULT_BYTES}`),
      );
      mem = { ...mem, completed: (await settled("memory")).usedMemory - memStart };
      await phase(`tasks/get (completed; ${POLLS} per task)`, n * POLLS, async () => {
        for (let r = 0; r < POLLS; r++) {
          const polled = await resolveTasks(client, ids, 64);
          if (polled.byStatus["completed"] !== n)
            throw new Error(`tasks/get: ${JSON.stringify(polled.byStatus)} of ${n} tasks, expected all completed`);
        }
      });
      return { ops, ids, mem };
    };

    log(`lifecycle: warm-up (20 tasks), then ${tasks} tasks, then ${TRACED} traced with MONITOR`);
    await batch(20, false);
    const measured = await batch(tasks, false);
    // Working and completed keys, measured on a batch kept for it.
    const sampleKeys: Record<string, number | null> = {};
    const keyCount = (await probe.keys(prefix)).length;
    const first = measured.ids[0];
    if (first === undefined) throw new Error("no task created");
    const body = await client.getTask(first);
    if (body.result?.["status"] !== "completed")
      throw new Error(`a lifecycle task ended ${String(body.result?.["status"])}, not completed`);
    sampleKeys["task hash, completed (1 KB result)"] = await probe.memoryUsage(keys.task(first));
    const traced = await batch(TRACED, true);
    for (let i = 0; i < traced.ops.length; i++) {
      const m = measured.ops[i];
      const t = traced.ops[i];
      if (m !== undefined && t !== undefined) Object.assign(m, { sent: t.sent, inScripts: t.inScripts });
    }
    await client.close();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
    // Working keys and their upkeep: another gateway, with the default lease (15 s), as deployed.
    const renewal = await renewalWindow(ctx, tasks, sampleKeys);
    return {
      tasks,
      ops: measured.ops,
      keys: sampleKeys,
      perTaskWorking: Math.round(measured.mem.working / tasks),
      perTaskCompleted: Math.round(measured.mem.completed / tasks),
      keyCount,
      getBodyBytes: body.bodyBytes,
      renewal,
      backgroundPerSec,
      quietFailures,
    };
  } finally {
    // Already done on success; after a failure, the run's keys go with the run (main deletes its prefixes).
    await client.close().catch(() => undefined);
    await kill(gateway.child);
    await kill(upstream.child);
  }
}

/** Holds `tasks` working tasks on a gateway with the default lease and counts what their upkeep costs Redis. */
async function renewalWindow(
  ctx: Ctx & { shared: SharedStore },
  tasks: number,
  sampleKeys: Record<string, number | null>,
): Promise<Lifecycle["renewal"]> {
  const { shared } = ctx;
  const { probe } = shared;
  const upstream = await startLegacyUpstream();
  const gateway = await startTaskGateway(ctx, "gateway-renewal", upstream.url, {
    upstream: { connections: tasks + 1_000 },
    tasks: { rules: [{ tool: "hold", mode: "always" }], maxTasks: tasks + 1_000, maxTasksPerCaller: tasks + 1_000 },
  });
  const client = new McpClient(gateway.url, 64);
  try {
    const keys = redisKeys(`${shared.prefix}gateway-renewal:`);
    const { ids } = await createTasks(client, tasks, 64, "hold", { hold: true });
    const id = ids[0] ?? "";
    sampleKeys["task hash, working"] = await probe.memoryUsage(keys.task(id));
    sampleKeys["lease key (working task)"] = await probe.memoryUsage(keys.lease(id));
    sampleKeys[`ZSET unfinished (${tasks} working)`] = await probe.memoryUsage(keys.unfinished);
    sampleKeys[`ZSET leases (${tasks} working)`] = await probe.memoryUsage(keys.leases);
    const [ownerKey] = await probe.keys(keys.owner(""));
    sampleKeys[`ZSET of the caller's unfinished tasks (${tasks})`] =
      ownerKey === undefined ? null : await probe.memoryUsage(ownerKey);
    sampleKeys["HASH usage (byte and task counts)"] = await probe.memoryUsage(keys.usage);
    const windowSec = 15;
    log(`lifecycle: ${tasks} working tasks held ${windowSec} s with the default lease (15 s, renewed every 5 s)`);
    const before = await probe.snapshot();
    await sleep(windowSec * 1000);
    const after = await probe.snapshot();
    const d = diffCalls(after.calls, before.calls);
    // One ZADD of the kept leases per renewal round (nothing else adds to ZSETs while tasks only wait).
    const renewals = d["zadd"] ?? 0;
    return {
      tasks,
      windowSec,
      renewals,
      perTaskPerRenewal: renewals === 0 ? {} : perOp(d, tasks * renewals),
      perSecond: perOp(d, windowSec),
    };
  } finally {
    await client.close();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
  }
}

// ---------------------------------------------------------------------------
// Results

interface Variant {
  label: string;
  store: "memory" | "redis";
  workers: number;
}

export interface SharedResults {
  meta: {
    date: string;
    command: string;
    commit?: string;
    machine: Machine;
    redis: string;
    elapsedSec: number;
    plan: Plan;
    /** Whether vitest ran before each part (after the bounded wait), and how long was waited. */
    tests: Array<{ part: string; waitedSec: number; quiet: boolean }>;
    settleLoad: number[];
  };
  get: Array<Variant & { result: TasksGet }>;
  lifecycle: Lifecycle | null;
  promotion: Array<Variant & { rows: PromotionRow[] }>;
  working: Array<Variant & { result: Working | { skipped: string } }>;
}

const f1 = (n: number | null | undefined): string => (n === null || n === undefined ? "—" : n.toFixed(1));
const f3 = (n: number): string => n.toFixed(3);
const signed = (n: number): string => `${n >= 0 ? "+" : ""}${n.toFixed(3)}`;
const int = (n: number | null | undefined): string =>
  n === null || n === undefined ? "—" : Math.round(n).toLocaleString("en-US");
const mib = (n: number): string => (n / 1024 / 1024).toFixed(1);
/** "evalsha 2, hmget 1": a command tally, largest first. */
function tally(r: Record<string, number>): string {
  // Below 0.005 per operation: timers (registration, sweep) that fell into the window, not the operation.
  const e = Object.entries(r)
    .filter(([, v]) => v >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  return e.length === 0 ? "—" : e.map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`).join(", ");
}
const load = (p: LoadPoint): string => `${p.foreignCores.toFixed(2)}${p.foreignCores > 0.25 ? " *" : ""}`;

interface Table {
  title: string;
  header: string[];
  rows: string[][];
  notes: string[];
}

function tables(r: SharedResults): Table[] {
  const out: Table[] = [];
  if (r.get.length > 0) {
    out.push({
      title: `tasks/get: ${r.meta.plan.pollers} pollers over ${int(r.meta.plan.getIds)} completed tasks (1 KB results), ${r.meta.plan.pointSec} s`,
      header: [
        "gateway",
        "req/s",
        "p50 ms",
        "p99 ms",
        "gateway CPU µs/get",
        "Redis CPU µs/get",
        "Redis commands/get",
        "errors",
        "other load",
      ],
      rows: r.get.map((g) => {
        const p = g.result.point;
        return [
          g.label,
          int(p.rps),
          f3(p.p50),
          f3(p.p99),
          f1(p.gatewayCpuUs),
          f1(p.storeCpuUs),
          p.storeCalls === undefined ? "—" : tally(p.storeCalls),
          String(p.errors),
          load(p),
        ];
      }),
      notes: [
        "gateway CPU: the gateway process tree (the primary and its workers); Redis CPU from INFO cpu over the same window. Redis commands per get from INFO commandstats.",
        ...r.get
          .filter((g) => g.result.floor !== undefined)
          .map(
            (g) =>
              `tasks/get floor (bench/tasks/get-floor.ts, same answers, same load): ${int(g.result.floor?.rps)} req/s, ${f1(g.result.floor?.gatewayCpuUs)} µs/get.`,
          ),
      ],
    });
  }
  const l = r.lifecycle;
  if (l !== null) {
    out.push({
      title: `Redis per task operation (averaged over ${int(l.tasks)} tasks; one gateway process)`,
      header: [
        "operation",
        "commands Redis ran (commandstats)",
        "sent by the gateway (MONITOR)",
        "run inside scripts (MONITOR)",
        "bytes to Redis",
        "bytes from Redis",
        "Redis CPU µs",
        "used_memory Δ B",
      ],
      rows: l.ops.map((o) => [
        o.op,
        tally(o.calls),
        tally(o.sent),
        tally(o.inScripts),
        int(o.netIn),
        int(o.netOut),
        f1(o.cpuUs),
        int(o.memory),
      ]),
      notes: [
        `used_memory per task: ${int(l.perTaskWorking)} B while working (task hash, lease key, ZSET entries), ${int(l.perTaskCompleted)} B once completed with a 1 KB result; ${int(l.keyCount)} keys under the prefix after ${int(l.tasks)} completed tasks. A completed tasks/get body is ${int(l.getBodyBytes)} B.`,
        `MEMORY USAGE: ${Object.entries(l.keys)
          .map(([k, v]) => `${k} ${int(v)} B`)
          .join("; ")}.`,
        `Upkeep of a working task (default lease 15 s, renewed every 5 s; ${int(l.renewal.tasks)} tasks held ${l.renewal.windowSec} s, ${l.renewal.renewals} renewal rounds): per task per renewal ${tally(l.renewal.perTaskPerRenewal)}; per second overall ${tally(l.renewal.perSecond)}.`,
        `MONITOR columns from a separate batch of ${TRACED} tasks. Commands from other clients before the run: ${l.backgroundPerSec.toFixed(1)}/s.${l.quietFailures.length > 0 ? ` Redis did not go quiet after: ${l.quietFailures.join(", ")}.` : ""}`,
      ],
    });
  }
  if (r.promotion.length > 0) {
    const rows: string[][] = [];
    for (const v of r.promotion) {
      const direct = v.rows.find((x) => x.path === "direct" && x.concurrency === 1);
      const never = v.rows.find((x) => x.path === "never" && x.concurrency === 1);
      for (const x of v.rows) {
        const p = x.point;
        const base = x.concurrency === 1 ? direct : undefined;
        rows.push([
          v.label,
          x.label,
          int(p.rps),
          f3(p.p50),
          f3(p.p99),
          base === undefined || x === base ? "—" : signed(p.p50 - base.point.p50),
          x.path === "always" && x.concurrency === 1 && never !== undefined ? signed(p.p50 - never.point.p50) : "—",
          f1(p.gatewayCpuUs),
          f1(p.storeCpuUs),
          load(p),
        ]);
      }
    }
    out.push({
      title: `Promotion: tools/call, 1 KB result, ${r.meta.plan.pointSec} s per path`,
      header: [
        "store",
        "path",
        "req/s",
        "p50 ms",
        "p99 ms",
        "p50 vs direct",
        "p50 vs never",
        "gateway CPU µs/call",
        "Redis CPU µs/call",
        "other load",
      ],
      rows,
      notes: [
        "always: the answer is the CreateTaskResult, written to the store before it is sent; the call then runs in the background, and its completion (also a store write) is in the CPU figures.",
      ],
    });
  }
  if (r.working.length > 0) {
    out.push({
      title: `${int(r.meta.plan.working)} tasks working at once: gateway RSS`,
      header: [
        "store",
        "RSS before MiB",
        "RSS after MiB",
        "RSS B/task",
        "live heap B/task",
        "held upstream",
        "create s",
      ],
      rows: r.working.map((w) => {
        const x = w.result;
        if ("skipped" in x) return [w.label, x.skipped, "", "", "", "", ""];
        const heap = (x.heap.afterGc.heapUsed - x.heapBefore.afterGc.heapUsed) / x.tasks;
        return [
          w.label,
          mib(x.before.rss),
          mib(x.after.rss),
          int(x.bytesPerTask),
          int(heap),
          int(x.heldByUpstream),
          x.createSec.toFixed(1),
        ];
      }),
      notes: ["VmRSS of the gateway process after creating the tasks, minus before; live heap after a forced full GC."],
    });
  }
  return out;
}

function renderText(r: SharedResults): string {
  const out: string[] = [];
  for (const t of tables(r)) {
    out.push("", t.title, renderTextTable(t.header, t.rows));
    for (const n of t.notes) out.push(`  ${n}`);
  }
  return out.join("\n");
}

function renderMd(r: SharedResults): string {
  const m = r.meta.machine;
  const out = [
    `Run of ${r.meta.date}: \`${r.meta.command}\`, ${r.meta.elapsedSec.toFixed(0)} s${r.meta.commit === undefined ? "" : `, gateway at ${r.meta.commit}`}; ${m.cpus} × ${m.cpuModel}, Node ${m.node}, ${r.meta.redis}.`,
    `Test runs (vitest) before each part: ${r.meta.tests.map((t) => `${t.part} ${t.quiet ? "quiet" : "STILL RUNNING"}${t.waitedSec > 0 ? ` (waited ${t.waitedSec} s)` : ""}`).join(", ")}.`,
  ];
  for (const t of tables(r)) {
    out.push("", `#### ${t.title}`, "", mdTable(t.header, t.rows));
    if (t.notes.length > 0) out.push("", ...t.notes.map((n) => `- ${n}`));
  }
  return `${out.join("\n")}\n`;
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      store: { type: "string", default: "redis://127.0.0.1:6379" },
      workers: { type: "string", default: "2" },
      point: { type: "string", default: "10" },
      tasks: { type: "string", default: "10000" },
      lifecycle: { type: "string", default: "1000" },
      only: { type: "string" },
      "wait-tests": { type: "string", default: "1200" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  if (findBinary("wrk") === undefined) throw new Error(`wrk is not installed; ${APT_HINT}`);
  const num = (v: string, flag: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} wants a whole number ≥ 1, got ${v}`);
    return n;
  };
  const workers = num(values.workers, "--workers");
  const parts = new Set((values.only ?? PARTS.join(",")).split(",") as Part[]);
  const bad = [...parts].filter((p) => !PARTS.includes(p));
  if (bad.length > 0) throw new Error(`--only: unknown ${bad.join(", ")}`);
  const plan: Plan = {
    ...PLANS.full,
    pointSec: num(values.point, "--point"),
    warmupSec: 2,
    getIds: num(values.tasks, "--tasks"),
    working: num(values.tasks, "--tasks"),
    completed: 0,
  };
  const waitSec = num(values["wait-tests"], "--wait-tests");

  installCleanup();
  setChildLifetime(1_800);
  mkdirSync(OUT_DIR, { recursive: true });
  const started = performance.now();
  const probe = await RedisProbe.open(values.store);
  const shared = (w: number): SharedStore => ({ url: values.store, workers: w, prefix: runPrefix(), probe });
  const settleLoad: number[] = [];
  const ctxOf = (s: SharedStore | undefined, reference = false): Ctx => ({
    mode: "quick",
    plan,
    compiled: fromDist(),
    settleLoad,
    log,
    shared: s,
    reference,
  });
  const tests: SharedResults["meta"]["tests"] = [];
  const prefixes: string[] = [];
  const redisOne = shared(1);
  const redisN = shared(workers);
  prefixes.push(redisOne.prefix, redisN.prefix);
  const memory: Variant = { label: "memory store, 1 process", store: "memory", workers: 1 };
  const r1: Variant = { label: "Redis store, 1 process", store: "redis", workers: 1 };
  const rN: Variant = { label: `Redis store, --workers ${workers}`, store: "redis", workers };
  const results: SharedResults = {
    meta: {
      date: new Date().toISOString(),
      command: `npm run bench -- shared${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
      machine: await describeMachine(),
      redis: probe.version,
      elapsedSec: 0,
      plan,
      tests,
      settleLoad,
    },
    get: [],
    lifecycle: null,
    promotion: [],
    working: [],
  };
  const commit = await gitState();
  if (commit !== undefined) results.meta.commit = commit;
  const before = async (part: Part): Promise<boolean> => {
    if (!parts.has(part)) return false;
    const t = await waitForTests(waitSec);
    tests.push({ part, ...t });
    if (!t.quiet) log(`vitest still running after ${t.waitedSec} s: measuring ${part} anyway (noted in the results)`);
    return true;
  };
  try {
    if (await before("get")) {
      for (const [v, s, ref] of [
        [memory, undefined, true],
        [r1, redisOne, false],
        [rN, redisN, false],
      ] as const) {
        log(`tasks/get: ${v.label}`);
        results.get.push({ ...v, result: await polling(ctxOf(s, ref)) });
      }
    }
    if (await before("lifecycle"))
      results.lifecycle = await lifecycle(
        { ...ctxOf(redisOne), shared: redisOne },
        num(values.lifecycle, "--lifecycle"),
      );
    if (await before("promotion")) {
      for (const [v, s] of [
        [memory, undefined],
        [r1, redisOne],
      ] as const) {
        log(`promotion: ${v.label}`);
        results.promotion.push({ ...v, rows: await promotionCost(ctxOf(s)) });
      }
    }
    if (await before("working")) {
      for (const [v, s] of [
        [memory, undefined],
        [r1, redisOne],
      ] as const) {
        log(`working tasks: ${v.label}`);
        results.working.push({ ...v, result: await workingTasks(ctxOf(s)) });
      }
    }
    results.meta.elapsedSec = Math.round((performance.now() - started) / 1000);
    writeFileSync(join(OUT_DIR, "shared-results.json"), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(OUT_DIR, "shared-results.md"), renderMd(results));
    process.stdout.write(
      `${renderText(results)}\n\nwrote bench/out/shared-results.json and bench/out/shared-results.md\n`,
    );
  } finally {
    await stopAll();
    for (const p of prefixes) await probe.deletePrefix(p);
    probe.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`shared bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  void stopAll().finally(() => process.exit(1));
});
