// `npm run bench -- upstreams`: what serving many upstreams costs (issue 21), on loopback, in about two minutes.
//
//   1. named route vs single route: one gateway with `upstream` and `upstreams.a` both at one fast upstream; the
//      existing bench's request (tools/call, 1 KB JSON) through /mcp and /mcp/a, alternating, --rounds rounds of a
//      c=1 point (p50 latency) and a c=32 point (gateway CPU per request, req/s); medians of the rounds.
//   2. idle RSS: gateways with 1 and with 50 named upstreams (50 URLs to one fast upstream), started in turn
//      --starts times each, with --expose-gc and bench/lib/mem-probe.ts; RSS after start + a full GC, and again
//      after one call through every route (each route's connection pool then holds a socket).
//   3. isolation: 10 fast upstreams (each its own process), one gateway with upstreams u0 … u9. Load spread
//      round-robin over u0 … u8 (bench/wrk/tools-call.lua with @paths); "fault" rounds SIGSTOP u9's process and add a second wrk
//      sending calls to /mcp/u9, which time out after u9's headersTimeoutMs (504). Healthy req/s and p99,
//      fault ÷ no fault, alternating rounds. u9 is SIGCONTed after every fault round and on any exit.
//
// Options: --rounds N (3), --duration S (3), --starts N (3), --skip 1,2,3.
import { alternate } from "./lib/alternate.js";
import { median, runOptions, writeRawFigures } from "./lib/run-options.js";
import { gatewayLauncher, type ConfiguredGateway } from "./lib/config-gateway.js";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { describeMachine } from "./lib/machine.js";
import { checkOnce, measurePoint } from "./lib/measure.js";
import { exitAfter, installCleanup, isAlive, setChildLifetime, stopAll } from "./lib/procs.js";
import type { Point } from "./lib/results.js";
import { startFastUpstream } from "./lib/upstreams.js";
import type { RunningUpstream } from "./lib/upstreams.js";
import { runWrk, runWrkScript, totalErrors } from "./lib/wrk.js";
import type { WrkRequest, WrkResult } from "./lib/wrk.js";
import { heapReport, memoryOf, nodePid } from "./tasks/children.js";

const { rounds: ROUNDS, duration: DURATION, starts: STARTS, skip: SKIP } = runOptions();
/** The whole run may not take longer than this; children die with it (procs.ts, `timeout`). */
const CEILING_SEC = 120 + ROUNDS * DURATION * 8 + STARTS * 20;

const TOOLS_CALL_LUA = fileURLToPath(new URL("./wrk/tools-call.lua", import.meta.url));
/** The request of the pass-through bench's json-1k scenario (lib/scenarios.ts). */
const TOOL = "bench";
const ARGS = { size: 1024, format: "json", delayMs: 0 };
const HEADERS = { "MCP-Protocol-Version": "2025-11-25" };
const HUNG_TIMEOUT_MS = 200;

const mib = (bytes: number): number => bytes / 2 ** 20;

const gateways = gatewayLauncher("bench-upstreams-");
type Gateway = ConfiguredGateway;
const startGateway = (name: string, config: Record<string, unknown>): Promise<Gateway> => gateways.start(name, config);

const request = (url: string): WrkRequest => ({ url, tool: TOOL, arguments: ARGS, headers: HEADERS });

// ── 1. named route vs single route ───────────────────────────────────────────

interface RouteFigures {
  p50Ms: number;
  usPerReq: number;
  rps: number;
}

interface Figure1 {
  single: RouteFigures;
  named: RouteFigures;
  rounds: { single: Point[]; named: Point[] };
}

