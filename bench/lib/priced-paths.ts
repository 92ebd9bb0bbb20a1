// The new paths of issues 21–24, priced by the regression guard (`npm run bench -- --check`, issue 27): what each
// adds to the path it is built on, as a ratio to that path measured in the same rounds (or, for the rate-limit
// check, an absolute figure measured in process), with the aims of issue 27:
//
//   named route      /mcp/a against /mcp on one gateway (upstream + upstreams.a, one fast upstream), json-1k legacy
//                    tools/call: p50 at c=1 (aim: ≤ +0.02 ms) and gateway CPU per request at c=32 (aim: ≤ +5 %)
//   federated call   tools/call a__bench on /mcp/fed (federated over a and b) against bench on /mcp/a, 2026-07-28
//                    requests: p50 at c=1 (aim: ≤ +0.05 ms)
//   rate-limit check RateLimiter.check in process, one per-caller rule, the caller's digest, metrics on
//                    (lib/rate-check.ts): CPU µs per check (aim: ≤ 3 µs)
//   forwarded        echo on a stdio session held by gateway A, sent to A and to B (two CLI processes on one
//                    Redis sharing a socket directory, B reaching A over a Unix socket as --workers does,
//                    lib/forwarded-session.ts): p50 (aim: ≤ +0.3 ms)
//
// The guard's metrics (higher is worse for every one): named ÷ single p50 and CPU, federated ÷ route p50,
// forwarded ÷ owner p50, and the check's µs. Rounds alternate the two paths (lib/alternate.ts); a pass's figure
// is the median of its rounds.
import { alternate } from "./alternate.js";
import type { CheckMetric, PassRatios } from "./check.js";
import { median, roundRatios } from "./check.js";
import { gatewayLauncher } from "./config-gateway.js";
import { forwardedSession, type ForwardedFigures } from "./forwarded-session.js";
import { checkOnce, measurePoint } from "./measure.js";
import { ARGS, checkModern, modernPoint, TOOL, type PointFigures } from "./modern-load.js";
import { PRICED_CASE, rateCheckCosts } from "./rate-check.js";
import type { Point } from "./results.js";
import { renderTextTable } from "./table.js";
import { startFastUpstream } from "./upstreams.js";

export interface PricedOptions {
  rounds: number;
  /** Seconds per wrk point (p50 at c=1, CPU at c=32). */
  durationSec: number;
  /** Checks per rate-limit measurement (one per round). */
  checks: number;
  /** echo requests to each gateway for the forwarded figure. */
  forwardedRequests: number;
  redisUrl: string;
  log: (line: string) => void;
}

/** What one pass measured: per round, both paths of each pair. */
export interface PricedPaths {
  namedRoute: { latency: Record<"single" | "named", Point[]>; cpu: Record<"single" | "named", Point[]> };
  federated: Record<"route" | "federated", PointFigures[]>;
  rateCheckUs: number[];
  /** Null when it could not be measured (no Redis); the reason is in `skipped`. */
  forwarded: ForwardedFigures | null;
  skipped: string[];
}

export const PRICED_METRICS: readonly CheckMetric[] = [
  { key: "named-route/p50@1", label: "named route p50 c=1 ÷ single route", better: "lower" },
  { key: "named-route/cpu@32", label: "named route CPU/req c=32 ÷ single route", better: "lower" },
  { key: "federated/p50@1", label: "federated call p50 c=1 ÷ member route", better: "lower" },
  { key: "rate-limit/check-us", label: "rate-limit check, µs CPU (absolute)", better: "lower" },
  { key: "forwarded/p50@1", label: "forwarded session req p50 ÷ owner's", better: "lower" },
];

const ratios = roundRatios;

