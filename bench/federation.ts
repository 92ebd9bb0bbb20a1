// `npm run bench -- federation`: what a federated endpoint costs (issue 22), on loopback, in a few minutes at most.
//
// One fast upstream (bench/fast-upstream.ts --tools 50) behind five named upstreams u0 … u4 (five URLs to one
// process, era legacy, so every member request crosses the era bridge as it would on the member's own route), and
// one federated endpoint `fed` over all five, at /mcp/fed. Every request of figures 1 and 2 is a 2026-07-28
// ("modern") one: the _meta envelope and the mirroring headers (bench/wrk/modern.lua), no capabilities declared.
//
//   1. tools/list on /mcp/fed (5 × 50 = 250 tools): p50 at c=1, and gateway CPU per list at c=1 and c=8
//      (medians of --rounds rounds).
//   2. tools/call of `u0__bench` on /mcp/fed vs `bench` on /mcp/u0 (the pass-through bench's json-1k request),
//      alternating rounds (the order swapped every round): p50 at c=1, CPU per call at c=1 and c=32.
//   3. RSS of one legacy federated session: a gateway started with --expose-gc and bench/lib/mem-probe.ts;
//      RSS after a full GC, then an SDK 1.x-style client's initialize + notifications/initialized on /mcp/fed and
//      one tools/call to each member (each member route then holds its own upstream session), RSS after GC again;
//      then a second such session, for the cost of a session once the code paths are warm. --starts gateways.
//
// Options: --rounds N (3), --duration S (3), --starts N (3), --skip 1,2,3.
import { median, runOptions, writeRawFigures } from "./lib/run-options.js";
import { gatewayLauncher, type ConfiguredGateway } from "./lib/config-gateway.js";
import { loadavg } from "node:os";
import { alternate } from "./lib/alternate.js";
import { ACCEPT, ARGS, checkModern, freshId, modernPoint, rpcAnswer, TOOL } from "./lib/modern-load.js";
import type { PointFigures } from "./lib/modern-load.js";
import { describeMachine } from "./lib/machine.js";
import { exitAfter, installCleanup, setChildLifetime, stopAll } from "./lib/procs.js";
import { openSession, startFastUpstream } from "./lib/upstreams.js";
import type { RunningUpstream } from "./lib/upstreams.js";
import { heapReport } from "./tasks/children.js";

const { rounds: ROUNDS, duration: DURATION, starts: STARTS, skip: SKIP } = runOptions();
/** The whole run may not take longer than this; children die with it (procs.ts, `timeout`). */
const CEILING_SEC = 120 + ROUNDS * DURATION * 10 + STARTS * 20;

const MEMBERS = 5;
const TOOLS_PER_MEMBER = 50;

const mib = (bytes: number): number => bytes / 2 ** 20;
const f = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

const gateways = gatewayLauncher("bench-federation-");
type Gateway = ConfiguredGateway;
const startGateway = (name: string, config: Record<string, unknown>): Promise<Gateway> => gateways.start(name, config);

function federatedConfig(upstream: RunningUpstream): Record<string, unknown> {
  const names = Array.from({ length: MEMBERS }, (_, i) => `u${i}`);
  return {
    upstreams: Object.fromEntries(names.map((n) => [n, { url: upstream.url, era: "legacy" }])),
    federated: { fed: { upstreams: names } },
  };
}

function noErrors(label: string, points: readonly PointFigures[]): void {
  for (const p of points) if (p.errors > 0) throw new Error(`${label}: ${p.errors} errors in a run`);
}

// ── 1. tools/list over 5 × 50 tools ──────────────────────────────────────────

interface Figure1 {
  tools: number;
  p50Ms: number;
  usPerListC1: number;
  usPerListC8: number;
  rpsC8: number;
  bytesPerResponse: number;
  foreignCores: number;
  rounds: { c1: PointFigures[]; c8: PointFigures[] };
}

