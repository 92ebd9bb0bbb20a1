// Tasks benchmarks (issue 5 item 5, issue 4's figures): what promotion costs
// over a direct call, tasks/get throughput with 64 pollers against its floor
// (bench/tasks/get-floor.ts), gateway memory with
// 10,000 working tasks, and 100,000 completed tasks against the store budget.
//
//   node --import tsx bench/tasks/run.ts            quick (< 2 min): 20,000 completed tasks, 5 s points
//   node --import tsx bench/tasks/run.ts --full     100,000 completed tasks, 15 s points
//   … --store redis://127.0.0.1:6379 [--workers N]  the same against a gateway on a Redis store
//
// Writes bench/out/tasks-results.json and the tasks section of bench/RESULTS.md, prints a table.
// The scenario functions are exported for bench/tasks/shared.ts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { callerIdentity } from "../../src/policy/sets/identity.js";
import { taskBytes } from "../../src/store/task-bytes.js";
import { storedTask } from "../../src/store/task-store.js";
import { taskResultJson } from "../../src/tasks/task.js";
import type { TaskRecord } from "../../src/tasks/task.js";
import { APT_HINT, findBinary } from "../lib/binaries.js";
import { describeMachine } from "../lib/machine.js";
import { checkOnce } from "../lib/measure.js";
import { BENCH_DIR, OUT_DIR, ROOT } from "../lib/paths.js";
import { mergeSection, TASKS_MARKERS } from "../lib/markdown.js";
import { installCleanup, runToCompletion, setChildLifetime, stopAll } from "../lib/procs.js";
import type { Child } from "../lib/procs.js";
import { fromDist } from "../lib/gateway-program.js";
import { settle } from "../lib/settle.js";
import { openSession } from "../lib/upstreams.js";
import {
  heapReport,
  memoryOf,
  nodePid,
  openFiles,
  startBenchServer,
  startGateway,
  startLegacyUpstream,
  upstreamStats,
} from "./children.js";
import type { Running } from "./children.js";
import {
  createTasks,
  forEachLimit,
  isRecord,
  McpClient,
  MODERN_VERSION,
  resolveTasks,
  TASKS_EXTENSION,
} from "./client.js";
import type { Json } from "./client.js";
import { RedisProbe } from "./redis.js";
import { renderMarkdown, renderText } from "./report.js";
import type { Completed, Mode, Plan, PromotionRow, TaskResults, TasksGet, Working } from "./results.js";
import { measureLoad, runLoad } from "../lib/load.js";
import type { LoadPoint, LoadSpec } from "../lib/load.js";

const SCENARIO_NAMES = ["promotion", "get", "working", "completed"] as const;
type ScenarioName = (typeof SCENARIO_NAMES)[number];

const HELP = `Usage: npm run bench -- [--src] tasks [--full] [--compiled] [--report] [--store URL [--workers N]] [--only LIST]

  --full       100,000 completed tasks and 15 s points (quick: 20,000 and 5 s)
  --compiled   run the gateway from dist/main.js with plain node, as deployed (the default
               unless BENCH_GATEWAY=src, which npm run bench -- --src sets; dist/ is built when stale)
  --report     run nothing: rewrite the tasks section of bench/RESULTS.md from bench/out/tasks-results*.json
  --store URL  run the gateways on this Redis store (tasks.store), each with a key prefix of its
               own whose keys are deleted afterwards; Redis's CPU and commands are read per point.
               Writes bench/out/tasks-results-redis-wN.json only (the RESULTS.md section is the memory store's)
  --workers N  gateway worker processes (server.workers; needs --store). The working-tasks
               scenario reads one process's RSS, so it runs only with 1
  --only LIST  comma-separated subset of ${SCENARIO_NAMES.join(",")} (the budget scenario runs on the memory store only)
  --rounds N   tasks/get: measure the gateway and its floor N times, alternating (default 1)
  --cpu-prof DIR  run the tasks/get gateway and its floor with node --cpu-prof, profiles into DIR
               (summarize one with node --import tsx bench/lib/profile-summary.ts FILE)

Writes bench/out/tasks-results.json and the tasks section of bench/RESULTS.md.
bench/tasks/shared.ts (npm run bench -- shared) compares the stores side by side.`;