/** Per metric, its value in each round. */
export function pricedRatios(p: PricedPaths): PassRatios {
  const { latency, cpu } = p.namedRoute;
  return {
    "named-route/p50@1": ratios(
      latency.named.map((x) => x.latencyMs.p50),
      latency.single.map((x) => x.latencyMs.p50),
    ),
    "named-route/cpu@32": ratios(
      cpu.named.map((x) => x.cpu.proxyUsPerReq ?? NaN),
      cpu.single.map((x) => x.cpu.proxyUsPerReq ?? NaN),
    ),
    "federated/p50@1": ratios(
      p.federated.federated.map((x) => x.p50Ms),
      p.federated.route.map((x) => x.p50Ms),
    ),
    "rate-limit/check-us": p.rateCheckUs.filter((x) => x > 0),
    "forwarded/p50@1": p.forwarded === null ? [] : ratios([p.forwarded.forwardedP50Ms], [p.forwarded.ownerP50Ms]),
  };
}

interface Aim {
  path: string;
  figure: string;
  base: number | null;
  added: number | null;
  unit: string;
  aim: number;
}

const med = (xs: readonly number[]): number | null => median(xs.filter((x) => Number.isFinite(x)));
const deltas = (a: readonly number[], b: readonly number[]): number[] => a.map((x, i) => x - (b[i] ?? NaN));

/** The issue 27 aims, each as the added amount (median over the rounds) against its bound. */
function aims(p: PricedPaths): Aim[] {
  const { latency, cpu } = p.namedRoute;
  const singleCpu = cpu.single.map((x) => x.cpu.proxyUsPerReq ?? NaN);
  const cpuRatio = med(
    ratios(
      cpu.named.map((x) => x.cpu.proxyUsPerReq ?? NaN),
      singleCpu,
    ),
  );
  return [
    {
      path: "named route",
      figure: "p50 c=1, added",
      base: med(latency.single.map((x) => x.latencyMs.p50)),
      added: med(
        deltas(
          latency.named.map((x) => x.latencyMs.p50),
          latency.single.map((x) => x.latencyMs.p50),
        ),
      ),
      unit: "ms",
      aim: 0.02,
    },
    {
      path: "named route",
      figure: "CPU/req c=32, added",
      base: med(singleCpu),
      added: cpuRatio === null ? null : (cpuRatio - 1) * 100,
      unit: "%",
      aim: 5,
    },
    {
      path: "federated call",
      figure: "p50 c=1, added",
      base: med(p.federated.route.map((x) => x.p50Ms)),
      added: med(
        deltas(
          p.federated.federated.map((x) => x.p50Ms),
          p.federated.route.map((x) => x.p50Ms),
        ),
      ),
      unit: "ms",
      aim: 0.05,
    },
    { path: "rate-limit check", figure: "CPU per check", base: null, added: med(p.rateCheckUs), unit: "µs", aim: 3 },
    {
      path: "forwarded session request",
      figure: "p50, added",
      base: p.forwarded?.ownerP50Ms ?? null,
      added: p.forwarded?.addedMs ?? null,
      unit: "ms",
      aim: 0.3,
    },
  ];
}

export function renderAims(p: PricedPaths): string {
  const n = (x: number | null, digits: number): string => (x === null ? "—" : x.toFixed(digits));
  return renderTextTable(
    ["path (issue 27 aims)", "figure", "base path", "added / value", "aim", "met"],
    aims(p).map((a) => [
      a.path,
      a.figure,
      a.base === null ? "—" : `${n(a.base, 3)} ${a.unit === "%" ? "µs" : a.unit}`,
      `${n(a.added, a.unit === "µs" ? 2 : 3)} ${a.unit}`,
      `≤ ${a.aim} ${a.unit}`,
      a.added === null ? "not measured" : a.added <= a.aim ? "yes" : "no",
    ]),
  );
}

