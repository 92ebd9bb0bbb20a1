// The benchmark harness (issue 5): pass-through tools/call through direct,
// gateway, nginx and the floor, measured with wrk, CPU read from /proc.
//
//   npm run bench                    quick run (< 2 min), prints the table
//   npm run bench -- --full          every scenario, longer points, then the task benchmarks
//                                    (bench/tasks/run.ts --full); rewrites bench/RESULTS.md
//   npm run bench -- --write         quick run, and rewrite bench/RESULTS.md too
//   npm run bench -- --check         the regression guard (issue 14): gateway ÷ floor ratios vs bench/baseline.json
//   npm run bench -- --help          all options
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { APT_HINT, findBinary } from "./lib/binaries.js";
import {
  calibrate,
  CHECK_CONCURRENCY,
  CHECK_SCENARIOS,
  checkMetrics,
  compare,
  DEFAULT_MIN_MARGIN,
  DEFAULT_SAFETY,
  exitCodeOf,
  median,
  parseBaseline,
  passRatios,
  renderCheck,
  serializeBaseline,
  summarizePass,
  updateRatios,
} from "./lib/check.js";
import type { Baseline, CheckMetric, PassRatios } from "./lib/check.js";
import { fromDist } from "./lib/gateway-program.js";
import { describeMachine } from "./lib/machine.js";
import { measurePricedPaths, PRICED_METRICS, pricedRatios, renderAims } from "./lib/priced-paths.js";
import type { PricedPaths } from "./lib/priced-paths.js";
import { measureMicroPaths, MICRO_METRICS, microRatios, renderMicroAims } from "./lib/micro-paths.js";
import type { MicroPaths } from "./lib/micro-paths.js";
import { measurePipelineShare, PIPELINE_AIM, PIPELINE_METRIC } from "./lib/pipeline-share.js";
import {
  measurePromotions,
  PROMOTED_AIM,
  PROMOTED_METRIC,
  promotionRatios,
  renderPromotionAim,
} from "./lib/gc-promotions.js";
import type { PromotionFigures } from "./lib/gc-promotions.js";
import { EXCHANGE_AIM, EXCHANGE_METRIC, exchangeRatios, measureExchange } from "./lib/credential-exchange.js";
import type { ExchangeFigures } from "./lib/credential-exchange.js";
import { mergeResults, resultsSection } from "./lib/markdown.js";
import { checkOnce, measurePoint } from "./lib/measure.js";
import { BENCH_DIR, OUT_DIR, ROOT } from "./lib/paths.js";
import { latencyPlot } from "./lib/plot.js";
import { exitAfter, installCleanup, setChildLifetime, stopAll } from "./lib/procs.js";
import type { Point, Results, Skip } from "./lib/results.js";
import { SCENARIOS, TIMING } from "./lib/scenarios.js";
import { settle } from "./lib/settle.js";
import type { Mode, Scenario } from "./lib/scenarios.js";
import { renderResultsText, renderTextTable } from "./lib/table.js";
import { TARGET_NAMES, TARGETS } from "./lib/targets.js";
import type { RunningTarget, TargetName } from "./lib/targets.js";
import { openSession, startEverything, startFastUpstream } from "./lib/upstreams.js";
import type { RunningUpstream, UpstreamKind } from "./lib/upstreams.js";
import { runWrk } from "./lib/wrk.js";
import { renderObservability, runObservability, writeObservabilitySection } from "./observability.js";
import type { WrkRequest } from "./lib/wrk.js";
import type { TasksGet } from "./tasks/results.js";
import { gitState, PLANS, polling } from "./tasks/run.js";

/** The check's pass: short points, repeated in alternating rounds (gateway, floor, gateway, floor, …). */
const CHECK_TIMING = { durationSec: 3, warmupSec: 1 } as const;
const CHECK_ROUNDS = 3;
/** The priced paths' points (lib/priced-paths.ts): shorter, since each is a ratio of two paths of one gateway. */
const PRICED_POINT_SEC = 2;
const PRICED_CHECKS = 100_000;
const PRICED_FORWARDED_REQUESTS = 200;
/** Token exchanges (and bare POSTs) per round for the exchange's figure. */
const EXCHANGE_REQUESTS = 40;