const MiB = 1024 * 1024;
export const PLANS: Readonly<Record<Mode, Plan>> = {
  quick: {
    pointSec: 5,
    warmupSec: 1,
    getIds: 1_000,
    pollers: 64,
    working: 10_000,
    completed: 20_000,
    storeBytes: 16 * MiB,
    loaderConcurrency: 64,
    resultBytes: 1024,
  },
  full: {
    pointSec: 15,
    warmupSec: 3,
    getIds: 10_000,
    pollers: 64,
    working: 10_000,
    completed: 100_000,
    storeBytes: 64 * MiB,
    loaderConcurrency: 64,
    resultBytes: 1024,
  },
};
/** Longest wait for the machine to go quiet before a measured point. */
const SETTLE_SEC: Readonly<Record<Mode, number>> = { quick: 5, full: 15 };
/** Concurrency of the promotion points under load. */
const LOAD_CONCURRENCY = 64;
const RESULTS_MD = join(BENCH_DIR, "RESULTS.md");

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Tool names the gateway's rules sort into modes; the upstream answers every name alike. */
const RULES = [
  { tool: "promoted", mode: "always" },
  { tool: "hold", mode: "always" },
  { tool: "plain", mode: "never" },
] as const;

function openFilesLimit(): number | null {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  if (match?.[1] === undefined) return null;
  return match[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match[1]);
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** Waits until the upstream's call count stops moving: background task calls of a point have finished. */
async function drained(upstreamUrl: string): Promise<void> {
  let last = -1;
  for (let i = 0; i < 100; i++) {
    const { calls } = await upstreamStats(upstreamUrl);
    if (calls === last) return;
    last = calls;
    await sleep(200);
  }
}

export async function kill(child: Child): Promise<void> {
  // Nothing of a killed gateway is measured any more; its graceful shutdown
  // (cancelling thousands of upstream calls) is not what this bench is about.
  child.kill("SIGKILL");
  await child.stop();
}

function gatewayMemory(gateway: Running): { pid: number } {
  return { pid: nodePid(gateway.child, "/main.") };
}

/** The record the store keeps for a completed task, rebuilt from its tasks/get answer. */
function storedRecordBytes(sample: Json): number {
  const str = (k: string): string => {
    const v = sample[k];
    if (typeof v !== "string") throw new Error(`tasks/get answer without ${k}`);
    return v;
  };
  const num = (k: string): number => {
    const v = sample[k];
    if (typeof v !== "number") throw new Error(`tasks/get answer without ${k}`);
    return v;
  };
  const result = sample["result"];
  if (!isRecord(result)) throw new Error("completed task without a result");
  const record: TaskRecord = {
    taskId: str("taskId"),
    // Only the length matters: every owner is a digest of the same size.
    owner: callerIdentity(""),
    status: "completed",
    createdAt: str("createdAt"),
    lastUpdatedAt: str("lastUpdatedAt"),
    ttlMs: num("ttlMs"),
    pollIntervalMs: num("pollIntervalMs"),
    inputRequests: {},
    result: result,
  };
  return taskBytes(storedTask(record, taskResultJson(record)));
}

const resultsFile = (compiled: boolean): string => `tasks-results${compiled ? "-compiled" : ""}.json`;

/** The tasks section of bench/RESULTS.md from this run and the other gateway program's latest run of the same mode, tsx first. */
function writeReport(results: TaskResults, compiled: boolean): void {
  const other = readResults(join(OUT_DIR, resultsFile(!compiled)));
  const runs = [{ results, file: resultsFile(compiled) }];
  if (other !== undefined && other.meta.mode === results.meta.mode)
    runs.push({ results: other, file: resultsFile(!compiled) });
  const section = renderMarkdown(compiled ? runs.reverse() : runs);
  writeFileSync(RESULTS_MD, mergeSection(readFileSync(RESULTS_MD, "utf8"), section, TASKS_MARKERS));
}

export async function gitState(): Promise<string | undefined> {
  try {
    const head = await runToCompletion("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"], 5_000);
    const status = await runToCompletion("git", ["-C", ROOT, "status", "--porcelain", "--", "src"], 5_000);
    if (head.code !== 0) return undefined;
    return `${head.stdout.trim()}${status.stdout.trim() === "" ? "" : " + uncommitted src/ changes"}`;
  } catch {
    return undefined;
  }
}

function readResults(file: string): TaskResults | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const value: unknown = JSON.parse(readFileSync(file, "utf8"));
    // Files of an older shape (before meta.gateway) are left out.
    return isRecord(value) && isRecord(value["meta"]) && typeof value["meta"]["gateway"] === "string"
      ? (value as unknown as TaskResults)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Gateways on a shared store: its URL, the workers, and a prefix for this run (each gateway adds its name). */
