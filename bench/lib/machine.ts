// A description of the machine and tools, recorded next to every set of figures.
import { readFileSync } from "node:fs";
import { availableParallelism, release, totalmem } from "node:os";
import { findBinary } from "./binaries.js";
import { runToCompletion } from "./procs.js";

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  kernel: string;
  node: string;
  nginx: string | null;
  wrk: string | null;
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    return match?.[1]?.trim() ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** First line of a program's version output (nginx and wrk both print it on a side channel). */
async function versionOf(name: string, args: readonly string[]): Promise<string | null> {
  const binary = findBinary(name);
  if (binary === undefined) return null;
  try {
    const out = await runToCompletion(binary, args, 5_000);
    return (out.stderr + out.stdout).trim().split("\n")[0] ?? null;
  } catch {
    return null;
  }
}

export async function describeMachine(): Promise<Machine> {
  return {
    cpus: availableParallelism(),
    cpuModel: cpuModel(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    node: process.version,
    nginx: await versionOf("nginx", ["-v"]),
    wrk: await versionOf("wrk", ["-v"]),
  };
}
