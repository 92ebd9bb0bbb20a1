// One measured point: wrk against a target at one concurrency, with the CPU of
// every process involved read from /proc before and after.
import { cpuSeconds, machineCpu, selfAndReapedSeconds } from "./cpu.js";
import type { MachineCpu } from "./cpu.js";
import { isAlive } from "./procs.js";
import type { Child } from "./procs.js";
import type { Point } from "./results.js";
import type { TargetName } from "./targets.js";
import { runWrk, totalErrors } from "./wrk.js";
import type { WrkRequest } from "./wrk.js";

export interface PointSpec {
  scenario: string;
  target: TargetName;
  proxy: Child | undefined;
  upstream: Child;
  request: WrkRequest;
  concurrency: number;
  threads: number;
  durationSec: number;
}

interface CpuSample {
  proxy: number;
  upstream: number;
  machine: MachineCpu;
  self: number;
  reaped: number;
  wall: number;
}

function sample(proxy: Child | undefined, upstream: Child): CpuSample {
  const { self, reaped } = selfAndReapedSeconds();
  return {
    proxy: proxy === undefined ? 0 : cpuSeconds(proxy.pid),
    upstream: cpuSeconds(upstream.pid),
    machine: machineCpu(),
    self,
    reaped,
    wall: performance.now() / 1000,
  };
}

const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

export async function measurePoint(spec: PointSpec): Promise<Point> {
  const before = sample(spec.proxy, spec.upstream);
  const wrk = await runWrk({
    ...spec.request,
    concurrency: spec.concurrency,
    threads: spec.threads,
    durationSec: spec.durationSec,
  });
  const after = sample(spec.proxy, spec.upstream);

  for (const child of [spec.proxy, spec.upstream]) {
    if (child !== undefined && !isAlive(child)) {
      throw new Error(
        `${child.name} died during ${spec.scenario} / ${spec.target} c=${spec.concurrency}\n${child.recentOutput()}`,
      );
    }
  }

  const n = Math.max(wrk.requests, 1);
  const perReq = (seconds: number): number => round((seconds / n) * 1e6, 1);
  const d = {
    proxy: after.proxy - before.proxy,
    upstream: after.upstream - before.upstream,
    wrk: after.reaped - before.reaped,
    self: after.self - before.self,
  };
  // Process time that none of our processes used: other work on a shared box.
  // A high figure marks a point as noisy.
  const foreign = after.machine.tasks - before.machine.tasks - d.proxy - d.upstream - d.wrk - d.self;
  const wall = Math.max(after.wall - before.wall, 1e-3);
  const cores = (seconds: number): number => round(Math.max(0, seconds) / wall, 2);
  const us = wrk.latencyUs;
  return {
    scenario: spec.scenario,
    target: spec.target,
    concurrency: spec.concurrency,
    threads: Math.min(spec.threads, spec.concurrency),
    durationSec: round(wrk.durationSec, 3),
    requests: wrk.requests,
    rps: Math.round(wrk.requests / wrk.durationSec),
    latencyMs: {
      p50: us.p50 / 1000,
      p90: us.p90 / 1000,
      p99: us.p99 / 1000,
      p999: us.p999 / 1000,
      mean: round(us.mean / 1000, 4),
      max: us.max / 1000,
    },
    errors: { ...wrk.errors, total: totalErrors(wrk.errors) },
    cpu: {
      proxyUsPerReq: spec.proxy === undefined ? null : perReq(d.proxy),
      upstreamUsPerReq: perReq(d.upstream),
      wrkUsPerReq: perReq(d.wrk),
      foreignCores: cores(foreign),
      irqCores: cores(after.machine.irq - before.machine.irq),
      stealCores: cores(after.machine.steal - before.machine.steal),
    },
  };
}

/**
 * Sends the scenario's request once and checks the answer, so that a proxy that
 * answers quickly with an error is not mistaken for a fast proxy.
 */
export async function checkOnce(request: WrkRequest, expect: string): Promise<void> {
  const res = await fetch(request.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...request.headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: request.tool, arguments: request.arguments },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.text();
  if (res.status !== 200 || !body.includes(expect) || body.includes('"error"')) {
    throw new Error(
      `unexpected answer from ${request.url}: ${res.status} ${res.headers.get("content-type")} ${body.slice(0, 300)}`,
    );
  }
}