export interface SharedStore {
  url: string;
  workers: number;
  prefix: string;
  probe: RedisProbe;
}

export interface Ctx {
  mode: Mode;
  plan: Plan;
  compiled: boolean;
  settleLoad: number[];
  log: (line: string) => void;
  shared?: SharedStore | undefined;
  /** Measure the tasks/get floor (bench/tasks/get-floor.ts) beside the gateway's tasks/get (default true). */
  reference?: boolean;
  /** tasks/get: gateway and floor points measured this many times, alternating (default 1; the --check pass uses more). */
  rounds?: number;
  /** Longest wait for a quiet machine before each point; default by mode (quick 5 s, full 15 s). */
  settleSec?: number;
  /**
   * tasks/get: run its gateway and floor with `node --cpu-prof`, writing the profiles here (read them with
   * bench/lib/profile-summary.ts); both are then stopped with SIGTERM, so that Node writes the profile.
   */
  cpuProfDir?: string | undefined;
}

async function quiet(ctx: Ctx): Promise<void> {
  const sec = ctx.settleSec ?? SETTLE_SEC[ctx.mode];
  if (sec <= 0) return;
  ctx.settleLoad.push(Math.round((await settle(sec)) * 100) / 100);
}

/** A gateway for one scenario: on the shared store when there is one, under a key prefix of its own. */
export async function startTaskGateway(
  ctx: Ctx,
  name: string,
  upstreamUrl: string,
  config: { tasks: Record<string, unknown>; [section: string]: unknown },
  options: { memProbe?: boolean; nodeArgs?: readonly string[] } = {},
): Promise<Running> {
  const s = ctx.shared;
  const full =
    s === undefined
      ? config
      : {
          ...config,
          tasks: { ...config.tasks, store: s.url, storePrefix: `${s.prefix}${name}:` },
          server: { workers: s.workers },
        };
  return startGateway(name, upstreamUrl, full, join(OUT_DIR, `tasks-${name}.json`), {
    ...options,
    compiled: ctx.compiled,
  });
}

/** Kills a scenario's gateway and deletes its keys from the shared store. */
export async function stopTaskGateway(ctx: Ctx, gateway: Running): Promise<void> {
  await kill(gateway.child);
  if (ctx.shared !== undefined) await ctx.shared.probe.deletePrefix(`${ctx.shared.prefix}${gateway.child.name}:`);
}

// ---------------------------------------------------------------------------
// 1: promotion cost

