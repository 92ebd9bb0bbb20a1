// Runs wrk with bench/wrk/mcp.lua (modern or legacy tools/call, or
// tasks/get over a list of ids) and measures the CPU of the processes involved.
import { fileURLToPath } from "node:url";
import { cpuSeconds, machineCpu, selfAndReapedSeconds } from "./cpu.js";
import { isAlive } from "./procs.js";
import type { Child } from "./procs.js";
import type { WrkResult } from "./wrk.js";
import { runWrkScript, totalErrors } from "./wrk.js";
import { diffCalls } from "../tasks/redis.js";
import type { RedisProbe } from "../tasks/redis.js";

const MCP_LUA = fileURLToPath(new URL("../wrk/mcp.lua", import.meta.url));

type WrkScript =
  | {
      method: "tools/call";
      era: "modern" | "legacy";
      name: string;
      args: Readonly<Record<string, unknown>>;
      headers?: Readonly<Record<string, string>>;
    }
  | { method: "tasks/get"; idsFile: string };

export interface LoadSpec {
  url: string;
  script: WrkScript;
  concurrency: number;
  threads: number;
  durationSec: number;
}

function scriptArgs(script: WrkScript): string[] {
  if (script.method === "tasks/get") return ["method=tasks/get", "era=modern", `ids=${script.idsFile}`];
  return [
    "method=tools/call",
    `era=${script.era}`,
    `name=${script.name}`,
    `args=${JSON.stringify(script.args)}`,
    ...Object.entries(script.headers ?? {}).map(([k, v]) => `header=${k}: ${v}`),
  ];
}

export function runLoad(spec: LoadSpec): Promise<WrkResult> {
  return runWrkScript(MCP_LUA, spec.url, spec.concurrency, spec.threads, spec.durationSec, scriptArgs(spec.script));
}

export interface LoadPoint {
  requests: number;
  rps: number;
  /** Milliseconds. */
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  mean: number;
  errors: number;
  /** Mean bytes per response (headers + body), a cheap check that answers are what the check saw. */
  bytesPerResponse: number;
  /** CPU of the gateway's process tree per completed request, µs; null without a gateway. */
  gatewayCpuUs: number | null;
  upstreamCpuUs: number;
  /** wrk's own CPU per request, µs (it shares the two cores). */
  wrkCpuUs: number;
  /** Cores' worth of CPU used by processes outside this run: above ~0.25 the point is noisy. */
  foreignCores: number;
  /** Cores' worth of irq + softirq (loopback networking) and of hypervisor steal. */
  irqCores: number;
  stealCores: number;
  /** With a Redis store: Redis's CPU per request, µs (INFO cpu), not counted as other load. */
  storeCpuUs?: number;
  /** With a Redis store: commands Redis ran per request (INFO commandstats, scripts' inner commands included). */
  storeCalls?: Record<string, number>;
}

const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** One wrk run with the CPU of the gateway (if any) and the upstream read from /proc around it. */
function sample(
  gateway: Child | undefined,
  upstream: Child,
): { gw: number; up: number; self: number; reaped: number; machine: ReturnType<typeof machineCpu>; wall: number } {
  return {
    gw: gateway === undefined ? 0 : cpuSeconds(gateway.pid),
    up: cpuSeconds(upstream.pid),
    ...selfAndReapedSeconds(),
    machine: machineCpu(),
    wall: performance.now() / 1000,
  };
}

export async function measureLoad(
  spec: LoadSpec,
  gateway: Child | undefined,
  upstream: Child,
  store?: RedisProbe,
): Promise<LoadPoint> {
  const storeBefore = await store?.snapshot();
  const before = sample(gateway, upstream);
  const wrk = await runLoad(spec);
  const after = sample(gateway, upstream);
  const storeAfter = await store?.snapshot();
  for (const child of [gateway, upstream]) {
    if (child !== undefined && !isAlive(child))
      throw new Error(`${child.name} died during the run\n${child.recentOutput()}`);
  }
  const n = Math.max(wrk.requests, 1);
  const storeSec = storeBefore === undefined || storeAfter === undefined ? 0 : storeAfter.cpuSec - storeBefore.cpuSec;
  const d = {
    gw: after.gw - before.gw,
    up: after.up - before.up,
    wrk: after.reaped - before.reaped,
    self: after.self - before.self,
    store: storeSec,
  };
  const wall = Math.max(after.wall - before.wall, 1e-3);
  const cores = (seconds: number): number => round(Math.max(0, seconds) / wall, 2);
  return {
    requests: wrk.requests,
    rps: Math.round(wrk.requests / wrk.durationSec),
    p50: wrk.latencyUs.p50 / 1000,
    p90: wrk.latencyUs.p90 / 1000,
    p99: wrk.latencyUs.p99 / 1000,
    p999: wrk.latencyUs.p999 / 1000,
    mean: round(wrk.latencyUs.mean / 1000, 4),
    errors: totalErrors(wrk.errors),
    bytesPerResponse: Math.round(wrk.bytes / n),
    gatewayCpuUs: gateway === undefined ? null : round((d.gw / n) * 1e6, 1),
    upstreamCpuUs: round((d.up / n) * 1e6, 1),
    wrkCpuUs: round((d.wrk / n) * 1e6, 1),
    foreignCores: cores(after.machine.tasks - before.machine.tasks - d.gw - d.up - d.wrk - d.self - d.store),
    irqCores: cores(after.machine.irq - before.machine.irq),
    stealCores: cores(after.machine.steal - before.machine.steal),
    ...(storeBefore !== undefined &&
      storeAfter !== undefined && {
        storeCpuUs: round((d.store / n) * 1e6, 1),
        storeCalls: Object.fromEntries(
          Object.entries(diffCalls(storeAfter.calls, storeBefore.calls)).map(([k, v]) => [k, round(v / n, 3)]),
        ),
      }),
  };
}
