// The processes of the Tasks benchmarks: the legacy upstream and gateways with
// a tasks config, each in its own process, started and killed through
// bench/lib/procs.ts (so they die with the harness, also on error or SIGINT).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../lib/paths.js";
import { startChild } from "../lib/procs.js";
import type { Child } from "../lib/procs.js";
import { gatewayArgs, sourceEntry } from "../lib/gateway-program.js";
import { portLine } from "../lib/upstreams.js";
import { MEM_PROBE_ARGS } from "../lib/mem-probe.js";

export interface Running {
  url: string;
  child: Child;
}

/**
 * Starts one of the bench's own servers (`file` under ROOT, run with tsx), which prints `{"port":N}` once it
 * listens on 127.0.0.1; its MCP URL uses `scheme`.
 */
export async function startBenchServer(
  name: string,
  file: string,
  args: readonly string[] = [],
  scheme: "http" | "https" = "http",
  nodeArgs: readonly string[] = [],
): Promise<Running> {
  const { child, ready: port } = await startChild({
    name,
    command: process.execPath,
    args: [...nodeArgs, "--import", "tsx", join(ROOT, file), ...args],
    cwd: ROOT,
    ready: { line: portLine },
  });
  return { url: `${scheme}://127.0.0.1:${port}/mcp`, child };
}

export function startLegacyUpstream(): Promise<Running> {
  return startBenchServer("legacy-upstream", "bench/tasks/legacy-upstream.ts");
}

export interface UpstreamStats {
  held: number;
  calls: number;
  sessions: number;
}

export async function upstreamStats(upstreamUrl: string): Promise<UpstreamStats> {
  const res = await fetch(new URL("/stats", upstreamUrl), { signal: AbortSignal.timeout(5_000) });
  const value: unknown = await res.json();
  if (typeof value !== "object" || value === null) throw new Error("bad /stats answer");
  const v = value as Record<string, unknown>;
  return { held: Number(v["held"]), calls: Number(v["calls"]), sessions: Number(v["sessions"]) };
}

const GATEWAY_URL = /http:\/\/127\.0\.0\.1:\d+\/mcp/;

/**
 * Starts the gateway CLI with a config file written from `config` (the upstream
 * URL and the era are filled in). Returns the gateway's MCP URL.
 */
export interface GatewayOptions {
  /**
   * Load the probe of bench/lib/mem-probe.ts and allow it a forced GC, so
   * that `heapReport()` works. Only for the memory scenarios.
   */
  memProbe?: boolean;
  /** dist/main.js with plain node (built when stale), or src/main.ts under tsx; default: bench/lib/gateway-program.ts. */
  compiled?: boolean;
  /** More node options (e.g. --heapsnapshot-signal), before the entry. */
  nodeArgs?: readonly string[];
}

export async function startGateway(
  name: string,
  upstreamUrl: string,
  config: Record<string, unknown>,
  configFile: string,
  options: GatewayOptions = {},
): Promise<Running> {
  if (sourceEntry() === undefined) throw new Error("the gateway CLI (src/main.ts) does not exist");
  const upstream = typeof config["upstream"] === "object" && config["upstream"] !== null ? config["upstream"] : {};
  const full = {
    ...config,
    upstream: { ...upstream, url: upstreamUrl, era: "legacy" },
    log: { level: "warn" },
  };
  writeFileSync(configFile, `${JSON.stringify(full, null, 2)}\n`);
  const { child, ready: url } = await startChild({
    name,
    command: process.execPath,
    args: [
      ...(options.memProbe === true ? MEM_PROBE_ARGS : []),
      ...(options.nodeArgs ?? []),
      ...gatewayArgs(options.compiled),
      "--port",
      "0",
      "--config",
      configFile,
    ],
    cwd: ROOT,
    // "mcp-task-gateway listening on http://127.0.0.1:PORT/mcp → upstream …": our address is before the arrow.
    ready: { line: (line) => GATEWAY_URL.exec(line.split("→")[0] ?? "")?.[0] },
  });
  return { url, child };
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/**
 * The node process itself. A child's pid is the `timeout` wrapper that
 * bench/lib/procs.ts puts around it; memory must be read from the node
 * process under it (not from tsx's esbuild helper, a grandchild).
 */
export function nodePid(child: Child, marker: string): number {
  if (comm(child.pid) !== "timeout" && cmdline(child.pid).includes(marker)) return child.pid;
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || parentOf(pid) !== child.pid) continue;
    if (comm(pid) !== "timeout" && cmdline(pid).includes(marker)) return pid;
  }
  throw new Error(`no process running ${marker} under pid ${child.pid}`);
}

export interface Memory {
  /** Resident set now, bytes. */
  rss: number;
  /** Peak resident set, bytes. */
  hwm: number;
}

export function memoryOf(pid: number): Memory {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

export function openFiles(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

interface HeapFigures {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

export interface HeapReport {
  before: HeapFigures;
  afterGc: HeapFigures;
}

function heapFigures(value: unknown): HeapFigures {
  if (typeof value !== "object" || value === null) throw new Error("bad BENCH_MEM line");
  const v = value as Record<string, unknown>;
  return {
    rss: Number(v["rss"]),
    heapTotal: Number(v["heapTotal"]),
    heapUsed: Number(v["heapUsed"]),
    external: Number(v["external"]),
    arrayBuffers: Number(v["arrayBuffers"]),
  };
}

const MEM_LINE = /^BENCH_MEM (.+)$/gm;

function lastReport(child: Child): { seq: number; report: HeapReport } | undefined {
  let last: string | undefined;
  for (const m of child.recentOutput().matchAll(MEM_LINE)) last = m[1];
  if (last === undefined) return undefined;
  const parsed: unknown = JSON.parse(last);
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const p = parsed as Record<string, unknown>;
  return { seq: Number(p["seq"]), report: { before: heapFigures(p["before"]), afterGc: heapFigures(p["afterGc"]) } };
}

/**
 * Asks a gateway started with `memProbe` for process.memoryUsage() before and
 * after a full GC. Read RSS from /proc first: the GC this forces changes it.
 */
export async function heapReport(child: Child, pid: number): Promise<HeapReport> {
  const previous = lastReport(child)?.seq ?? 0;
  process.kill(pid, "SIGUSR2");
  const deadline = performance.now() + 10_000;
  for (;;) {
    const now = lastReport(child);
    if (now !== undefined && now.seq > previous) return now.report;
    if (performance.now() > deadline) throw new Error(`${child.name} printed no BENCH_MEM line within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