const HELP = `Usage: npm run bench -- [options]

  --full               all scenarios (SSE, server-everything), ${TIMING.full.durationSec} s per point, then the task
                       benchmarks (bench/tasks/run.ts --full); implies --write
  --write              rewrite the generated section of bench/RESULTS.md and bench/latency-vs-concurrency.svg
  --duration <s>       seconds per point (quick: ${TIMING.quick.durationSec}, full: ${TIMING.full.durationSec})
  --warmup <s>         warm-up seconds per scenario and target
  --threads <n>        wrk threads (default 1; the machine has two cores to share)
  --targets <list>     comma-separated subset of ${TARGET_NAMES.join(",")}
  --scenarios <list>   comma-separated subset of ${SCENARIOS.map((s) => s.id).join(",")}
  --gateway-arg <arg>  extra argument for the gateway CLI (repeatable)
  --settle <s>         before each point, wait up to this long for other load on the machine to pass (default 0)
  --skip-observability skip the metrics/tracing overhead runs (bench/observability.ts: 3 repeats after the table)

Results always go to bench/out/ (results.json, results.md, latency-vs-concurrency.svg).

Regression guard (issue 14; not run by CI, run it before a change to the hot path):
  --check              a quick pass (gateway and floor only, c=${CHECK_CONCURRENCY}, ${CHECK_SCENARIOS.join(", ")}, then
                       tasks/get against its floor), ${CHECK_ROUNDS} alternating rounds of ${CHECK_TIMING.durationSec} s each; compares the
                       gateway ÷ floor ratios with bench/baseline.json and exits 1 when one worsened beyond its margin;
                       and the bytes promoted to V8's old space per json-1k request ÷ the floor's, both with
                       --trace-gc-nvp (lib/gc-promotions.ts), which fails above a fixed ${PROMOTED_AIM}× instead
  --check --update     the same pass, then rewrite the ratios in bench/baseline.json (margins kept)
  --check --calibrate N  N passes on an unchanged tree; rewrite bench/baseline.json with their median ratios and
                       margins = max deviation of a pass from the median × --safety (default ${DEFAULT_SAFETY}), at least
                       --min-margin (default ${DEFAULT_MIN_MARGIN}); run it on a quiet machine
  --rounds <n>         rounds per pass (default ${CHECK_ROUNDS}; 1 outside --check); --duration and --warmup apply too
  --baseline <file>    another baseline file (default bench/baseline.json)
  --skip-tasks-get     leave tasks/get out of the check (only the pass-through ratios)
  --skip-priced        leave out the priced paths of issue 27 (named route, federated call, rate-limit check,
                       forwarded session request: bench/lib/priced-paths.ts; the last needs Redis, --redis URL)
                       and the in-process paths of issue 38 (argument validation, catalog on a call and on
                       tools/list, pinning on tools/list, a token-cache hit: lib/micro-paths.ts; the pipeline's
                       steps: lib/pipeline-share.ts; a token exchange: lib/credential-exchange.ts)
  --priced-only        only the priced paths (≈ 1.5 min a pass); --update and --calibrate then rewrite only theirs`;

interface Options {
  mode: Mode;
  write: boolean;
  durationSec: number;
  warmupSec: number;
  threads: number;
  targets: readonly TargetName[];
  scenarios: readonly Scenario[];
  gatewayArgs: readonly string[];
  settleSec: number;
  observability: boolean;
  /** Each (scenario, concurrency) point measured this many times, the targets alternating (default 1). */
  rounds: number;
}

interface CheckOptions {
  baselineFile: string;
  update: boolean;
  /** Passes for --calibrate; 0: a single checking (or --update) pass. */
  calibrate: number;
  safety: number;
  minMargin: number;
  rounds: number;
  durationSec: number;
  warmupSec: number;
  threads: number;
  tasksGet: boolean;
  /** The priced paths of issue 27 (lib/priced-paths.ts). */
  priced: boolean;
  /** Only the priced paths: no pass-through, no tasks/get. */
  pricedOnly: boolean;
  redisUrl: string;
}