async function figure1(upstream: RunningUpstream): Promise<Figure1> {
  const upstreamBlock = { url: upstream.url, era: "legacy" };
  const gw = await startGateway("gateway-1", { upstream: upstreamBlock, upstreams: { a: upstreamBlock } });
  const urls = { single: `${gw.origin}/mcp`, named: `${gw.origin}/mcp/a` };
  for (const url of Object.values(urls)) await checkOnce(request(url), '"result"');
  const point = (which: "single" | "named", concurrency: number, durationSec: number): Promise<Point> =>
    measurePoint({
      scenario: `json-1k ${which}`,
      target: "gateway",
      proxy: gw.child,
      upstream: upstream.child,
      request: request(urls[which]),
      concurrency,
      threads: 1,
      durationSec,
    });
  // Warm-up (JIT, pools) on both routes, not recorded.
  await point("single", 32, 1);
  await point("named", 32, 1);
  const lat = await alternate(["single", "named"], ROUNDS, (which) => point(which, 1, DURATION));
  const cpu = await alternate(["single", "named"], ROUNDS, (which) => point(which, 32, DURATION));
  await gw.child.stop();
  const figures = (which: "single" | "named"): RouteFigures => ({
    p50Ms: median(lat[which].map((p) => p.latencyMs.p50)),
    usPerReq: median(cpu[which].map((p) => p.cpu.proxyUsPerReq ?? NaN)),
    rps: median(cpu[which].map((p) => p.rps)),
  });
  for (const p of [...lat.single, ...lat.named, ...cpu.single, ...cpu.named])
    if (p.errors.total > 0) throw new Error(`figure 1: ${p.errors.total} errors at ${p.scenario} c=${p.concurrency}`);
  return {
    single: figures("single"),
    named: figures("named"),
    rounds: { single: [...lat.single, ...cpu.single], named: [...lat.named, ...cpu.named] },
  };
}

// ── 2. idle RSS, 1 vs 50 upstreams ───────────────────────────────────────────

interface MemSample {
  /** VmRSS right after the start line, before any GC. */
  startMiB: number;
  /** process.memoryUsage().rss after a full GC. */
  idleMiB: number;
  heapUsedMiB: number;
  /** After one call through every route, and a GC. */
  usedMiB: number;
}

async function memOnce(count: number, upstream: RunningUpstream): Promise<MemSample> {
  const upstreams = Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`u${i}`, { url: upstream.url, era: "legacy" }]),
  );
  const gw = await startGateway(`gateway-${count}`, { upstreams });
  try {
    const startMiB = mib(memoryOf(gw.pid).rss);
    // Let the start finish its asynchronous work (era probes are off: era legacy) before the GC.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const idle = await heapReport(gw.child, gw.pid);
    for (let i = 0; i < count; i++) await checkOnce(request(`${gw.origin}/mcp/u${i}`), '"result"');
    const used = await heapReport(gw.child, gw.pid);
    return {
      startMiB,
      idleMiB: mib(idle.afterGc.rss),
      heapUsedMiB: mib(idle.afterGc.heapUsed),
      usedMiB: mib(used.afterGc.rss),
    };
  } finally {
    await gw.child.stop();
  }
}

interface Figure2 {
  one: MemSample;
  fifty: MemSample;
  samples: { one: MemSample[]; fifty: MemSample[] };
}

async function figure2(upstream: RunningUpstream): Promise<Figure2> {
  const one: MemSample[] = [];
  const fifty: MemSample[] = [];
  for (let s = 0; s < STARTS; s++) {
    // In turn, so a change in the machine's state falls on both alike.
    if (s % 2 === 0) {
      one.push(await memOnce(1, upstream));
      fifty.push(await memOnce(50, upstream));
    } else {
      fifty.push(await memOnce(50, upstream));
      one.push(await memOnce(1, upstream));
    }
    process.stderr.write(`  figure 2: start ${s + 1}/${STARTS} done\n`);
  }
  const med = (list: MemSample[]): MemSample => ({
    startMiB: median(list.map((m) => m.startMiB)),
    idleMiB: median(list.map((m) => m.idleMiB)),
    heapUsedMiB: median(list.map((m) => m.heapUsedMiB)),
    usedMiB: median(list.map((m) => m.usedMiB)),
  });
  return { one: med(one), fifty: med(fifty), samples: { one, fifty } };
}

// ── 3. isolation: one of 10 upstreams hung ───────────────────────────────────

interface IsoRound {
  rps: number;
  p99Ms: number;
  p50Ms: number;
  errors: number;
  /** The hung route's wrk (fault rounds only). */
  hung?: { requests: number; status: number; timeouts: number; p50Ms: number };
}

