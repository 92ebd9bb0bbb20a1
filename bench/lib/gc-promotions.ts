// What the pass-through promotes to V8's old space per request, as a ratio to the floor's (issue 38): the guard
// against V8's allocation-site pretenuring coming back. A per-request class, or a per-request closure stored on a
// long-lived structure, once made V8 pretenure the request's objects: ≈ 4.5 KB promoted per request against ≈ 100 B
// for the floor (bench/floor.ts), and old-space garbage that only a mark-compact frees. Fixed, the gateway promotes
// about what the floor does; a change that brings it back multiplies the figure by tens.
//
// The gateway (dist/, as the harness runs it: lib/targets.ts) and the floor each run with --trace-gc-nvp in front of
// one fast upstream; per round, each takes the json-1k tools/call at c=64 for the point's seconds, the two in turns
// (lib/alternate.ts). The bytes the scavenges (gc=s lines) report as `promoted=` within the point, divided by the
// requests wrk completed, is the figure; the gateway's ÷ the floor's of the same round the ratio. By hand, one target
// at a time: bench/investigations/gc-promotions.sh.
//
// Aim, stated before measuring: ≤ 3× the floor (≈ 1× now; the regression was ≈ 45×). The figure is a ratio of two
// small numbers (≈ 100 B against ≈ 100 B) that spreads from pass to pass, but a regression is not a drift of some
// per cent: so the guard judges it against that fixed bound (CheckMetric.bound), not the baseline's margin.
import type { CheckMetric } from "./check.js";
import { median, roundRatios } from "./check.js";
import { alternate } from "./alternate.js";
import { checkOnce } from "./measure.js";
import { SCENARIOS } from "./scenarios.js";
import { TARGETS } from "./targets.js";
import type { RunningTarget } from "./targets.js";
import { startFastUpstream } from "./upstreams.js";
import { runWrk } from "./wrk.js";

export const PROMOTED_AIM = 3;

export const PROMOTED_METRIC: CheckMetric = {
  key: "pass-through/promoted-per-req@64",
  label: "json-1k bytes promoted/req c=64 ÷ floor",
  better: "lower",
  bound: PROMOTED_AIM,
};

const CONCURRENCY = 64;
/** A round in which either side ran fewer scavenges than this says too little to count. */
export const MIN_SCAVENGES = 3;

/** What the scavenges and mark-compacts of a stretch of --trace-gc-nvp output report. */
export interface GcTotals {
  scavenges: number;
  /** Bytes the scavenges promoted to the old space (their `promoted=`). */
  promotedBytes: number;
  markCompacts: number;
}

/** One target's point: requests completed and what the collector did meanwhile. */
export interface GcPoint extends GcTotals {
  requests: number;
}

export interface PromotionFigures {
  gateway: GcPoint[];
  floor: GcPoint[];
}

/**
 * Sums --trace-gc-nvp lines (`[pid:0x…]   1234 ms: pause=0.5 … gc=s … promoted=1234 … nodes_promoted=0 …`): the
 * scavenges' `promoted=` bytes, and counts the scavenges (gc=s) and mark-compacts (gc=mc). Other lines (the target's
 * own output) are skipped.
 */
export function gcTotals(lines: readonly string[]): GcTotals {
  const out: GcTotals = { scavenges: 0, promotedBytes: 0, markCompacts: 0 };
  for (const line of lines) {
    const fields = line.split(/\s+/);
    if (fields.includes("gc=mc")) out.markCompacts++;
    if (!fields.includes("gc=s")) continue;
    out.scavenges++;
    const promoted = fields.find((f) => f.startsWith("promoted="));
    const bytes = Number(promoted?.slice("promoted=".length));
    if (Number.isFinite(bytes)) out.promotedBytes += bytes;
  }
  return out;
}

/** Bytes promoted per request, or null when the point says too little (no request, too few scavenges). */
export function promotedPerRequest(p: GcPoint): number | null {
  return p.requests > 0 && p.scavenges >= MIN_SCAVENGES ? p.promotedBytes / p.requests : null;
}