export async function promotionCost(ctx: Ctx): Promise<PromotionRow[]> {
  const { plan } = ctx;
  const upstream = await startLegacyUpstream();
  const gateway = await startTaskGateway(ctx, "gateway-latency", upstream.url, {
    // Room for every task the c=64 point creates, so no call is refused at a limit.
    tasks: { rules: RULES, maxTasks: 200_000, maxTasksPerCaller: 200_000 },
  });
  const client = new McpClient(gateway.url, plan.loaderConcurrency);
  try {
    const args = { size: plan.resultBytes };
    // Check each path answers what it should before timing it.
    const session = await openSession(upstream.url);
    await checkOnce({ url: upstream.url, tool: "bench", arguments: args, headers: session }, '"text":"xxxx');
    const plainReply = await client.callTool("plain", args);
    if (
      plainReply.result === undefined ||
      plainReply.result["resultType"] === "task" ||
      !Array.isArray(plainReply.result["content"])
    ) {
      throw new Error(`plain tools/call through the gateway: ${JSON.stringify(plainReply.error ?? plainReply.result)}`);
    }
    const probeId = await client.createTask("promoted", args);
    await waitFor(
      "the first task to complete",
      10_000,
      async () => (await client.getTask(probeId)).result?.["status"] === "completed",
    );

    const load = (name: string, concurrency: number): LoadSpec => ({
      url: gateway.url,
      script: { method: "tools/call", era: "modern", name, args },
      concurrency,
      threads: 1,
      durationSec: plan.pointSec,
    });
    const paths: Array<{ path: PromotionRow["path"]; label: string; spec: LoadSpec; gateway: Child | undefined }> = [
      {
        path: "direct",
        label: "direct to upstream (legacy session)",
        spec: {
          url: upstream.url,
          script: { method: "tools/call", era: "legacy", name: "bench", args, headers: session },
          concurrency: 1,
          threads: 1,
          durationSec: plan.pointSec,
        },
        gateway: undefined,
      },
      {
        path: "never",
        label: "gateway, rule never (era bridge, plain result)",
        spec: load("plain", 1),
        gateway: gateway.child,
      },
      {
        path: "always",
        label: "gateway, rule always (CreateTaskResult)",
        spec: load("promoted", 1),
        gateway: gateway.child,
      },
      // Under load, where CPU per call is not inflated by wake-ups between calls.
      {
        path: "never",
        label: "gateway, rule never, c=64",
        spec: load("plain", LOAD_CONCURRENCY),
        gateway: gateway.child,
      },
      {
        path: "always",
        label: "gateway, rule always, c=64",
        spec: load("promoted", LOAD_CONCURRENCY),
        gateway: gateway.child,
      },
    ];
    const promotion: PromotionRow[] = [];
    for (const p of paths) {
      ctx.log(`promotion: ${p.label}`);
      await runLoad({ ...p.spec, durationSec: plan.warmupSec });
      await drained(upstream.url);
      await quiet(ctx);
      const callsBefore = (await upstreamStats(upstream.url)).calls;
      const point = await measureLoad(
        p.spec,
        p.gateway,
        upstream.child,
        p.gateway === undefined ? undefined : ctx.shared?.probe,
      );
      if (p.path === "never" && point.bytesPerResponse < plainReply.bodyBytes) {
        throw new Error(
          `never-path answers average ${point.bytesPerResponse} B, less than one good answer's body (${plainReply.bodyBytes} B): some were errors`,
        );
      }
      if (p.path === "always") {
        // A refused call (task limit) never reaches the upstream; every created task does, once.
        await drained(upstream.url);
        const calls = (await upstreamStats(upstream.url)).calls - callsBefore;
        if (calls < point.requests)
          throw new Error(
            `${p.label}: ${point.requests} answers but only ${calls} upstream calls: some calls were refused`,
          );
      }
      promotion.push({ path: p.path, label: p.label, concurrency: p.spec.concurrency, point });
    }
    // The always path must still be creating tasks at the end (not refused at a limit).
    await client.createTask("promoted", args);

    return promotion;
  } finally {
    await client.close();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
  }
}

// ---------------------------------------------------------------------------
// 2: tasks/get, on a fresh gateway holding only the polled tasks, beside its floor

/** Response headers that belong to one connection or one moment, not to the answer. */
const NOT_COPIED = new Set(["date", "connection", "keep-alive", "transfer-encoding", "content-length"]);

/** One modern tasks/get as wrk's script sends it, answered raw: status, headers, body text. */
async function rawTasksGet(
  url: string,
  taskId: string,
  rpcId: number,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN_VERSION,
      "mcp-method": "tasks/get",
      "mcp-name": taskId,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: rpcId,
      method: "tasks/get",
      params: {
        taskId,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
          "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS_EXTENSION]: {} } },
          "io.modelcontextprotocol/clientInfo": { name: "bench", version: "0.0.0" },
        },
      },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * Asks the gateway once for each id's tasks/get answer and writes what the floor
 * (bench/tasks/get-floor.ts) serves: the `result` member's bytes per id and the
 * gateway's response headers.
 */
async function floorAnswers(
  gatewayUrl: string,
  ids: readonly string[],
  concurrency: number,
  file: string,
): Promise<void> {
  const answers = new Array<[string, string]>(ids.length);
  let headers: Record<string, string> | undefined;
  await forEachLimit(ids.length, concurrency, async (i) => {
    const id = ids[i] ?? "";
    const res = await rawTasksGet(gatewayUrl, id, i + 1);
    const msg: unknown = JSON.parse(res.text);
    if (res.status !== 200 || !isRecord(msg) || !isRecord(msg["result"]) || msg["result"]["status"] !== "completed") {
      throw new Error(`tasks/get ${id} for the floor: ${res.status} ${res.text.slice(0, 300)}`);
    }
    answers[i] = [id, JSON.stringify(msg["result"])];
    headers ??= Object.fromEntries([...res.headers].filter(([name]) => !NOT_COPIED.has(name)));
  });
  writeFileSync(file, `${JSON.stringify({ headers: headers ?? {}, answers })}\n`);
}

function startGetFloor(answersFile: string, nodeArgs: readonly string[], args: readonly string[]): Promise<Running> {
  return startBenchServer(
    "get-floor",
    "bench/tasks/get-floor.ts",
    ["--answers", answersFile, ...args],
    "http",
    nodeArgs,
  );
}