interface Figure3 {
  noFault: IsoRound[];
  fault: IsoRound[];
  rps: { noFault: number; fault: number };
  p99Ms: { noFault: number; fault: number };
}

const HEALTHY_CONCURRENCY = 32;
const HUNG_CONCURRENCY = 4;

async function figure3(): Promise<Figure3> {
  const ups: RunningUpstream[] = [];
  for (let i = 0; i < 10; i++) ups.push(await startFastUpstream());
  const upstreams = Object.fromEntries(
    ups.map((u, i) => [
      `u${i}`,
      { url: u.url, era: "legacy", ...(i === 9 ? { headersTimeoutMs: HUNG_TIMEOUT_MS, connectTimeoutMs: 1_000 } : {}) },
    ]),
  );
  const gw = await startGateway("gateway-10", { upstreams });
  const hungPid = nodePid((ups[9] as RunningUpstream).child, "fast-upstream");
  const cont = (): void => {
    try {
      process.kill(hungPid, "SIGCONT");
    } catch {
      // gone
    }
  };
  process.on("exit", cont);
  try {
    for (let i = 0; i < 10; i++) await checkOnce(request(`${gw.origin}/mcp/u${i}`), '"result"');
    const healthyPaths = Array.from({ length: 9 }, (_, i) => `/mcp/u${i}`).join(",");
    const healthy = (durationSec: number): Promise<WrkResult> =>
      runWrkScript(TOOLS_CALL_LUA, `${gw.origin}/mcp`, HEALTHY_CONCURRENCY, 1, durationSec, [
        JSON.stringify(TOOL),
        JSON.stringify(ARGS),
        `@paths=${healthyPaths}`,
        ...Object.entries(HEADERS).map(([k, v]) => `${k}: ${v}`),
      ]);
    const summarise = (w: WrkResult): IsoRound => ({
      rps: Math.round(w.requests / w.durationSec),
      p99Ms: w.latencyUs.p99 / 1000,
      p50Ms: w.latencyUs.p50 / 1000,
      errors: totalErrors(w.errors),
    });
    await healthy(1); // warm-up
    const noFault: IsoRound[] = [];
    const fault: IsoRound[] = [];
    const faultRound = async (): Promise<IsoRound> => {
      process.kill(hungPid, "SIGSTOP");
      try {
        const [h, hung] = await Promise.all([
          healthy(DURATION),
          runWrk({
            ...request(`${gw.origin}/mcp/u9`),
            concurrency: HUNG_CONCURRENCY,
            threads: 1,
            durationSec: DURATION,
          }),
        ]);
        return {
          ...summarise(h),
          hung: {
            requests: hung.requests,
            status: hung.errors.status,
            timeouts: hung.errors.timeout,
            p50Ms: hung.latencyUs.p50 / 1000,
          },
        };
      } finally {
        cont();
      }
    };
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        noFault.push(summarise(await healthy(DURATION)));
        fault.push(await faultRound());
      } else {
        fault.push(await faultRound());
        noFault.push(summarise(await healthy(DURATION)));
      }
      process.stderr.write(`  figure 3: round ${r + 1}/${ROUNDS} done\n`);
    }
    if (!isAlive(gw.child)) throw new Error(`the gateway died:\n${gw.child.recentOutput()}`);
    return {
      noFault,
      fault,
      rps: { noFault: median(noFault.map((x) => x.rps)), fault: median(fault.map((x) => x.rps)) },
      p99Ms: { noFault: median(noFault.map((x) => x.p99Ms)), fault: median(fault.map((x) => x.p99Ms)) },
    };
  } finally {
    cont();
    process.off("exit", cont);
    await gw.child.stop();
    await Promise.all(ups.map((u) => u.child.stop()));
  }
}

// ── the run ──────────────────────────────────────────────────────────────────

