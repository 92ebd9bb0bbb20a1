// The benchmark harness (issue 5): pass-through tools/call through direct,
// gateway, nginx and the floor, measured with wrk, CPU read from /proc.
//
//   npm run bench                    quick run (< 2 min), prints the table
//   npm run bench -- --full          every scenario, longer points, then the task benchmarks
//                                    (bench/tasks/run.ts --full); rewrites bench/RESULTS.md
//   npm run bench -- --write         quick run, and rewrite bench/RESULTS.md too
//   npm run bench -- --help          all options
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { APT_HINT, findBinary } from './lib/binaries.js';
import { describeMachine } from './lib/machine.js';
import { mergeResults, resultsSection } from './lib/markdown.js';
import { checkOnce, measurePoint } from './lib/measure.js';
import { BENCH_DIR, OUT_DIR } from './lib/paths.js';
import { latencyPlot } from './lib/plot.js';
import { installCleanup, setChildLifetime, stopAll } from './lib/procs.js';
import type { Point, Results, Skip } from './lib/results.js';
import { SCENARIOS, TIMING } from './lib/scenarios.js';
import { settle } from './lib/settle.js';
import type { Mode, Scenario } from './lib/scenarios.js';
import { renderResultsText } from './lib/table.js';
import { TARGET_NAMES, TARGETS } from './lib/targets.js';
import type { RunningTarget, TargetName } from './lib/targets.js';
import { openSession, startEverything, startFastUpstream } from './lib/upstreams.js';
import type { RunningUpstream, UpstreamKind } from './lib/upstreams.js';
import { runWrk } from './lib/wrk.js';
import { renderObservability, runObservability, writeObservabilitySection } from './observability.js';
import type { WrkRequest } from './lib/wrk.js';

const HELP = `Usage: npm run bench -- [options]

  --full               all scenarios (SSE, server-everything), ${TIMING.full.durationSec} s per point, then the task
                       benchmarks (bench/tasks/run.ts --full); implies --write
  --write              rewrite the generated section of bench/RESULTS.md and bench/latency-vs-concurrency.svg
  --duration <s>       seconds per point (quick: ${TIMING.quick.durationSec}, full: ${TIMING.full.durationSec})
  --warmup <s>         warm-up seconds per scenario and target
  --threads <n>        wrk threads (default 1; the machine has two cores to share)
  --targets <list>     comma-separated subset of ${TARGET_NAMES.join(',')}
  --scenarios <list>   comma-separated subset of ${SCENARIOS.map((s) => s.id).join(',')}
  --gateway-arg <arg>  extra argument for the gateway CLI (repeatable)
  --settle <s>         before each point, wait up to this long for other load on the machine to pass (default 0)
  --skip-observability skip the metrics/tracing overhead runs (bench/observability.ts: 3 repeats after the table)

Results always go to bench/out/ (results.json, results.md, latency-vs-concurrency.svg).`;

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
}