/** The monotonic clock in µs, as V8's profiles stamp their samples (both read CLOCK_MONOTONIC on Linux). */
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Node's options for a profiled process (Ctx.cpuProfDir), or none. */
function cpuProfArgs(dir: string | undefined): string[] {
  return dir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${dir}`];
}

/** The floor must answer exactly what the gateway answers: same status, headers that matter and body bytes. */
async function checkFloor(gatewayUrl: string, floorUrl: string, ids: readonly string[]): Promise<number> {
  const picks = [...new Set([0, Math.floor(ids.length / 2), ids.length - 1])];
  for (const [n, i] of picks.entries()) {
    const id = ids[i] ?? "";
    const rpcId = 1_000_000_000 + n;
    const [gw, fl] = await Promise.all([rawTasksGet(gatewayUrl, id, rpcId), rawTasksGet(floorUrl, id, rpcId)]);
    if (
      gw.status !== fl.status ||
      gw.text !== fl.text ||
      gw.headers.get("content-type") !== fl.headers.get("content-type")
    ) {
      throw new Error(
        `the tasks/get floor answers ${id} differently from the gateway:\n gateway ${gw.status} ${gw.text.slice(0, 200)}\n floor   ${fl.status} ${fl.text.slice(0, 200)}`,
      );
    }
  }
  return picks.length;
}

export async function polling(ctx: Ctx): Promise<TasksGet> {
  const { plan } = ctx;
  const rounds = Math.max(1, ctx.rounds ?? 1);
  const upstream = await startLegacyUpstream();
  const gateway = await startTaskGateway(
    ctx,
    "gateway-poll",
    upstream.url,
    { tasks: { rules: RULES, maxTasks: plan.getIds + 1_000, maxTasksPerCaller: plan.getIds + 1_000 } },
    { nodeArgs: cpuProfArgs(ctx.cpuProfDir) },
  );
  const client = new McpClient(gateway.url, plan.loaderConcurrency);
  let floor: Running | undefined;
  try {
    const args = { size: plan.resultBytes };
    ctx.log(`tasks/get: creating ${plan.getIds} completed tasks`);
    const { ids } = await createTasks(client, plan.getIds, plan.loaderConcurrency, "promoted", args);
    await waitFor("every task to complete", 30_000, async () => {
      const r = await resolveTasks(client, ids, plan.loaderConcurrency);
      return r.byStatus["completed"] === ids.length;
    });
    const idsFile = join(OUT_DIR, "tasks-ids.txt");
    writeFileSync(idsFile, `${ids.join("\n")}\n`);
    const first = ids[0];
    if (first === undefined) throw new Error("no task created");
    const checked = await client.getTask(first);
    let floorChecked = 0;
    if (ctx.reference !== false) {
      ctx.log(`tasks/get: the floor, with the gateway's answers for ${ids.length} ids`);
      const answersFile = join(OUT_DIR, "tasks-get-floor-answers.json");
      await floorAnswers(gateway.url, ids, plan.loaderConcurrency, answersFile);
      // On a shared store the floor reads each answer from the gateway's own keys, as its store does.
      const fromStore = ctx.shared && ["--redis", ctx.shared.url, "--prefix", `${ctx.shared.prefix}gateway-poll:`];
      floor = await startGetFloor(answersFile, cpuProfArgs(ctx.cpuProfDir), fromStore || []);
      floorChecked = await checkFloor(gateway.url, floor.url, ids);
    }
    const spec: LoadSpec = {
      url: gateway.url,
      script: { method: "tasks/get", idsFile },
      concurrency: plan.pollers,
      threads: 1,
      durationSec: plan.pointSec,
    };
    const floorSpec: LoadSpec | undefined = floor === undefined ? undefined : { ...spec, url: floor.url };
    ctx.log(
      `tasks/get: ${plan.pollers} pollers, ${plan.pointSec} s${floor === undefined ? "" : ", then the floor"}${rounds > 1 ? `, ${rounds} rounds` : ""}`,
    );
    await runLoad({ ...spec, durationSec: plan.warmupSec });
    if (floorSpec !== undefined) await runLoad({ ...floorSpec, durationSec: plan.warmupSec });
    // Gateway and floor alternate, each pair within seconds, so drifting load hurts their ratio less.
    const pairs: Array<{ gateway: LoadPoint; floor?: LoadPoint }> = [];
    const spans: Array<{ target: string; span: string }> = [];
    for (let r = 0; r < rounds; r++) {
      await quiet(ctx);
      const startedUs = monotonicUs();
      const point = await measureLoad(spec, gateway.child, upstream.child, ctx.shared?.probe);
      spans.push({ target: "gateway", span: `${startedUs}:${monotonicUs()}` });
      if (floorSpec === undefined || floor === undefined) {
        pairs.push({ gateway: point });
        continue;
      }
      await quiet(ctx);
      // The floor's CPU is read as the "gateway" of the point: the process answering the load.
      const floorStartedUs = monotonicUs();
      pairs.push({ gateway: point, floor: await measureLoad(floorSpec, floor.child, upstream.child) });
      spans.push({ target: "floor", span: `${floorStartedUs}:${monotonicUs()}` });
    }
    if (ctx.cpuProfDir !== undefined) {
      // Where each point sits in the profiles: profile-summary.ts --span FROM:TO keeps only that point.
      const pids = { gateway: nodePid(gateway.child, "/main."), floor: floor && nodePid(floor.child, "get-floor") };
      mkdirSync(ctx.cpuProfDir, { recursive: true });
      writeFileSync(join(ctx.cpuProfDir, "points.json"), `${JSON.stringify({ pids, spans }, null, 2)}\n`);
    }
    const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(ids.length / 100)) === 0);
    const after = await resolveTasks(client, sample, plan.loaderConcurrency);
    for (const pair of pairs) {
      for (const [who, p] of [
        ["gateway", pair.gateway],
        ["floor", pair.floor],
      ] as const) {
        if (p !== undefined && p.bytesPerResponse < checked.bodyBytes) {
          throw new Error(
            `tasks/get answers of the ${who} average ${p.bytesPerResponse} B, less than one good answer's body (${checked.bodyBytes} B): some were errors`,
          );
        }
      }
    }
    const firstPair = pairs[0];
    if (firstPair === undefined) throw new Error("no tasks/get point");
    return {
      ids: ids.length,
      checkedBodyBytes: checked.bodyBytes,
      point: firstPair.gateway,
      ...(firstPair.floor !== undefined && { floor: firstPair.floor, floorChecked }),
      ...(rounds > 1 && { rounds: pairs }),
      stillCompleted: after.byStatus["completed"] ?? 0,
      sampled: sample.length,
    };
  } finally {
    await client.close();
    if (floor !== undefined) await floor.child.stop();
    // A profiled gateway must exit on its own (SIGTERM) to write its profile; kill() would lose it.
    if (ctx.cpuProfDir !== undefined) await gateway.child.stop();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
  }
}