async function figure1(gw: Gateway, upstream: RunningUpstream): Promise<Figure1> {
  const url = `${gw.origin}/mcp/fed`;
  const list = await checkModern(url, { method: "tools/list" });
  const tools = Array.isArray(list["tools"]) ? list["tools"].length : 0;
  if (tools !== MEMBERS * TOOLS_PER_MEMBER)
    throw new Error(`figure 1: /mcp/fed listed ${tools} tools, not ${MEMBERS * TOOLS_PER_MEMBER}`);
  if (list["nextCursor"] !== undefined) throw new Error("figure 1: the federated list has a second page");
  // Warm-up (JIT, pools), not recorded: a list is ~50 KiB, so a 1 s warm-up leaves the first rounds cold.
  await modernPoint(gw.child, upstream.child, url, { method: "tools/list" }, 8, DURATION);
  await modernPoint(gw.child, upstream.child, url, { method: "tools/list" }, 1, 1);
  const c1: PointFigures[] = [];
  const c8: PointFigures[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    c1.push(await modernPoint(gw.child, upstream.child, url, { method: "tools/list" }, 1, DURATION));
    c8.push(await modernPoint(gw.child, upstream.child, url, { method: "tools/list" }, 8, DURATION));
    process.stderr.write(`  figure 1: round ${r + 1}/${ROUNDS} done\n`);
  }
  noErrors("figure 1", [...c1, ...c8]);
  return {
    tools,
    p50Ms: median(c1.map((p) => p.p50Ms)),
    usPerListC1: median(c1.map((p) => p.gatewayUs)),
    usPerListC8: median(c8.map((p) => p.gatewayUs)),
    rpsC8: median(c8.map((p) => p.rps)),
    bytesPerResponse: median(c1.map((p) => p.bytesPerResponse)),
    foreignCores: Math.max(...[...c1, ...c8].map((p) => p.foreignCores)),
    rounds: { c1, c8 },
  };
}

// ── 2. federated tools/call vs the member's own route ────────────────────────

interface RouteFigures {
  p50Ms: number;
  usPerCallC1: number;
  usPerCallC32: number;
  rpsC32: number;
}

interface Figure2 {
  route: RouteFigures;
  federated: RouteFigures;
  /** Per round: federated p50 − route p50 at c=1, ms. */
  p50Deltas: number[];
  foreignCores: number;
  rounds: { route: PointFigures[]; federated: PointFigures[] };
}

async function figure2(gw: Gateway, upstream: RunningUpstream): Promise<Figure2> {
  const targets = {
    route: { url: `${gw.origin}/mcp/u0`, load: { method: "tools/call", name: TOOL } },
    federated: { url: `${gw.origin}/mcp/fed`, load: { method: "tools/call", name: `u0__${TOOL}` } },
  } as const;
  for (const t of Object.values(targets)) await checkModern(t.url, t.load);
  const run = (which: "route" | "federated", c: number, sec: number): Promise<PointFigures> =>
    modernPoint(gw.child, upstream.child, targets[which].url, targets[which].load, c, sec);
  // Warm-up (JIT, pools) on both, not recorded.
  await run("route", 32, DURATION);
  await run("federated", 32, DURATION);
  const lat = await alternate(["route", "federated"], ROUNDS, (which) => run(which, 1, DURATION));
  const cpu = await alternate(["route", "federated"], ROUNDS, (which) => run(which, 32, DURATION));
  const all = [...lat.route, ...lat.federated, ...cpu.route, ...cpu.federated];
  noErrors("figure 2", all);
  const figures = (which: "route" | "federated"): RouteFigures => ({
    p50Ms: median(lat[which].map((p) => p.p50Ms)),
    usPerCallC1: median(lat[which].map((p) => p.gatewayUs)),
    usPerCallC32: median(cpu[which].map((p) => p.gatewayUs)),
    rpsC32: median(cpu[which].map((p) => p.rps)),
  });
  return {
    route: figures("route"),
    federated: figures("federated"),
    p50Deltas: lat.federated.map((p, i) => round(p.p50Ms - (lat.route[i]?.p50Ms ?? NaN), 3)),
    foreignCores: Math.max(...all.map((p) => p.foreignCores)),
    rounds: { route: [...lat.route, ...cpu.route], federated: [...lat.federated, ...cpu.federated] },
  };
}

// ── 3. RSS of one legacy federated session ───────────────────────────────────