function positiveInt(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} wants a whole number, got ${value}`);
  return n;
}

function parseOptions(argv: readonly string[]): Options | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      full: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      threads: { type: 'string' },
      targets: { type: 'string' },
      scenarios: { type: 'string' },
      'gateway-arg': { type: 'string', multiple: true },
      settle: { type: 'string' },
      'skip-observability': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return undefined;
  const mode: Mode = values.full ? 'full' : 'quick';
  const targets: TargetName[] = [];
  for (const t of values.targets?.split(',').map((name) => name.trim()) ?? TARGET_NAMES) {
    const known = TARGET_NAMES.find((name) => name === t);
    if (known === undefined) throw new Error(`unknown target ${t}; known: ${TARGET_NAMES.join(', ')}`);
    targets.push(known);
  }
  const wanted = values.scenarios?.split(',').map((s) => s.trim());
  for (const id of wanted ?? []) {
    if (!SCENARIOS.some((s) => s.id === id)) throw new Error(`unknown scenario ${id}; known: ${SCENARIOS.map((s) => s.id).join(', ')}`);
  }
  // Naming a scenario runs it even if the mode would not (e.g. everything-echo in a quick run).
  const scenarios = SCENARIOS.filter((s) => (wanted === undefined ? s.concurrency[mode] !== undefined : wanted.includes(s.id)));
  return {
    mode,
    write: values.write || values.full,
    durationSec: Math.max(1, positiveInt(values.duration, TIMING[mode].durationSec, '--duration')),
    warmupSec: positiveInt(values.warmup, TIMING[mode].warmupSec, '--warmup'),
    threads: Math.max(1, positiveInt(values.threads, 1, '--threads')),
    targets,
    scenarios,
    gatewayArgs: values['gateway-arg'] ?? [],
    settleSec: positiveInt(values.settle, 0, '--settle'),
    observability: values['skip-observability'] !== true,
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
      up = kind === 'fast' ? startFastUpstream() : startEverything();
      this.upstreams.set(kind, up);
    }
    return up;
  }

  target(name: TargetName, upstream: RunningUpstream, gatewayArgs: readonly string[]): Promise<RunningTarget> {
    const key = `${name} ${upstream.kind} ${gatewayArgs.join(' ')}`;
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
      if (key.split(' ')[1] !== kind) continue;
      this.targets.delete(key);
      await running.then((t) => t.proxy?.stop(), () => undefined);
    }
    const up = this.upstreams.get(kind);
    this.upstreams.delete(kind);
    await up?.then((u) => u.child.stop(), () => undefined);
  }
}

const fmtMs = (ms: number): string => ms.toFixed(3).padStart(8);

function progress(p: Point): string {
  const cpu = p.cpu.proxyUsPerReq === null ? '' : `  proxy ${p.cpu.proxyUsPerReq.toFixed(1)} µs/req`;
  const errors = p.errors.total > 0 ? `  ERRORS ${p.errors.total}` : '';
  const noise = p.cpu.foreignCores > 0.25 ? `  (other load ${p.cpu.foreignCores} cores)` : '';
  return `  ${p.scenario.padEnd(16)}${p.target.padEnd(8)} c=${String(p.concurrency).padEnd(4)}${p.rps.toLocaleString('en-US').padStart(8)} req/s  p50${fmtMs(p.latencyMs.p50)} ms  p99${fmtMs(p.latencyMs.p99)} ms${cpu}${errors}${noise}`;
}

async function run(opts: Options): Promise<Results> {
  const started = performance.now();
  const points: Point[] = [];
  const skipped: Skip[] = [];
  const skip = (scenario: string, target: TargetName | '*', reason: string): void => {
    skipped.push({ scenario, target, reason });
    console.log(`  skip ${target} in ${scenario}: ${reason}`);
  };
  const machine = await describeMachine();
  const fleet = new Fleet();

  const nPoints = opts.scenarios.reduce((n, s) => n + levels(s, opts.mode).length * s.targets.filter((t) => opts.targets.includes(t)).length, 0);
  const nWarm = opts.scenarios.reduce((n, s) => n + s.targets.filter((t) => opts.targets.includes(t)).length, 0);
  console.log(
    `bench (${opts.mode}): ${opts.scenarios.length} scenarios, ${nPoints} points × ${opts.durationSec} s + ${nWarm} warm-ups × ${opts.warmupSec} s ≈ ${Math.ceil((nPoints * (opts.durationSec + 0.3) + nWarm * (opts.warmupSec + 0.5)) / 10) * 10} s`,
  );
  console.log(`machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.nginx ?? 'no nginx'}, ${machine.wrk ?? 'no wrk'}`);

  for (const [index, scenario] of opts.scenarios.entries()) {
    console.log(`\n${scenario.id}: ${scenario.label}`);
    let upstream: RunningUpstream;
    try {
      upstream = await fleet.upstream(scenario.upstream);
    } catch (err) {
      skip(scenario.id, '*', `upstream ${scenario.upstream} did not start: ${errorMessage(err)}`);
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
          await runWrk({ ...request, concurrency: Math.min(32, Math.max(...levels(scenario, opts.mode))), threads: opts.threads, durationSec: opts.warmupSec });
        }
        active.push({ name, running, request });
      } catch (err) {
        skip(scenario.id, name, errorMessage(err).slice(0, 600));
      }
    }
    // Concurrency outside, targets inside: each level compares the targets within
    // seconds of each other, so drifting background load hurts the ratios less.
    for (const concurrency of levels(scenario, opts.mode)) {
      for (const t of [...active]) {
        if (opts.settleSec > 0) await settle(opts.settleSec);
        try {
          const point = await measurePoint({
            scenario: scenario.id,
            target: t.name,
            proxy: t.running.proxy,
            upstream: upstream.child,
            request: t.request,
            concurrency,
            threads: opts.threads,
            durationSec: opts.durationSec,
          });
          points.push(point);
          console.log(progress(point));
        } catch (err) {
          skip(scenario.id, t.name, errorMessage(err));
          active.splice(active.indexOf(t), 1);
        }
      }
    }
    if (!opts.scenarios.slice(index + 1).some((s) => s.upstream === scenario.upstream)) await fleet.release(scenario.upstream);
  }

  const argv = process.argv.slice(2);
  return {
    meta: {
      date: new Date().toISOString(),
      mode: opts.mode,
      command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
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
  writeFileSync(join(OUT_DIR, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const svg = latencyPlot(results);
  const plotName = 'latency-vs-concurrency.svg';
  if (svg !== '') writeFileSync(join(OUT_DIR, plotName), svg);
  writeFileSync(join(OUT_DIR, 'results.md'), `${resultsSection(results, svg === '' ? undefined : plotName)}\n`);
  console.log(`\nwrote bench/out/results.json, bench/out/results.md${svg === '' ? '' : `, bench/out/${plotName}`}`);
  if (!write) return;
  const file = join(BENCH_DIR, 'RESULTS.md');
  let existing: string | undefined;
  try {
    existing = readFileSync(file, 'utf8');
  } catch {
    existing = undefined;
  }
  if (svg !== '') writeFileSync(join(BENCH_DIR, plotName), svg);
  writeFileSync(file, mergeResults(existing, resultsSection(results, svg === '' ? undefined : plotName)));
  console.log(`wrote bench/RESULTS.md${svg === '' ? '' : ` and bench/${plotName}`}`);
}

async function main(): Promise<number> {
  const opts = parseOptions(process.argv.slice(2));
  if (opts === undefined) {
    console.log(HELP);
    return 0;
  }
  if (findBinary('wrk') === undefined) {
    console.error(`wrk is not installed, and the bench needs it as its load generator; ${APT_HINT}`);
    return 1;
  }
  if (findBinary('nginx') === undefined) console.warn(`note: nginx is not installed, so the reference proxy is skipped; ${APT_HINT}`);

  installCleanup();
  // Nothing may run forever: a generous ceiling over the planned time.
  const planned = opts.scenarios.reduce((n, s) => n + levels(s, opts.mode).length * 4 * (opts.durationSec + opts.warmupSec + opts.settleSec + 2), 0);
  // The overhead runs: 3 repeats × 3 setups × 2 points, plus a gateway start and 1,000 tasks each.
  const observing = opts.observability ? 9 * (2 * (opts.durationSec + Math.max(1, opts.warmupSec)) + 15) : 0;
  const ceilingSec = (planned + observing) * 2 + 120;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${ceilingSec} s; giving up`);
    void stopAll().finally(() => process.exit(2));
  }, ceilingSec * 1000);
  watchdog.unref();
  // Children outlive neither the ceiling nor, by much, a harness that was SIGKILLed.
  setChildLifetime(ceilingSec + 30);

  let code: number;
  try {
    const results = await run(opts);
    console.log(renderResultsText(results));
    writeOutputs(results, opts.write);
    // What metrics and tracing cost, on the pass-through and tasks/get (issue 11): medians of 3 repeats.
    if (opts.observability) {
      console.log('\nmetrics and tracing overhead (bench/observability.ts):');
      const observed = await runObservability({ repeats: 3, durationSec: opts.durationSec, warmupSec: Math.max(1, opts.warmupSec), write: opts.write });
      console.log(renderObservability(observed));
      if (opts.write) writeObservabilitySection(observed);
    }
    code = results.points.length > 0 ? 0 : 1;
  } finally {
    await stopAll();
  }
  // "Everything" includes the task figures; they run after, on a machine the pass-through run has left.
  if (opts.mode === 'full' && code === 0) code = await runTaskBench(['--full']);
  return code;
}

/** The task benchmarks are their own program (bench/tasks/run.ts); --full runs them after the pass-through. */
function runTaskBench(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(BENCH_DIR, 'tasks', 'run.ts'), ...args], { stdio: 'inherit' });
    child.once('exit', (code) => resolve(code ?? 1));
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