// ---------------------------------------------------------------------------
// 3: many tasks working at once

async function warmUp(client: McpClient, n: number, concurrency: number, resultBytes: number): Promise<void> {
  await createTasks(client, n, concurrency, "promoted", { size: resultBytes });
  for (let i = 0; i < n; i += concurrency) {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n - i) }, () => client.callTool("plain", { size: resultBytes })),
    );
  }
}

export async function workingTasks(ctx: Ctx): Promise<Working | { skipped: string }> {
  const { plan } = ctx;
  if ((ctx.shared?.workers ?? 1) > 1)
    return { skipped: "the RSS of one gateway process is measured: run it with --workers 1" };
  const limit = openFilesLimit();
  // The gateway and the upstream each hold one socket per working task.
  if (limit !== null && limit < plan.working + 1_000) {
    return {
      skipped: `open files limit ${limit} is below ${plan.working + 1_000}; raise it (ulimit -n) to hold ${plan.working} calls open`,
    };
  }
  const upstream = await startLegacyUpstream();
  const gateway = await startTaskGateway(
    ctx,
    "gateway-working",
    upstream.url,
    {
      // One upstream connection per held call, so they are truly concurrent, not queued in the pool.
      upstream: { connections: plan.working + 2_000 },
      tasks: { rules: RULES, maxTasks: plan.working + 1_000, maxTasksPerCaller: plan.working + 1_000 },
    },
    { memProbe: true },
  );
  const client = new McpClient(gateway.url, plan.loaderConcurrency);
  try {
    const { pid } = gatewayMemory(gateway);
    await warmUp(client, 500, plan.loaderConcurrency, plan.resultBytes);
    await sleep(1_500);
    const before = memoryOf(pid);
    const heapBefore = await heapReport(gateway.child, pid);
    ctx.log(`working: creating ${plan.working} held tasks`);
    const created = await createTasks(client, plan.working, plan.loaderConcurrency, "hold", { hold: true });
    let held = 0;
    await waitFor(`the upstream to hold ${plan.working} calls`, 60_000, async () => {
      held = (await upstreamStats(upstream.url)).held;
      return held >= plan.working;
    });
    await sleep(2_000);
    const after = memoryOf(pid);
    const fds = openFiles(pid);
    const heap = await heapReport(gateway.child, pid);
    const sample = created.ids.filter((_, i) => i % 50 === 0);
    const r = await resolveTasks(client, sample, plan.loaderConcurrency);
    return {
      tasks: plan.working,
      createSec: Math.round(created.seconds * 10) / 10,
      retries: created.retries,
      heldByUpstream: held,
      sampled: sample.length,
      sampledWorking: r.byStatus["working"] ?? 0,
      before,
      after,
      bytesPerTask: Math.round((after.rss - before.rss) / plan.working),
      gatewayOpenFiles: fds,
      heapBefore,
      heap,
    };
  } finally {
    await client.close();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
  }
}