interface MemSample {
  /** RSS after a full GC, idle gateway. */
  idleMiB: number;
  /** After the first session (initialize + one call per member) and a GC. */
  oneMiB: number;
  /** After a second such session and a GC. */
  twoMiB: number;
  heapIdleMiB: number;
  heapOneMiB: number;
  heapTwoMiB: number;
}

/** An SDK 1.x-style client on the federated endpoint: initialize, initialized, one tools/call per member. */
async function legacySession(url: string): Promise<void> {
  const headers = await openSession(url);
  for (let i = 0; i < MEMBERS; i++) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: ACCEPT, ...headers },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: freshId(),
        method: "tools/call",
        params: { name: `u${i}__${TOOL}`, arguments: ARGS },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.text();
    if (res.status !== 200 || typeof rpcAnswer(body)["result"] !== "object")
      throw new Error(`legacy call of u${i}__${TOOL} on ${url}: ${res.status} ${body.slice(0, 300)}`);
  }
}

async function memOnce(upstream: RunningUpstream, s: number): Promise<MemSample> {
  const gw = await startGateway(`gateway-mem-${s}`, federatedConfig(upstream));
  try {
    // Let the start finish its asynchronous work before the GC.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const idle = await heapReport(gw.child, gw.pid);
    await legacySession(`${gw.origin}/mcp/fed`);
    const one = await heapReport(gw.child, gw.pid);
    await legacySession(`${gw.origin}/mcp/fed`);
    const two = await heapReport(gw.child, gw.pid);
    return {
      idleMiB: mib(idle.afterGc.rss),
      oneMiB: mib(one.afterGc.rss),
      twoMiB: mib(two.afterGc.rss),
      heapIdleMiB: mib(idle.afterGc.heapUsed),
      heapOneMiB: mib(one.afterGc.heapUsed),
      heapTwoMiB: mib(two.afterGc.heapUsed),
    };
  } finally {
    await gw.child.stop();
  }
}

interface Figure3 {
  median: MemSample;
  firstDeltaMiB: number;
  secondDeltaMiB: number;
  /** The first session's RSS delta, lowest … highest of the starts (RSS after GC keeps freed pages at times). */
  firstDeltaRange: string;
  heapFirstDeltaMiB: number;
  heapSecondDeltaMiB: number;
  samples: MemSample[];
}

async function figure3(upstream: RunningUpstream): Promise<Figure3> {
  const samples: MemSample[] = [];
  for (let s = 0; s < STARTS; s++) {
    samples.push(await memOnce(upstream, s));
    process.stderr.write(`  figure 3: start ${s + 1}/${STARTS} done\n`);
  }
  const med = (pick: (m: MemSample) => number): number => median(samples.map(pick));
  const range = (pick: (m: MemSample) => number): string => {
    const xs = samples.map(pick);
    return `${f(Math.min(...xs), 1)} … ${f(Math.max(...xs), 1)}`;
  };
  return {
    median: {
      idleMiB: med((m) => m.idleMiB),
      oneMiB: med((m) => m.oneMiB),
      twoMiB: med((m) => m.twoMiB),
      heapIdleMiB: med((m) => m.heapIdleMiB),
      heapOneMiB: med((m) => m.heapOneMiB),
      heapTwoMiB: med((m) => m.heapTwoMiB),
    },
    firstDeltaMiB: med((m) => m.oneMiB - m.idleMiB),
    secondDeltaMiB: med((m) => m.twoMiB - m.oneMiB),
    firstDeltaRange: range((m) => m.oneMiB - m.idleMiB),
    heapFirstDeltaMiB: med((m) => m.heapOneMiB - m.heapIdleMiB),
    heapSecondDeltaMiB: med((m) => m.heapTwoMiB - m.heapOneMiB),
    samples,
  };
}

// ── the run ──────────────────────────────────────────────────────────────────