/** Per round, the gateway's bytes promoted per request ÷ the floor's; rounds either side could not measure are left out. */
export function promotionRatios(f: PromotionFigures): number[] {
  return roundRatios(
    f.gateway.map((p) => promotedPerRequest(p) ?? NaN),
    f.floor.map((p) => promotedPerRequest(p) ?? NaN),
  );
}

/** A process's output lines as they come, with the lines of one stretch (a measured point) read back. */
class LineLog {
  private readonly lines: string[] = [];
  readonly push = (line: string): void => {
    this.lines.push(line);
  };
  get length(): number {
    return this.lines.length;
  }
  since(from: number): string[] {
    return this.lines.slice(from);
  }
  /** Drops what was read, so that a long pass keeps no more than a point's lines. */
  clear(): void {
    this.lines.length = 0;
  }
}

/** Lets the child's last lines of a point reach us through its pipe before they are read. */
const drain = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 250));

/** One pass: both targets started with --trace-gc-nvp, a warm-up each, then `rounds` alternating points. */
export async function measurePromotions(
  rounds: number,
  durationSec: number,
  warmupSec: number,
  log: (line: string) => void,
): Promise<PromotionFigures> {
  const scenario = SCENARIOS.find((s) => s.id === "json-1k");
  if (scenario === undefined) throw new Error("no json-1k scenario");
  const upstream = await startFastUpstream();
  const running: RunningTarget[] = [];
  try {
    const logs = { gateway: new LineLog(), floor: new LineLog() };
    const start = async (name: "gateway" | "floor") => {
      const t = await TARGETS[name].start(upstream, { nodeArgs: ["--trace-gc-nvp"], onLine: logs[name].push });
      running.push(t);
      const request = {
        url: t.url,
        tool: scenario.tool,
        arguments: scenario.arguments,
        headers: scenario.headers ?? {},
      };
      await checkOnce(request, scenario.expect);
      // Unrecorded load first: the JIT compiles the hot path, and V8 makes its pretenuring decisions, which take a
      // few scavenges of feedback.
      await runWrk({ ...request, concurrency: CONCURRENCY, threads: 1, durationSec: Math.max(2, warmupSec) });
      return request;
    };
    const requests = { gateway: await start("gateway"), floor: await start("floor") };
    const figures = await alternate(["gateway", "floor"], rounds, async (name, round) => {
      await drain();
      logs[name].clear();
      const wrk = await runWrk({ ...requests[name], concurrency: CONCURRENCY, threads: 1, durationSec });
      await drain();
      if (wrk.errors.status + wrk.errors.timeout + wrk.errors.connect > 0)
        throw new Error(`promotions: ${name} answered with errors (${JSON.stringify(wrk.errors)})`);
      const point: GcPoint = { requests: wrk.requests, ...gcTotals(logs[name].since(0)) };
      const perReq = promotedPerRequest(point);
      log(
        `promoted        round ${round}  ${name.padEnd(8)} ${wrk.requests} requests, ${point.scavenges} scavenges, ` +
          `${perReq === null ? "—" : perReq.toFixed(0)} B promoted/req, ${point.markCompacts} mark-compacts`,
      );
      return point;
    });
    return figures;
  } finally {
    for (const t of running) await t.proxy?.stop();
    await upstream.child.stop();
  }
}

/** The aim, from a pass's figures: the median ratio against PROMOTED_AIM. */
export function renderPromotionAim(f: PromotionFigures): string {
  const ratio = median(promotionRatios(f));
  const per = (ps: readonly GcPoint[]): string => {
    const m = median(ps.map(promotedPerRequest).filter((x): x is number => x !== null));
    return m === null ? "—" : `${m.toFixed(0)} B`;
  };
  return (
    `  promoted per request: gateway ${per(f.gateway)}, floor ${per(f.floor)}, ratio ${ratio?.toFixed(2) ?? "—"}× ` +
    `(aim and bound ≤ ${PROMOTED_AIM}×: ${ratio !== null && ratio <= PROMOTED_AIM ? "met" : "NOT met"})`
  );
}