function positiveInt(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} wants a whole number, got ${value}`);
  return n;
}

function parseOptions(argv: readonly string[]): { run: Options } | { check: CheckOptions } | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      full: { type: "boolean", default: false },
      write: { type: "boolean", default: false },
      duration: { type: "string" },
      warmup: { type: "string" },
      threads: { type: "string" },
      targets: { type: "string" },
      scenarios: { type: "string" },
      "gateway-arg": { type: "string", multiple: true },
      settle: { type: "string" },
      "skip-observability": { type: "boolean", default: false },
      check: { type: "boolean", default: false },
      update: { type: "boolean", default: false },
      calibrate: { type: "string" },
      safety: { type: "string" },
      "min-margin": { type: "string" },
      rounds: { type: "string" },
      baseline: { type: "string" },
      "skip-tasks-get": { type: "boolean", default: false },
      "skip-priced": { type: "boolean", default: false },
      "priced-only": { type: "boolean", default: false },
      redis: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return undefined;
  const checkOnly = [
    "update",
    "calibrate",
    "safety",
    "min-margin",
    "baseline",
    "skip-tasks-get",
    "skip-priced",
    "priced-only",
    "redis",
  ] as const;
  if (!values.check) {
    const stray = checkOnly.filter((k) => values[k] !== undefined && values[k] !== false);
    if (stray.length > 0) throw new Error(`--${stray.join(", --")} only go with --check`);
  }
  if (values.check) {
    if (values.full || values.write || values.targets !== undefined || values.scenarios !== undefined) {
      throw new Error(
        "--check measures a fixed set (gateway and floor, c=64); it does not take --full, --write, --targets or --scenarios",
      );
    }
    const fraction = (v: string | undefined, fallback: number, flag: string): number => {
      if (v === undefined) return fallback;
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} wants a non-negative number, got ${v}`);
      return n;
    };
    const calibrateN = positiveInt(values.calibrate, 0, "--calibrate");
    if (values.calibrate !== undefined && calibrateN < 2) throw new Error("--calibrate wants at least 2 passes");
    if (values["priced-only"] && values["skip-priced"])
      throw new Error("--priced-only and --skip-priced exclude each other");
    if (calibrateN > 0 && values.update)
      throw new Error("--calibrate already rewrites the baseline; leave out --update");
    return {
      check: {
        baselineFile: values.baseline ?? join(BENCH_DIR, "baseline.json"),
        update: values.update,
        calibrate: calibrateN,
        safety: fraction(values.safety, DEFAULT_SAFETY, "--safety"),
        minMargin: fraction(values["min-margin"], DEFAULT_MIN_MARGIN, "--min-margin"),
        rounds: Math.max(1, positiveInt(values.rounds, CHECK_ROUNDS, "--rounds")),
        durationSec: Math.max(1, positiveInt(values.duration, CHECK_TIMING.durationSec, "--duration")),
        warmupSec: positiveInt(values.warmup, CHECK_TIMING.warmupSec, "--warmup"),
        threads: Math.max(1, positiveInt(values.threads, 1, "--threads")),
        tasksGet: !values["skip-tasks-get"] && !values["priced-only"],
        priced: !values["skip-priced"],
        pricedOnly: values["priced-only"],
        redisUrl: values.redis ?? process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379",
      },
    };
  }
  const mode: Mode = values.full ? "full" : "quick";
  const targets: TargetName[] = [];
  for (const t of values.targets?.split(",").map((name) => name.trim()) ?? TARGET_NAMES) {
    const known = TARGET_NAMES.find((name) => name === t);
    if (known === undefined) throw new Error(`unknown target ${t}; known: ${TARGET_NAMES.join(", ")}`);
    targets.push(known);
  }
  const wanted = values.scenarios?.split(",").map((s) => s.trim());
  for (const id of wanted ?? []) {
    if (!SCENARIOS.some((s) => s.id === id))
      throw new Error(`unknown scenario ${id}; known: ${SCENARIOS.map((s) => s.id).join(", ")}`);
  }
  // Naming a scenario runs it even if the mode would not (e.g. everything-echo in a quick run).
  const scenarios = SCENARIOS.filter((s) =>
    wanted === undefined ? s.concurrency[mode] !== undefined : wanted.includes(s.id),
  );
  return {
    run: {
      mode,
      write: values.write || values.full,
      durationSec: Math.max(1, positiveInt(values.duration, TIMING[mode].durationSec, "--duration")),
      warmupSec: positiveInt(values.warmup, TIMING[mode].warmupSec, "--warmup"),
      threads: Math.max(1, positiveInt(values.threads, 1, "--threads")),
      targets,
      scenarios,
      gatewayArgs: values["gateway-arg"] ?? [],
      settleSec: positiveInt(values.settle, 0, "--settle"),
      observability: values["skip-observability"] !== true,
      rounds: Math.max(1, positiveInt(values.rounds, 1, "--rounds")),
    },
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function levels(scenario: Scenario, mode: Mode): readonly number[] {
  return scenario.concurrency[mode] ?? scenario.concurrency.full ?? scenario.concurrency.quick ?? [1];
}

/** Starts upstreams and proxies on first use and stops them once no later scenario needs them. */
class Fleet {
  private readonly upstreams = new Map<UpstreamKind, Promise<RunningUpstream>>();
  private readonly targets = new Map<string, Promise<RunningTarget>>();

  upstream(kind: UpstreamKind): Promise<RunningUpstream> {
    let up = this.upstreams.get(kind);
    if (up === undefined) {
      up = kind === "fast" ? startFastUpstream() : startEverything();
      this.upstreams.set(kind, up);
    }
    return up;
  }

  target(name: TargetName, upstream: RunningUpstream, gatewayArgs: readonly string[]): Promise<RunningTarget> {
    const key = `${name} ${upstream.kind} ${gatewayArgs.join(" ")}`;
    let running = this.targets.get(key);
    if (running === undefined) {
      running = TARGETS[name].start(upstream, { gatewayArgs });
      this.targets.set(key, running);
    }
    return running;
  }

  /** Stops every proxy in front of this upstream, then the upstream. */
  async release(kind: UpstreamKind): Promise<void> {
    for (const [key, running] of this.targets) {
      if (key.split(" ")[1] !== kind) continue;
      this.targets.delete(key);
      await running.then(
        (t) => t.proxy?.stop(),
        () => undefined,
      );
    }
    const up = this.upstreams.get(kind);
    this.upstreams.delete(kind);
    await up?.then(
      (u) => u.child.stop(),
      () => undefined,
    );
  }
}

const fmtMs = (ms: number): string => ms.toFixed(3).padStart(8);

function progress(p: Point): string {
  const cpu = p.cpu.proxyUsPerReq === null ? "" : `  proxy ${p.cpu.proxyUsPerReq.toFixed(1)} µs/req`;
  const errors = p.errors.total > 0 ? `  ERRORS ${p.errors.total}` : "";
  const noise = p.cpu.foreignCores > 0.25 ? `  (other load ${p.cpu.foreignCores} cores)` : "";
  return `  ${p.scenario.padEnd(16)}${p.target.padEnd(8)} c=${String(p.concurrency).padEnd(4)}${p.rps.toLocaleString("en-US").padStart(8)} req/s  p50${fmtMs(p.latencyMs.p50)} ms  p99${fmtMs(p.latencyMs.p99)} ms${cpu}${errors}${noise}`;
}

async function run(opts: Options): Promise<Results> {
  const started = performance.now();
  const points: Point[] = [];
  const skipped: Skip[] = [];
  const skip = (scenario: string, target: TargetName | "*", reason: string): void => {
    skipped.push({ scenario, target, reason });
    console.log(`  skip ${target} in ${scenario}: ${reason}`);
  };
  const machine = await describeMachine();
  const fleet = new Fleet();

  const nPoints = opts.scenarios.reduce(
    (n, s) => n + levels(s, opts.mode).length * opts.rounds * s.targets.filter((t) => opts.targets.includes(t)).length,
    0,
  );
  const nWarm = opts.scenarios.reduce((n, s) => n + s.targets.filter((t) => opts.targets.includes(t)).length, 0);
  console.log(
    `bench (${opts.mode}): ${opts.scenarios.length} scenarios, ${nPoints} points × ${opts.durationSec} s + ${nWarm} warm-ups × ${opts.warmupSec} s ≈ ${Math.ceil((nPoints * (opts.durationSec + 0.3) + nWarm * (opts.warmupSec + 0.5)) / 10) * 10} s`,
  );
  console.log(
    `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.nginx ?? "no nginx"}, ${machine.wrk ?? "no wrk"}`,
  );

  for (const [index, scenario] of opts.scenarios.entries()) {
    console.log(`\n${scenario.id}: ${scenario.label}`);
    let upstream: RunningUpstream;
    try {
      upstream = await fleet.upstream(scenario.upstream);
    } catch (err) {
      skip(scenario.id, "*", `upstream ${scenario.upstream} did not start: ${errorMessage(err)}`);
      continue;
    }
    const gatewayArgs = [...(scenario.gatewayArgs ?? []), ...opts.gatewayArgs];
    const active: { name: TargetName; running: RunningTarget; request: WrkRequest }[] = [];
    for (const name of scenario.targets.filter((t) => opts.targets.includes(t))) {
      const why = TARGETS[name].unavailable();
      if (why !== undefined) {
        skip(scenario.id, name, why);
        continue;
      }
      try {
        const running = await fleet.target(name, upstream, gatewayArgs);
        const sessionHeaders = scenario.session ? await openSession(running.url) : {};
        const request: WrkRequest = {
          url: running.url,
          tool: scenario.tool,
          arguments: scenario.arguments,
          headers: { ...scenario.headers, ...sessionHeaders },
        };
        await checkOnce(request, scenario.expect);
        if (opts.warmupSec > 0) {
          // Unrecorded load first, so the JIT has compiled the hot path and pools are full.
          await runWrk({
            ...request,
            concurrency: Math.min(32, Math.max(...levels(scenario, opts.mode))),
            threads: opts.threads,
            durationSec: opts.warmupSec,
          });
        }
        active.push({ name, running, request });
      } catch (err) {
        skip(scenario.id, name, errorMessage(err).slice(0, 600));
      }
    }
    // Concurrency outside, targets inside: each level compares the targets within
    // seconds of each other, so drifting background load hurts the ratios less.
    // With rounds (--check), each level repeats the targets in turn: gateway, floor, gateway, floor, …
    const rounds = levels(scenario, opts.mode).flatMap((concurrency) =>
      Array.from({ length: opts.rounds }, (_, round) => ({ concurrency, round })),
    );
    for (const { concurrency, round } of rounds) {
      for (const t of [...active]) {
        if (opts.settleSec > 0) await settle(opts.settleSec);
        try {
          const measured = await measurePoint({
            scenario: scenario.id,
            target: t.name,
            proxy: t.running.proxy,
            upstream: upstream.child,
            request: t.request,
            concurrency,
            threads: opts.threads,
            durationSec: opts.durationSec,
          });
          const point = opts.rounds > 1 ? { ...measured, round } : measured;
          points.push(point);
          console.log(progress(point));
        } catch (err) {
          skip(scenario.id, t.name, errorMessage(err));
          active.splice(active.indexOf(t), 1);
        }
      }
    }
    if (!opts.scenarios.slice(index + 1).some((s) => s.upstream === scenario.upstream))
      await fleet.release(scenario.upstream);
  }

  const argv = process.argv.slice(2);
  return {
    meta: {
      date: new Date().toISOString(),
      mode: opts.mode,
      command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(" ")}` : ""}`,
      durationSec: opts.durationSec,
      warmupSec: opts.warmupSec,
      wrkThreads: opts.threads,
      machine,
      elapsedSec: (performance.now() - started) / 1000,
    },
    scenarios: opts.scenarios.map((s) => ({ id: s.id, label: s.label, upstream: s.upstream })),
    points,
    skipped,
  };
}