/** One pass over the four paths (≈ 1 min at 3 rounds of 2 s points). */
export async function measurePricedPaths(o: PricedOptions): Promise<PricedPaths> {
  const skipped: string[] = [];
  const upstream = await startFastUpstream();
  const launcher = gatewayLauncher("bench-priced-");
  try {
    const block = { url: upstream.url, era: "legacy" };
    const gw = await launcher.start("gateway-routes", {
      upstream: block,
      upstreams: { a: block, b: block },
      federated: { fed: { upstreams: ["a", "b"] } },
    });
    // Named route against the single one: the pass-through bench's json-1k request (legacy).
    const legacy = (path: string) => ({
      url: `${gw.origin}${path}`,
      tool: TOOL,
      arguments: ARGS,
      headers: { "MCP-Protocol-Version": "2025-11-25" },
    });
    const routes = { single: legacy("/mcp"), named: legacy("/mcp/a") };
    for (const r of Object.values(routes)) await checkOnce(r, '"result"');
    const point = (which: "single" | "named", concurrency: number, durationSec: number): Promise<Point> =>
      measurePoint({
        scenario: `priced ${which} route`,
        target: "gateway",
        proxy: gw.child,
        upstream: upstream.child,
        request: routes[which],
        concurrency,
        threads: 1,
        durationSec,
      });
    await point("single", 32, 1);
    await point("named", 32, 1);
    const latency = await alternate(["single", "named"], o.rounds, (w) => point(w, 1, o.durationSec));
    const cpu = await alternate(["single", "named"], o.rounds, (w) => point(w, 32, o.durationSec));
    for (const pt of [...latency.single, ...latency.named, ...cpu.single, ...cpu.named])
      if (pt.errors.total > 0) throw new Error(`${pt.scenario} c=${pt.concurrency}: ${pt.errors.total} errors`);
    o.log(
      `named route: p50 ${latency.single.map((x) => x.latencyMs.p50).join("/")} → ${latency.named.map((x) => x.latencyMs.p50).join("/")} ms, ` +
        `CPU ${cpu.single.map((x) => x.cpu.proxyUsPerReq).join("/")} → ${cpu.named.map((x) => x.cpu.proxyUsPerReq).join("/")} µs/req`,
    );

    // Federated call against its member's route: 2026-07-28 requests (a federated endpoint's calls are modern).
    const calls = {
      route: { url: `${gw.origin}/mcp/a`, name: TOOL },
      federated: { url: `${gw.origin}/mcp/fed`, name: `a__${TOOL}` },
    };
    for (const t of Object.values(calls)) await checkModern(t.url, { method: "tools/call", name: t.name });
    const call = (which: "route" | "federated", concurrency: number, durationSec: number): Promise<PointFigures> =>
      modernPoint(
        gw.child,
        upstream.child,
        calls[which].url,
        { method: "tools/call", name: calls[which].name },
        concurrency,
        durationSec,
      );
    await call("route", 32, 1);
    await call("federated", 32, 1);
    const federated = await alternate(["route", "federated"], o.rounds, (w) => call(w, 1, o.durationSec));
    for (const pt of [...federated.route, ...federated.federated])
      if (pt.errors > 0) throw new Error(`federated figure: ${pt.errors} errors`);
    o.log(
      `federated call: p50 ${federated.route.map((x) => x.p50Ms).join("/")} → ${federated.federated.map((x) => x.p50Ms).join("/")} ms`,
    );
    await gw.child.stop();

    // The rate-limit check, in this process.
    const rateCheckUs = Array.from(
      { length: o.rounds },
      () => rateCheckCosts(o.checks, [PRICED_CASE])[0]?.usPerCheck ?? NaN,
    );
    o.log(`rate-limit check: ${rateCheckUs.map((x) => x.toFixed(2)).join("/")} µs`);

    // The forwarded session request: two gateway processes on Redis.
    let forwarded: ForwardedFigures | null = null;
    try {
      forwarded = await forwardedSession({ redisUrl: o.redisUrl, requests: o.forwardedRequests });
      o.log(
        `forwarded session request: p50 ${forwarded.ownerP50Ms.toFixed(3)} → ${forwarded.forwardedP50Ms.toFixed(3)} ms`,
      );
    } catch (err) {
      skipped.push(`forwarded session request: ${err instanceof Error ? err.message : String(err)}`);
    }
    return { namedRoute: { latency, cpu }, federated, rateCheckUs, forwarded, skipped };
  } finally {
    await upstream.child.stop();
    launcher.cleanup();
  }
}