const f = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const verdict = (ok: boolean): string => (ok ? "met" : "NOT met");

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(CEILING_SEC + 30);
  exitAfter("bench upstreams", CEILING_SEC);
  const machine = await describeMachine();
  const load0 = loadavg()[0] ?? NaN;
  const t0 = performance.now();
  const upstream = await startFastUpstream();
  const f1 = SKIP.has("1") ? undefined : await figure1(upstream);
  const f2 = SKIP.has("2") ? undefined : await figure2(upstream);
  await upstream.child.stop();
  const f3 = SKIP.has("3") ? undefined : await figure3();
  const secs = (performance.now() - t0) / 1000;

  console.log(
    `\n${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.wrk ?? "wrk ?"}; ` +
      `load average ${f(load0)} at start, ${f(loadavg()[0] ?? NaN)} at end; ${f(secs, 0)} s; ` +
      `${ROUNDS} rounds of ${DURATION} s points, ${STARTS} starts per gateway\n`,
  );
  console.log("| figure | measured | target | verdict |");
  console.log("|---|---|---|---|");
  if (f1) {
    const dP50 = f1.named.p50Ms - f1.single.p50Ms;
    const dCpu = (f1.named.usPerReq / f1.single.usPerReq - 1) * 100;
    console.log(
      `| named route /mcp/a − single /mcp, p50 at c=1 | ${f(f1.single.p50Ms, 3)} → ${f(f1.named.p50Ms, 3)} ms: ${dP50 >= 0 ? "+" : ""}${f(dP50, 3)} ms | ≤ 0.02 ms | ${verdict(dP50 <= 0.02)} |`,
    );
    console.log(
      `| named route, gateway CPU per request at c=32 | ${f(f1.single.usPerReq, 1)} → ${f(f1.named.usPerReq, 1)} µs: ${dCpu >= 0 ? "+" : ""}${f(dCpu, 1)} % | ≤ 5 % | ${verdict(dCpu <= 5)} |`,
    );
    console.log(`| (req/s at c=32, for reference) | ${f(f1.single.rps, 0)} → ${f(f1.named.rps, 0)} | | |`);
  }
  if (f2) {
    const d = f2.fifty.idleMiB - f2.one.idleMiB;
    console.log(
      `| idle RSS after GC, 50 upstreams − 1 | ${f(f2.one.idleMiB, 1)} → ${f(f2.fifty.idleMiB, 1)} MiB: +${f(d, 1)} MiB | ≤ 10 MiB | ${verdict(d <= 10)} |`,
    );
    console.log(
      `| (RSS at the start line; after one call per route + GC; heap used idle) | ${f(f2.one.startMiB, 1)} → ${f(f2.fifty.startMiB, 1)}; ${f(f2.one.usedMiB, 1)} → ${f(f2.fifty.usedMiB, 1)}; ${f(f2.one.heapUsedMiB, 1)} → ${f(f2.fifty.heapUsedMiB, 1)} MiB | | |`,
    );
  }
  if (f3) {
    const rpsRatio = f3.rps.fault / f3.rps.noFault;
    const p99Ratio = f3.p99Ms.fault / f3.p99Ms.noFault;
    console.log(
      `| 9 healthy of 10, u9 hung: req/s fault ÷ no fault | ${f(f3.rps.noFault, 0)} → ${f(f3.rps.fault, 0)}: ${f(rpsRatio, 3)} | ≥ 0.90 | ${verdict(rpsRatio >= 0.9)} |`,
    );
    console.log(
      `| 9 healthy of 10, u9 hung: p99 fault ÷ no fault | ${f(f3.p99Ms.noFault, 2)} → ${f(f3.p99Ms.fault, 2)} ms: ${f(p99Ratio, 2)} | ≤ 2 | ${verdict(p99Ratio <= 2)} |`,
    );
    const hung = f3.fault.map((r) => r.hung);
    console.log(
      `| (hung route per fault round: calls, 5xx, wrk timeouts, p50) | ${hung.map((h) => (h ? `${h.requests}, ${h.status}, ${h.timeouts}, ${f(h.p50Ms, 0)} ms` : "")).join("; ")} | | |`,
    );
    const errs = [...f3.noFault, ...f3.fault].reduce((n, r) => n + r.errors, 0);
    if (errs > 0) console.log(`\nwarning: ${errs} errors on the healthy routes`);
  }
  writeRawFigures("upstreams", { machine, load0, rounds: ROUNDS, durationSec: DURATION, f1, f2, f3 });
}

try {
  await main();
} finally {
  await stopAll();
  gateways.cleanup();
}