function writeOutputs(results: Results, write: boolean): void {
  mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(join(OUT_DIR, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  const svg = latencyPlot(results);
  const plotName = "latency-vs-concurrency.svg";
  if (svg !== "") writeFileSync(join(OUT_DIR, plotName), svg);
  writeFileSync(join(OUT_DIR, "results.md"), `${resultsSection(results, svg === "" ? undefined : plotName)}\n`);
  console.log(`\nwrote bench/out/results.json, bench/out/results.md${svg === "" ? "" : `, bench/out/${plotName}`}`);
  if (!write) return;
  const file = join(BENCH_DIR, "RESULTS.md");
  let existing: string | undefined;
  try {
    existing = readFileSync(file, "utf8");
  } catch {
    existing = undefined;
  }
  if (svg !== "") writeFileSync(join(BENCH_DIR, plotName), svg);
  writeFileSync(file, mergeResults(existing, resultsSection(results, svg === "" ? undefined : plotName)));
  console.log(`wrote bench/RESULTS.md${svg === "" ? "" : ` and bench/${plotName}`}`);
}

// ---------------------------------------------------------------------------
// The regression guard (issue 14): --check, --check --update, --check --calibrate N

const BASELINE_ABOUT =
  "The regression guard of issue 14, read and written by `npm run bench -- --check` (bench/run.ts, bench/lib/check.ts). " +
  "Each metric is the gateway's figure divided by its floor's, measured back to back on the same machine: req/s and CPU µs per request " +
  `at c=${CHECK_CONCURRENCY} against bench/floor.ts (hono + undici pass-through) for ${CHECK_SCENARIOS.join(", ")}, and tasks/get with 64 pollers ` +
  "against bench/tasks/get-floor.ts (node:http answering stored bytes from a Map). The priced paths of issue 27 (bench/lib/priced-paths.ts) " +
  "are ratios to the path each adds work to, measured in alternating rounds of 2 s points on one gateway (pricedCalibration, when present, says how their margins were measured): named-route/p50@1 and named-route/cpu@32 " +
  "(/mcp/a ÷ /mcp, json-1k legacy; aims ≤ +0.02 ms p50, ≤ +5 % CPU), federated/p50@1 (tools/call on a federated endpoint ÷ on its member's " +
  "route, 2026-07-28 requests; aim ≤ +0.05 ms), forwarded/p50@1 (a stdio session's echo sent to a second gateway process on the same Redis ÷ " +
  "sent to its owner; aim ≤ +0.3 ms); rate-limit/check-us is not a ratio but CPU µs per RateLimiter.check in process (one per-caller " +
  "rule, the caller's digest, metrics on; aim ≤ 3 µs). The in-process paths of issue 38 (bench/lib/micro-paths.ts, pipeline-share.ts, " +
  "credential-exchange.ts), each a ratio to a reference measured in the same process and round: validator/call, catalog/call and " +
  "credentials/hit ÷ JSON.parse+stringify of the tools/call message (aims ≤ 1.0×, ≤ 1.5×, ≤ 0.5×), catalog/list and pinning/list ÷ the same " +
  "of a 50-tool page (aims ≤ 0.5×, ≤ 0.25×), pipeline/steps (CPU samples under the pipeline's steps ÷ every other sample of a pass-through " +
  "request, profiled; aim ≤ 0.05) and credentials/exchange (wall time of a token exchange against oidc-provider ÷ a bare loopback POST; " +
  "aim ≤ 40×). Every one of them is better lower. " +
  `${PROMOTED_METRIC.key} (bench/lib/gc-promotions.ts): the bytes the scavenges promote to V8's old space per json-1k tools/call at c=64, ` +
  "the gateway's ÷ the floor's, both run with --trace-gc-nvp, in alternating rounds (a V8 pretenuring regression made it ≈ 45×); " +
  `lower is better, aim ≤ ${PROMOTED_AIM}×, and --check judges it against that fixed bound, not its margin, which only records the spread. A pass is ` +
  `${CHECK_ROUNDS} alternating rounds of ${CHECK_TIMING.durationSec} s points; its figure is the median of the rounds. margin: the largest relative worsening ` +
  "(0.10 = 10 %) still taken for noise; --check fails beyond it. Margins come from --check --calibrate N (see calibration.method); " +
  "--check --update rewrites the ratios and keeps the margins.";

const describeRun = (m: { cpus: number; cpuModel: string; memoryGiB: number; node: string }): string =>
  `${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}`;

interface Pass {
  results: Results;
  /** The bytes promoted per request (lib/gc-promotions.ts); null with --priced-only. */
  promotions: PromotionFigures | null;
  tasksGet: TasksGet | null;
  priced: PricedPaths | null;
  micro: MicroPaths | null;
  pipeline: number[] | null;
  exchange: ExchangeFigures | null;
  ratios: PassRatios;
  figures: Record<string, number | null>;
}

async function checkPass(c: CheckOptions, label: string): Promise<Pass> {
  console.log(`\n=== check pass ${label} ===`);
  const scenarios = SCENARIOS.filter((s) => !c.pricedOnly && (CHECK_SCENARIOS as readonly string[]).includes(s.id)).map(
    (s) => ({
      ...s,
      concurrency: { quick: [CHECK_CONCURRENCY] },
    }),
  );
  const results = await run({
    mode: "quick",
    write: false,
    durationSec: c.durationSec,
    warmupSec: c.warmupSec,
    threads: c.threads,
    targets: ["gateway", "floor"],
    scenarios,
    gatewayArgs: [],
    settleSec: 0,
    observability: false,
    rounds: c.rounds,
  });
  let promotions: PromotionFigures | null = null;
  if (!c.pricedOnly) {
    console.log(
      "\npromotions: bytes promoted to the old space per json-1k request c=64, gateway and floor with --trace-gc-nvp",
    );
    promotions = await measurePromotions(c.rounds, c.durationSec, c.warmupSec, (line) => console.log(`  ${line}`));
    console.log(renderPromotionAim(promotions));
  }
  let tasksGet: TasksGet | null = null;
  if (c.tasksGet) {
    console.log("\ntasks-get: tasks/get, 64 pollers, gateway vs bench/tasks/get-floor.ts");
    tasksGet = await polling({
      mode: "quick",
      plan: { ...PLANS.quick, pointSec: c.durationSec, warmupSec: Math.max(1, c.warmupSec) },
      compiled: fromDist(),
      settleLoad: [],
      settleSec: 0,
      rounds: c.rounds,
      log: (line) => console.log(`  ${line}`),
    });
    for (const [i, pair] of (tasksGet.rounds ?? [{ gateway: tasksGet.point, floor: tasksGet.floor }]).entries()) {
      const f = pair.floor;
      console.log(
        `  tasks-get       round ${i}  gateway ${pair.gateway.rps.toLocaleString("en-US")} req/s ${pair.gateway.gatewayCpuUs ?? "—"} µs/get p99 ${pair.gateway.p99.toFixed(3)} ms` +
          `  floor ${f?.rps.toLocaleString("en-US") ?? "—"} req/s ${f?.gatewayCpuUs ?? "—"} µs/get  (other load ${pair.gateway.foreignCores} / ${f?.foreignCores ?? "—"} cores)`,
      );
    }
  }
  let priced: PricedPaths | null = null;
  if (c.priced) {
    console.log("\npriced paths (issue 27): named route, federated call, rate-limit check, forwarded session request");
    priced = await measurePricedPaths({
      rounds: c.rounds,
      durationSec: Math.min(c.durationSec, PRICED_POINT_SEC),
      checks: PRICED_CHECKS,
      forwardedRequests: PRICED_FORWARDED_REQUESTS,
      redisUrl: c.redisUrl,
      log: (line) => console.log(`  ${line}`),
    });
    console.log(renderAims(priced));
    for (const s of priced.skipped) console.log(`  skipped ${s}`);
  }
  let micro: MicroPaths | null = null;
  if (c.priced) {
    console.log("\nin-process paths (issue 38): validation, catalog, pinning, token cache, each ÷ the message's JSON");
    micro = await measureMicroPaths(c.rounds, (line) => console.log(`  ${line}`));
    console.log(renderMicroAims(micro));
  }
  let pipeline: number[] | null = null;
  let exchange: ExchangeFigures | null = null;
  if (c.priced) {
    console.log("\nthe pipeline's steps on a pass-through request, in process (lib/pipeline-share.ts):");
    pipeline = await measurePipelineShare(c.rounds, PRICED_POINT_SEC, (line) => console.log(`  ${line}`));
    console.log("\na token exchange against oidc-provider ÷ a bare loopback POST (lib/credential-exchange.ts):");
    exchange = await measureExchange(c.rounds, EXCHANGE_REQUESTS);
    const ex = median(exchangeRatios(exchange));
    const steps = median(pipeline);
    console.log(
      `  pipeline steps ÷ rest ${steps?.toFixed(3) ?? "—"} (aim ≤ ${PIPELINE_AIM}: ${steps !== null && steps <= PIPELINE_AIM ? "met" : "NOT met"}); ` +
        `exchange ${median(exchange.exchangeMs)?.toFixed(2) ?? "—"} ms ÷ POST ${median(exchange.postMs)?.toFixed(3) ?? "—"} ms = ${ex?.toFixed(1) ?? "—"}× (aim ≤ ${EXCHANGE_AIM}×: ${ex !== null && ex <= EXCHANGE_AIM ? "met" : "NOT met"})`,
    );
  }
  const ratios = {
    ...(c.pricedOnly ? {} : passRatios(results.points, tasksGet)),
    ...(promotions === null ? {} : { [PROMOTED_METRIC.key]: promotionRatios(promotions) }),
    ...(priced === null ? {} : pricedRatios(priced)),
    ...(micro === null ? {} : microRatios(micro)),
    ...(pipeline === null ? {} : { [PIPELINE_METRIC.key]: pipeline }),
    ...(exchange === null ? {} : { [EXCHANGE_METRIC.key]: exchangeRatios(exchange) }),
  };
  return {
    results,
    promotions,
    tasksGet,
    priced,
    micro,
    pipeline,
    exchange,
    ratios,
    figures: summarizePass(ratios),
  };
}

/** Other processes' CPU during every measured point of the passes, in cores. */
function otherLoad(passes: readonly Pass[]): { median: number; max: number } {
  const loads: number[] = [];
  for (const p of passes) {
    loads.push(...p.results.points.map((pt) => pt.cpu.foreignCores));
    for (const pair of p.tasksGet?.rounds ?? [])
      loads.push(pair.gateway.foreignCores, ...(pair.floor === undefined ? [] : [pair.floor.foreignCores]));
  }
  return { median: Math.round((median(loads) ?? 0) * 100) / 100, max: Math.max(0, ...loads) };
}

/** One digest of every .ts file under src/, to tell whether the gateway's code changed between passes. */
function srcDigest(): string {
  const hash = createHash("sha256");
  const dir = join(ROOT, "src");
  for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .sort()) {
    hash
      .update(f)
      .update("\0")
      .update(readFileSync(join(dir, f)))
      .update("\0");
  }
  return hash.digest("hex");
}

function readBaseline(file: string): Baseline | undefined {
  if (!existsSync(file)) return undefined;
  return parseBaseline(readFileSync(file, "utf8"));
}

function renderCalibration(metrics: readonly CheckMetric[], baseline: Baseline): string {
  return renderTextTable(
    ["ratio to the floor", "passes", "median", "max deviation", "margin"],
    metrics.map((m) => {
      const e = baseline.metrics[m.key];
      return [
        m.label,
        e?.passes?.map((v) => v.toFixed(3)).join(" ") ?? "—",
        e === undefined ? "—" : e.ratio.toFixed(3),
        e?.maxDeviation === undefined ? "—" : `${(e.maxDeviation * 100).toFixed(1)} %`,
        e === undefined ? "—" : `${(e.margin * 100).toFixed(0)} %`,
      ];
    }),
  );
}

async function runCheck(c: CheckOptions): Promise<number> {
  const metrics = [
    ...(c.pricedOnly ? [] : [...checkMetrics(c.tasksGet), PROMOTED_METRIC]),
    ...(c.priced ? [...PRICED_METRICS, ...MICRO_METRICS, PIPELINE_METRIC, EXCHANGE_METRIC] : []),
  ];
  const old = readBaseline(c.baselineFile);
  if (old === undefined && c.calibrate === 0 && !c.update) {
    console.error(
      `no baseline at ${c.baselineFile}: make one with npm run bench -- --check --calibrate 5 (on a quiet machine)`,
    );
    return 1;
  }
  const started = new Date().toISOString();
  mkdirSync(OUT_DIR, { recursive: true });
  const tree = await gitState();
  const passes: Pass[] = [];
  const digests = new Set<string>();
  const n = Math.max(1, c.calibrate);
  for (let i = 0; i < n; i++) {
    // The gateway starts afresh each pass, from dist/ (built once, when the harness started) or with --src from src/
    // under tsx, where an edit to src/ meanwhile changes what is measured; the in-process paths always read src/.
    digests.add(srcDigest());
    passes.push(await checkPass(c, `${i + 1}/${n}`));
  }
  digests.add(srcDigest());
  const srcMoved =
    digests.size > 1
      ? `\nwarning: src/ changed while the passes ran (${digests.size} different states): the figures mix gateway versions.`
      : "";
  const machine = await describeMachine();
  const load = otherLoad(passes);
  const argv = process.argv.slice(2);
  const command = `npm run bench -- ${argv.join(" ")}`;
  writeFileSync(
    join(OUT_DIR, "check-results.json"),
    `${JSON.stringify({ date: started, command, machine, otherLoad: load, passes: passes.map((p) => ({ ratios: p.ratios, figures: p.figures, points: p.results.points, skipped: p.results.skipped, promotions: p.promotions, tasksGet: p.tasksGet, priced: p.priced, micro: p.micro, pipeline: p.pipeline, exchange: p.exchange })) }, null, 2)}\n`,
  );
  const busy =
    load.median > 0.25
      ? `\nnote: other processes used ${load.median} cores (median over the points, max ${load.max}) while this ran: the ratios are noisier than the margins assume; re-run on a quiet machine before trusting a verdict.`
      : "";
  // A --priced-only run leaves the account of the pass-through ratios (when, by what, where) as it was.
  const updated =
    c.pricedOnly && old !== undefined
      ? old.updated
      : { date: started, command, machine: describeRun(machine), ...(tree === undefined ? {} : { tree }) };

  if (c.calibrate > 0) {
    const baseline: Baseline = {
      version: 1,
      about: BASELINE_ABOUT,
      updated,
      calibration: null,
      metrics: {},
    };
    const calibration = {
      date: started,
      command,
      passes: c.calibrate,
      safety: c.safety,
      minMargin: c.minMargin,
      machine: describeRun(machine),
      otherLoad: load,
      method:
        (c.pricedOnly
          ? `${c.calibrate} passes of the priced paths alone (--priced-only) in a row on an unchanged tree (each ${c.rounds} rounds of each pair of paths at ${Math.min(c.durationSec, PRICED_POINT_SEC)} s, the pass's figure the median of its rounds). `
          : `${c.calibrate} check passes in a row on an unchanged tree (each ${c.rounds} rounds of gateway and floor at ${c.durationSec} s, the pass's figure the median of its rounds). `) +
        `ratio: the median of the passes; margin: the largest relative deviation of one pass from that median × ${c.safety}, rounded up to a whole per cent, at least ${c.minMargin * 100} %. ` +
        `Other processes used ${load.median} cores (median over every point; max ${load.max}) meanwhile${load.median > 0.25 ? ": a busy machine, so these margins are wide; recalibrate on a quiet one" : ""}.` +
        (digests.size > 1
          ? ` src/ changed while the passes ran (${digests.size} states): the spread includes those changes.`
          : ` src/ did not change during the passes (sha256 of src/**/*.ts ${[...digests][0]?.slice(0, 12) ?? "?"}).`),
    };
    // A --priced-only calibration is recorded apart, so that the pass-through margins keep the account of theirs.
    if (c.pricedOnly) {
      baseline.calibration = old?.calibration ?? null;
      baseline.pricedCalibration = calibration;
    } else {
      baseline.calibration = calibration;
      if (!c.priced && old?.pricedCalibration) baseline.pricedCalibration = old.pricedCalibration;
    }
    // Metrics this run did not measure (--priced-only, --skip-…) keep their entries.
    baseline.metrics = {
      ...old?.metrics,
      ...calibrate(
        passes.map((p) => p.figures),
        metrics,
        c.safety,
        c.minMargin,
      ),
    };
    writeFileSync(c.baselineFile, serializeBaseline(baseline));
    console.log(
      `\ncalibration over ${c.calibrate} passes (safety ×${c.safety}, min margin ${c.minMargin * 100} %):\n${renderCalibration(metrics, baseline)}${busy}${srcMoved}`,
    );
    console.log(`\nwrote ${c.baselineFile} and bench/out/check-results.json`);
    return 0;
  }

  const pass = passes[0];
  if (pass === undefined) return 1;
  if (old !== undefined) {
    const rows = compare(old, pass.figures, metrics);
    console.log(
      `\nregression check against ${c.baselineFile} (ratios of ${old.updated.date || "unknown date"}${old.calibration === null ? ", margins not calibrated" : `, margins calibrated ${old.calibration.date}`}):`,
    );
    console.log(renderCheck(rows));
    for (const s of pass.results.skipped) console.log(`skipped ${s.target} in ${s.scenario}: ${s.reason}`);
    console.log(`${busy}${srcMoved}`);
    if (!c.update) {
      const code = exitCodeOf(rows);
      console.log(
        code === 0
          ? "check passed"
          : "check FAILED: a ratio to the floor worsened beyond its noise margin (or was not measured); re-run to rule out noise",
      );
      console.log("wrote bench/out/check-results.json");
      return code;
    }
  }
  const baseline: Baseline = {
    version: 1,
    about: BASELINE_ABOUT,
    updated,
    calibration: old?.calibration ?? null,
    ...(old?.pricedCalibration && { pricedCalibration: old.pricedCalibration }),
    metrics: { ...old?.metrics, ...updateRatios(old, pass.figures, metrics) },
  };
  writeFileSync(c.baselineFile, serializeBaseline(baseline));
  console.log(`\nwrote the ratios of this pass to ${c.baselineFile} (margins kept) and bench/out/check-results.json`);
  return 0;
}

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2));
  if (parsed === undefined) {
    console.log(HELP);
    return 0;
  }
  if (findBinary("wrk") === undefined) {
    console.error(`wrk is not installed, and the bench needs it as its load generator; ${APT_HINT}`);
    return 1;
  }
  if ("check" in parsed) {
    const c = parsed.check;
    installCleanup();
    // Per pass: 8 points per round and 2 tasks/get points per round, warm-ups, start-ups and 1,000 tasks.
    // The priced paths: 6 points per round, warm-ups, a gateway start, the checks and two gateways with stdio.
    // … and the in-process paths of issue 38: ≈ 4 s a round for the micro figures, the pipeline's profiled points, the exchanges.
    const pricedSec = c.priced
      ? 6 * c.rounds * (PRICED_POINT_SEC + 2) + 60 + c.rounds * (4 + PRICED_POINT_SEC + 3) + 20
      : 0;
    // The promotions: 2 points per round, 2 starts and warm-ups of at least 2 s.
    const promotionSec = 2 * c.rounds * (c.durationSec + 1) + 2 * (Math.max(2, c.warmupSec) + 5);
    const perPass =
      (c.pricedOnly ? 0 : 10 * c.rounds * (c.durationSec + 2) + 10 * (c.warmupSec + 2) + 90 + promotionSec) + pricedSec;
    const ceilingSec = Math.max(1, c.calibrate) * perPass * 2 + 120;
    exitAfter("bench --check", ceilingSec);
    setChildLifetime(ceilingSec + 30);
    try {
      return await runCheck(c);
    } finally {
      await stopAll();
    }
  }
  const opts = parsed.run;
  if (findBinary("nginx") === undefined)
    console.warn(`note: nginx is not installed, so the reference proxy is skipped; ${APT_HINT}`);

  installCleanup();
  // Nothing may run forever: a generous ceiling over the planned time.
  const planned = opts.scenarios.reduce(
    (n, s) =>
      n + levels(s, opts.mode).length * opts.rounds * 4 * (opts.durationSec + opts.warmupSec + opts.settleSec + 2),
    0,
  );
  // The overhead runs: 3 repeats × 3 setups × 2 points, plus a gateway start and 1,000 tasks each.
  const observing = opts.observability ? 9 * (2 * (opts.durationSec + Math.max(1, opts.warmupSec)) + 15) : 0;
  const ceilingSec = (planned + observing) * 2 + 120;
  exitAfter("bench", ceilingSec);
  // Children outlive neither the ceiling nor, by much, a harness that was SIGKILLed.
  setChildLifetime(ceilingSec + 30);

  let code: number;
  try {
    const results = await run(opts);
    console.log(renderResultsText(results));
    writeOutputs(results, opts.write);
    // What metrics and tracing cost, on the pass-through and tasks/get (issue 11): medians of 3 repeats.
    if (opts.observability) {
      console.log("\nmetrics and tracing overhead (bench/observability.ts):");
      const observed = await runObservability({
        repeats: 3,
        durationSec: opts.durationSec,
        warmupSec: Math.max(1, opts.warmupSec),
        write: opts.write,
      });
      console.log(renderObservability(observed));
      if (opts.write) writeObservabilitySection(observed);
    }
    code = results.points.length > 0 ? 0 : 1;
  } finally {
    await stopAll();
  }
  // "Everything" includes the task figures; they run after, on a machine the pass-through run has left.
  if (opts.mode === "full" && code === 0) code = await runTaskBench(["--full"]);
  return code;
}

/** The task benchmarks are their own program (bench/tasks/run.ts); --full runs them after the pass-through. */
function runTaskBench(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(BENCH_DIR, "tasks", "run.ts"), ...args], {
      stdio: "inherit",
    });
    child.once("exit", (code) => resolve(code ?? 1));
  });
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    await stopAll();
    process.exit(1);
  },
);