// ---------------------------------------------------------------------------
// 4: completed tasks against the store budget

async function completedTasks(ctx: Ctx): Promise<Completed> {
  const { plan } = ctx;
  const upstream = await startLegacyUpstream();
  const gateway = await startTaskGateway(
    ctx,
    "gateway-store",
    upstream.url,
    {
      tasks: { rules: RULES, storeBytes: plan.storeBytes, maxTasks: 10_000, maxTasksPerCaller: 10_000 },
    },
    { memProbe: true },
  );
  const client = new McpClient(gateway.url, plan.loaderConcurrency);
  try {
    const { pid } = gatewayMemory(gateway);
    await warmUp(client, 500, plan.loaderConcurrency, plan.resultBytes);
    await sleep(1_500);
    const before = memoryOf(pid);
    const heapBefore = await heapReport(gateway.child, pid);
    const callsBefore = (await upstreamStats(upstream.url)).calls;
    ctx.log(`store: creating ${plan.completed} tasks with ${plan.resultBytes} B results`);
    const created = await createTasks(client, plan.completed, plan.loaderConcurrency, "promoted", {
      size: plan.resultBytes,
    });
    await waitFor(
      "the upstream to answer every call",
      60_000,
      async () => (await upstreamStats(upstream.url)).calls - callsBefore >= plan.completed,
    );
    await sleep(2_000);
    const after = memoryOf(pid);
    const heap = await heapReport(gateway.child, pid);
    ctx.log(`store: checking which of ${plan.completed} tasks still resolve`);
    const r = await resolveTasks(client, created.ids, plan.loaderConcurrency);
    if (r.sample === undefined) throw new Error("no created task resolves");
    const size = storedRecordBytes(r.sample);
    const capacity = Math.floor(plan.storeBytes / size);
    const resolved = r.checked - r.notFound - r.other;
    return {
      created: plan.completed,
      createSec: Math.round(created.seconds * 10) / 10,
      retries: created.retries,
      storeBytes: plan.storeBytes,
      recordBytes: size,
      capacity,
      resolved,
      notFound: r.notFound,
      other: r.other,
      before,
      after,
      holds: resolved * size <= plan.storeBytes,
      exact: resolved === capacity,
      heapBefore,
      heap,
    };
  } finally {
    await client.close();
    await stopTaskGateway(ctx, gateway);
    await kill(upstream.child);
  }
}

// ---------------------------------------------------------------------------

function parseOnly(list: string | undefined): Set<ScenarioName> {
  if (list === undefined) return new Set(SCENARIO_NAMES);
  const names = list.split(",").map((n) => n.trim());
  const bad = names.filter((n) => !(SCENARIO_NAMES as readonly string[]).includes(n));
  if (bad.length > 0) throw new Error(`--only: unknown ${bad.join(", ")} (known: ${SCENARIO_NAMES.join(", ")})`);
  return new Set(names as ScenarioName[]);
}

