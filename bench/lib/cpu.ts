// CPU time of a process and its descendants, from /proc. Wall-clock figures
// alone mislead here because the load generator shares the two cores with the
// proxy; CPU per request is the figure that does not depend on who else runs.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let clockTicks: number | undefined;
/** USER_HZ, the unit of utime/stime in /proc/<pid>/stat (normally 100). */
function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

interface StatLine {
  ppid: number;
  ticks: number;
}

function readStat(pid: number): StatLine | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone between listing and reading
  }
  // Field 2 (comm) is parenthesised and may hold spaces, so split after the last ')'.
  // What follows starts at field 3 (state): ppid is field 4, utime 14, stime 15.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ppid = Number(rest[1]);
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return { ppid, ticks: utime + stime };
}

/** The pid and all its descendants (e.g. nginx master + worker). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = readStat(pid);
    if (stat === undefined) continue;
    const list = children.get(stat.ppid);
    if (list === undefined) children.set(stat.ppid, [pid]);
    else list.push(pid);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop();
    if (pid === undefined) break;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU seconds (user + system) used so far by a process tree. */
export function cpuSeconds(root: number): number {
  let ticks = 0;
  for (const pid of processTree(root)) ticks += readStat(pid)?.ticks ?? 0;
  return ticks / clockTicksPerSecond();
}

export interface MachineCpu {
  /** user + nice + system: time charged to some process. */
  tasks: number;
  /** irq + softirq: loopback packet processing lands here, not on the sending process. */
  irq: number;
  /** Time the hypervisor gave our vCPUs to someone else. */
  steal: number;
}

/** CPU seconds of the whole machine, all cores, from the first line of /proc/stat. */
export function machineCpu(): MachineCpu {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  // cpu  user nice system idle iowait irq softirq steal …
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const at = (i: number): number => f[i] ?? 0;
  const tps = clockTicksPerSecond();
  return { tasks: (at(0) + at(1) + at(2)) / tps, irq: (at(5) + at(6)) / tps, steal: at(7) / tps };
}

/**
 * CPU seconds of the harness itself plus its reaped children. Once wrk has
 * exited and been waited for, its CPU shows up in cutime/cstime, which is the
 * only way to learn what the load generator cost.
 */
export function selfAndReapedSeconds(): { self: number; reaped: number } {
  const text = readFileSync("/proc/self/stat", "utf8");
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const tps = clockTicksPerSecond();
  return {
    self: (Number(rest[11]) + Number(rest[12])) / tps,
    reaped: (Number(rest[13]) + Number(rest[14])) / tps,
  };
}