const verdict = (ok: boolean): string => (ok ? "met" : "NOT met");
const signed = (n: number, digits: number): string => `${n >= 0 ? "+" : ""}${f(n, digits)}`;

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(CEILING_SEC + 30);
  exitAfter("bench federation", CEILING_SEC);
  const machine = await describeMachine();
  const load0 = loadavg()[0] ?? NaN;
  const t0 = performance.now();
  const upstream = await startFastUpstream(["--tools", String(TOOLS_PER_MEMBER)]);
  let f1: Figure1 | undefined;
  let f2: Figure2 | undefined;
  if (!SKIP.has("1") || !SKIP.has("2")) {
    const gw = await startGateway("gateway-fed", federatedConfig(upstream));
    try {
      if (!SKIP.has("1")) f1 = await figure1(gw, upstream);
      if (!SKIP.has("2")) f2 = await figure2(gw, upstream);
    } finally {
      await gw.child.stop();
    }
  }
  const f3 = SKIP.has("3") ? undefined : await figure3(upstream);
  await upstream.child.stop();
  const secs = (performance.now() - t0) / 1000;

  console.log(
    `\n${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.wrk ?? "wrk ?"}; ` +
      `load average ${f(load0)} at start, ${f(loadavg()[0] ?? NaN)} at end; ${f(secs, 0)} s; ` +
      `${ROUNDS} rounds of ${DURATION} s points, ${STARTS} gateway starts for the RSS` +
      (f1 || f2
        ? `; foreign cores at most ${f(Math.max(f1?.foreignCores ?? 0, f2?.foreignCores ?? 0))} in a point\n`
        : "\n"),
  );
  console.log("| figure | measured | target | verdict |");
  console.log("|---|---|---|---|");
  if (f1) {
    console.log(
      `| federated tools/list (${f1.tools} tools, ${f(f1.bytesPerResponse / 1024, 1)} KiB), p50 at c=1 | ${f(f1.p50Ms, 3)} ms | report | |`,
    );
    console.log(
      `| federated tools/list, gateway CPU per list | ${f(f1.usPerListC1, 0)} µs at c=1, ${f(f1.usPerListC8, 0)} µs at c=8 (${f(f1.rpsC8, 0)} lists/s) | report | |`,
    );
  }
  if (f2) {
    const d = f2.federated.p50Ms - f2.route.p50Ms;
    const dCpu = f2.federated.usPerCallC32 - f2.route.usPerCallC32;
    console.log(
      `| tools/call: federated /mcp/fed − route /mcp/u0, p50 at c=1 | ${f(f2.route.p50Ms, 3)} → ${f(f2.federated.p50Ms, 3)} ms: ${signed(d, 3)} ms (rounds: ${f2.p50Deltas.map((x) => signed(x, 3)).join(", ")}) | ≤ 0.05 ms | ${verdict(d <= 0.05)} |`,
    );
    console.log(
      `| tools/call: gateway CPU per call, route → federated | c=1: ${f(f2.route.usPerCallC1, 0)} → ${f(f2.federated.usPerCallC1, 0)} µs; c=32: ${f(f2.route.usPerCallC32, 0)} → ${f(f2.federated.usPerCallC32, 0)} µs (${signed(dCpu, 0)} µs) | report | |`,
    );
    console.log(`| (req/s at c=32, for reference) | ${f(f2.route.rpsC32, 0)} → ${f(f2.federated.rpsC32, 0)} | | |`);
  }
  if (f3) {
    const m = f3.median;
    console.log(
      `| RSS after GC: one legacy federated session, 5 upstream sessions open | ${f(m.idleMiB, 1)} → ${f(m.oneMiB, 1)} MiB: ${signed(f3.firstDeltaMiB, 1)} MiB (starts: ${f3.firstDeltaRange}); a second session: ${signed(f3.secondDeltaMiB, 1)} MiB | report | |`,
    );
    console.log(
      `| (V8 heap used after GC: idle, one session, two) | ${f(m.heapIdleMiB, 2)}, ${f(m.heapOneMiB, 2)}, ${f(m.heapTwoMiB, 2)} MiB: first ${signed(f3.heapFirstDeltaMiB, 2)}, second ${signed(f3.heapSecondDeltaMiB, 2)} MiB | | |`,
    );
  }
  writeRawFigures("federation", { machine, load0, rounds: ROUNDS, durationSec: DURATION, f1, f2, f3 });
}

try {
  await main();
} finally {
  await stopAll();
  gateways.cleanup();
}
