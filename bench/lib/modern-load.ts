// 2026-07-28 ("modern") requests for the benches: the one request wrk sends (bench/wrk/modern.lua: the _meta
// envelope and the headers that mirror it, no capabilities declared), checked once before measuring, and one wrk
// point with the gateway's and the upstream's CPU read from /proc around it. Used by bench/federation.ts and by
// the regression guard's priced paths (lib/priced-paths.ts).
import { fileURLToPath } from "node:url";
import { cpuSeconds, machineCpu, selfAndReapedSeconds } from "./cpu.js";
import { isAlive, type Child } from "./procs.js";
import { runWrkScript, totalErrors } from "./wrk.js";

const MODERN_LUA = fileURLToPath(new URL("../wrk/modern.lua", import.meta.url));
/** The request of the pass-through bench's json-1k scenario (lib/scenarios.ts). */
export const TOOL = "bench";
export const ARGS = { size: 1024, format: "json", delayMs: 0 };
const MODERN_VERSION = "2026-07-28";
/** The per-request envelope of a modern request (the shape of test/helpers/modern-http.ts's modernMeta). */
const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "0.0.0" },
};
export const ACCEPT = "application/json, text/event-stream";

const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

export type Load = { method: "tools/list" } | { method: "tools/call"; name: string };

/** The JSON-RPC answer in a JSON or SSE body (the last `data:` line of an SSE one). */
export function rpcAnswer(body: string): Record<string, unknown> {
  const text = body.trimStart().startsWith("{")
    ? body
    : (body
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .pop()
        ?.slice(5) ?? "");
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null) throw new Error(`not a JSON-RPC answer: ${body.slice(0, 300)}`);
  return parsed as Record<string, unknown>;
}

let nextId = 1;

/** A JSON-RPC id no other request of this process used. */
export function freshId(): number {
  return nextId++;
}

/** One modern request, the one wrk will send, checked: a result, and for a list the number of tools. */
export async function checkModern(url: string, load: Load): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: ACCEPT,
    "mcp-protocol-version": MODERN_VERSION,
    "mcp-method": load.method,
  };
  if (load.method === "tools/call") headers["mcp-name"] = load.name;
  const params =
    load.method === "tools/call" ? { name: load.name, arguments: ARGS, _meta: MODERN_META } : { _meta: MODERN_META };
  const res = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: freshId(), method: load.method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await res.text();
  const answer = res.status === 200 ? rpcAnswer(body) : undefined;
  const result = answer?.["result"];
  if (typeof result !== "object" || result === null)
    throw new Error(`unexpected answer from ${url} (${load.method}): ${res.status} ${body.slice(0, 300)}`);
  return result as Record<string, unknown>;
}

export interface PointFigures {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  bytesPerResponse: number;
  /** Gateway process tree CPU per completed request, µs. */
  gatewayUs: number;
  upstreamUs: number;
  /** Cores' worth of CPU used by processes outside this run (above ~0.25: noisy). */
  foreignCores: number;
}

/** One wrk run of `load` at `url`, with the gateway's and the upstream's CPU read from /proc around it. */
export async function modernPoint(
  gateway: Child,
  upstream: Child,
  url: string,
  load: Load,
  concurrency: number,
  durationSec: number,
): Promise<PointFigures> {
  const scriptArgs =
    load.method === "tools/call"
      ? ["method=tools/call", `name=${load.name}`, `args=${JSON.stringify(ARGS)}`]
      : ["method=tools/list"];
  const sample = (): { gw: number; up: number; self: number; reaped: number; tasks: number; wall: number } => ({
    gw: cpuSeconds(gateway.pid),
    up: cpuSeconds(upstream.pid),
    ...selfAndReapedSeconds(),
    tasks: machineCpu().tasks,
    wall: performance.now() / 1000,
  });
  const before = sample();
  const wrk = await runWrkScript(MODERN_LUA, url, concurrency, 1, durationSec, scriptArgs);
  const after = sample();
  for (const child of [gateway, upstream])
    if (!isAlive(child)) throw new Error(`${child.name} died during a run\n${child.recentOutput()}`);
  const n = Math.max(wrk.requests, 1);
  const d = {
    gw: after.gw - before.gw,
    up: after.up - before.up,
    wrk: after.reaped - before.reaped,
    self: after.self - before.self,
  };
  const wall = Math.max(after.wall - before.wall, 1e-3);
  return {
    requests: wrk.requests,
    rps: Math.round(wrk.requests / wrk.durationSec),
    p50Ms: wrk.latencyUs.p50 / 1000,
    p99Ms: wrk.latencyUs.p99 / 1000,
    errors: totalErrors(wrk.errors),
    bytesPerResponse: Math.round(wrk.bytes / n),
    gatewayUs: round((d.gw / n) * 1e6, 1),
    upstreamUs: round((d.up / n) * 1e6, 1),
    foreignCores: round(Math.max(0, after.tasks - before.tasks - d.gw - d.up - d.wrk - d.self) / wall, 2),
  };
}
