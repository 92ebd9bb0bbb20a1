// Runs wrk (a separate C process, so the load generator is not the thing being
// measured) with bench/wrk/tools-call.lua, and parses the JSON line its done()
// hook prints.
import { fileURLToPath } from "node:url";
import { findBinary } from "./binaries.js";
import { runToCompletion } from "./procs.js";

const LUA_SCRIPT = fileURLToPath(new URL("../wrk/tools-call.lua", import.meta.url));

export interface WrkRequest {
  url: string;
  tool: string;
  arguments: Readonly<Record<string, unknown>>;
  /** Extra request headers (e.g. Mcp-Session-Id), beyond content-type and accept. */
  headers?: Readonly<Record<string, string>>;
}

export interface WrkRun extends WrkRequest {
  concurrency: number;
  threads: number;
  durationSec: number;
}

export interface WrkErrors {
  connect: number;
  read: number;
  write: number;
  /** Responses with a status >= 400. */
  status: number;
  timeout: number;
}

export interface WrkResult {
  requests: number;
  durationSec: number;
  bytes: number;
  errors: WrkErrors;
  /** Microseconds, as wrk records them. */
  latencyUs: { p50: number; p90: number; p99: number; p999: number; mean: number; max: number };
}

const MARKER = "WRK_JSON ";

function isWrkOutput(value: unknown): value is Omit<WrkResult, "durationSec"> & { durationUs: number } {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v["requests"] === "number" &&
    typeof v["durationUs"] === "number" &&
    typeof v["errors"] === "object" &&
    typeof v["latencyUs"] === "object"
  );
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  return runWrkScript(LUA_SCRIPT, run.url, run.concurrency, run.threads, run.durationSec, [
    JSON.stringify(run.tool),
    JSON.stringify(run.arguments),
    ...Object.entries(run.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ]);
}

/**
 * Runs wrk with a Lua script that prints one `WRK_JSON {…}` line in its done()
 * hook, and parses that line. Shared by the pass-through and the task benches.
 */
export async function runWrkScript(
  lua: string,
  url: string,
  concurrency: number,
  threads: number,
  durationSec: number,
  scriptArgs: readonly string[],
): Promise<WrkResult> {
  const t = Math.max(1, Math.min(threads, concurrency));
  const args = [
    `-t${t}`,
    `-c${concurrency}`,
    `-d${durationSec}s`,
    "--timeout",
    "5s",
    "-s",
    lua,
    url,
    "--",
    ...scriptArgs,
  ];
  // wrk stops by itself after -d; the margin only guards against a wedged wrk.
  const out = await runToCompletion(findBinary("wrk") ?? "wrk", args, (durationSec + 20) * 1000);
  if (out.timedOut) throw new Error(`wrk did not finish within ${durationSec + 20} s`);
  const line = out.stdout.split("\n").find((l) => l.startsWith(MARKER));
  if (line === undefined) throw new Error(`wrk printed no result (exit ${out.code}):\n${out.stdout}\n${out.stderr}`);
  const parsed: unknown = JSON.parse(line.slice(MARKER.length));
  if (!isWrkOutput(parsed)) throw new Error(`unexpected wrk output: ${line}`);
  const { durationUs, ...rest } = parsed;
  return { ...rest, durationSec: durationUs / 1e6 };
}

export function totalErrors(e: WrkErrors): number {
  return e.connect + e.read + e.write + e.status + e.timeout;
}
