// What the request pipeline's steps cost a plain pass-through request (src/server/pipeline.ts, issue 38 item 6), in
// process: a gateway (startGateway, defaults: metrics on, no auth, no rules) in front of the fast upstream (its own
// process), loaded by wrk with the json-1k legacy tools/call, while V8's sampling profiler runs in this process. The
// steps' share is the samples under a step's `run` called from the pipeline's loop (`from` in pipeline.ts, every
// entry but the handler, which is the one that leads to the route's `handle`), divided by every other non-idle
// sample of the process: the handler's own cost and everything the request pays outside the pipeline (HTTP parsing,
// the upstream call, the answer, GC). Both sides come from the same profile of the same seconds, so the machine's
// speed cancels out.
//
// Aim, set before measuring: the steps ≤ 0.05 × the rest of the request (issue 38: the pass-through's CPU is to be
// ≤ 1.4× the lean floor; the pipeline's checks, which a request without auth, rules or catalog mostly skips, should
// take a small part of it).
import { Session } from "node:inspector/promises";
import { startGateway } from "../../src/index.js";
import type { CheckMetric } from "./check.js";
import { checkOnce } from "./measure.js";
import { SCENARIOS } from "./scenarios.js";
import { startFastUpstream } from "./upstreams.js";
import { runWrk } from "./wrk.js";

export const PIPELINE_METRIC: CheckMetric = {
  key: "pipeline/steps",
  label: "pipeline steps ÷ rest of a pass-through request (CPU samples)",
  better: "lower",
};
export const PIPELINE_AIM = 0.05;

const PIPELINE_FILE = /\/server\/pipeline\.[jt]s$/;
const ENDPOINTS = /\/endpoints\/[^/]+\.[jt]s$/;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
  children?: number[];
}

/** Samples under the pipeline's steps, and every other non-idle sample, of one profile. */
export function stepShare(nodes: readonly ProfileNode[]): { steps: number; rest: number } {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const inclusive = (id: number): number => {
    const n = byId.get(id);
    return n === undefined ? 0 : (n.hitCount ?? 0) + (n.children ?? []).reduce((sum, c) => sum + inclusive(c), 0);
  };
  /**
   * Whether the route's handler is reached within three calls below `id` (the handler's chain, not a step): `handle`
   * by name (dist/), or any function of src/endpoints/ (tsx leaves every closure anonymous). A step defined in an
   * endpoint's file is itself the first call, and is not taken for the handler.
   */
  const leadsToHandle = (id: number, depth: number): boolean => {
    const n = byId.get(id);
    if (n === undefined || depth > 3) return false;
    if (n.callFrame.functionName === "handle" || (depth > 0 && ENDPOINTS.test(n.callFrame.url))) return true;
    return (n.children ?? []).some((c) => leadsToHandle(c, depth + 1));
  };
  // The loop and its closures are anonymous under tsx (named `from` in dist/): every function of pipeline.ts counts,
  // its callees outside pipeline.ts being the steps and the handler.
  const inPipeline = (n: ProfileNode | undefined): boolean => n !== undefined && PIPELINE_FILE.test(n.callFrame.url);
  let steps = 0;
  let active = 0;
  for (const n of nodes) {
    if (n.callFrame.functionName !== "(idle)") active += n.hitCount ?? 0;
    if (!inPipeline(n)) continue;
    steps += n.hitCount ?? 0;
    for (const c of n.children ?? []) if (!inPipeline(byId.get(c)) && !leadsToHandle(c, 0)) steps += inclusive(c);
  }
  return { steps, rest: active - steps };
}

/** Per round, the steps' samples ÷ the rest's. */
export async function measurePipelineShare(
  rounds: number,
  durationSec: number,
  log: (line: string) => void,
): Promise<number[]> {
  const scenario = SCENARIOS.find((s) => s.id === "json-1k");
  if (scenario === undefined) throw new Error("no json-1k scenario");
  const upstream = await startFastUpstream();
  const gw = await startGateway({
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
  });
  const session = new Session();
  session.connect();
  try {
    const request = {
      url: gw.url,
      tool: scenario.tool,
      arguments: scenario.arguments,
      headers: scenario.headers ?? {},
    };
    await checkOnce(request, scenario.expect);
    await runWrk({ ...request, concurrency: 8, threads: 1, durationSec: 1 });
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 100 });
    const out: number[] = [];
    for (let r = 0; r < rounds; r++) {
      await session.post("Profiler.start");
      await runWrk({ ...request, concurrency: 8, threads: 1, durationSec });
      const { profile } = await session.post("Profiler.stop");
      const { steps, rest } = stepShare(profile.nodes);
      log(
        `pipeline/steps   round ${r}  ${steps} samples in the steps, ${rest} in the rest: ${(steps / rest).toFixed(4)}`,
      );
      if (rest > 0 && steps > 0) out.push(steps / rest);
    }
    return out;
  } finally {
    session.disconnect();
    await gw.close(0);
    await upstream.child.stop();
  }
}