/** A key prefix no other run uses: its keys are deleted once the run is over. */
let prefixes = 0;
export function runPrefix(): string {
  prefixes += 1;
  return `mcp-gateway-bench:${process.pid}-${Date.now().toString(36)}-${prefixes}:`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      full: { type: "boolean", default: false },
      compiled: { type: "boolean", default: false },
      report: { type: "boolean", default: false },
      store: { type: "string" },
      workers: { type: "string", default: "1" },
      only: { type: "string" },
      "cpu-prof": { type: "string" },
      rounds: { type: "string", default: "1" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  if (values.report) {
    const results = readResults(join(OUT_DIR, resultsFile(false))) ?? readResults(join(OUT_DIR, resultsFile(true)));
    if (results === undefined) throw new Error("no bench/out/tasks-results*.json to report from");
    writeReport(results, results.meta.gateway.startsWith("dist/"));
    process.stdout.write(`${renderText(results)}\n\nwrote the tasks section of bench/RESULTS.md\n`);
    return;
  }
  if (findBinary("wrk") === undefined) throw new Error(`wrk is not installed; ${APT_HINT}`);
  const mode: Mode = values.full ? "full" : "quick";
  // dist/ unless BENCH_GATEWAY=src (npm run bench -- --src tasks); --compiled says dist/ whatever the variable.
  const compiled = values.compiled || fromDist();
  const plan = PLANS[mode];
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`--workers wants a whole number ≥ 1, got ${values.workers}`);
  if (workers > 1 && values.store === undefined)
    throw new Error("--workers above 1 needs --store (the gateway refuses workers on the memory store)");
  const only = parseOnly(values.only);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds wants a whole number ≥ 1, got ${values.rounds}`);
  installCleanup();
  setChildLifetime(mode === "full" ? 1_800 : 600);
  mkdirSync(OUT_DIR, { recursive: true });
  const started = performance.now();
  const shared =
    values.store === undefined
      ? undefined
      : { url: values.store, workers, prefix: runPrefix(), probe: await RedisProbe.open(values.store) };
  const ctx: Ctx = {
    mode,
    plan,
    compiled,
    settleLoad: [],
    log: (line) => process.stderr.write(`[tasks bench] ${line}\n`),
    shared,
    cpuProfDir: values["cpu-prof"],
    rounds,
  };
  const notRun = { skipped: "not run (--only)" };
  try {
    const machine = await describeMachine();
    const commit = await gitState();
    const promotion = only.has("promotion") ? await promotionCost(ctx) : [];
    const tasksGet = only.has("get") ? await polling(ctx) : null;
    const working = only.has("working") ? await workingTasks(ctx) : notRun;
    // At its budget the Redis store refuses new tasks instead of evicting old ones: that scenario is the memory store's.
    const completed = only.has("completed") && shared === undefined ? await completedTasks(ctx) : null;
    const limit = openFilesLimit();
    const storeArgs =
      shared === undefined ? "" : ` --store ${values.store ?? ""}${workers > 1 ? ` --workers ${workers}` : ""}`;
    const results: TaskResults = {
      meta: {
        date: new Date().toISOString(),
        mode,
        command: `node --import tsx bench/tasks/run.ts${mode === "full" ? " --full" : ""}${compiled ? " --compiled" : ""}${storeArgs}${values.only === undefined ? "" : ` --only ${values.only}`}`,
        gateway: compiled ? "dist/main.js (node)" : "src/main.ts (node --import tsx)",
        ...(shared === undefined ? {} : { store: shared.url, workers }),
        ...(commit === undefined ? {} : { commit }),
        machine,
        elapsedSec: Math.round((performance.now() - started) / 100) / 10,
        plan,
        openFilesLimit: limit === null || Number.isFinite(limit) ? limit : null,
        settleLoad: ctx.settleLoad,
      },
      promotion,
      tasksGet,
      working,
      completed,
    };
    if (shared !== undefined) {
      // The RESULTS.md tasks section is the memory store's: a shared-store run only leaves its figures in bench/out/.
      const json = `tasks-results${compiled ? "-compiled" : ""}-redis-w${workers}.json`;
      writeFileSync(join(OUT_DIR, json), `${JSON.stringify(results, null, 2)}\n`);
      process.stdout.write(`${renderText(results)}\n\nwrote bench/out/${json}\n`);
      return;
    }
    const json = resultsFile(compiled);
    writeFileSync(join(OUT_DIR, json), `${JSON.stringify(results, null, 2)}\n`);
    writeReport(results, compiled);
    process.stdout.write(
      `${renderText(results)}\n\nwrote bench/out/${json} and the tasks section of bench/RESULTS.md\n`,
    );
  } finally {
    await stopAll();
    if (shared !== undefined) {
      await shared.probe.deletePrefix(shared.prefix);
      shared.probe.close();
    }
  }
}

// Run when started as a program; bench/tasks/shared.ts imports the scenarios.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`tasks bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    void stopAll().finally(() => process.exit(1));
  });
}
