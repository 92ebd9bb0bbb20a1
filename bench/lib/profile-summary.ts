// Summarizes a V8 CPU profile (node --cpu-prof) by self time: per function and
// per file or package, so a profile can be read in a terminal and quoted in
// bench/RESULTS.md.
//
//   node --import tsx bench/lib/profile-summary.ts FILE.cpuprofile [--top 25] [--match src/] [--busiest SEC] [--since S]
//
// --busiest keeps only the SEC seconds with the least idle time; --span FROM:TO only the samples between two
// readings of the monotonic clock in µs (process.hrtime, which V8's profile timestamps share on Linux): a
// bench's load point without the start and set-up (`npm run bench -- tasks --cpu-prof` writes them to points.json).
//
// --since S counts only the samples taken S seconds or more after the profile started, so a gateway's
// start-up (module loading, compiling) stays out of the figures of the load that followed it.
// --match keeps only frames whose URL contains the text when listing functions
// (files and packages are always listed whole).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: Frame;
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package name, a project path, node's internals, or V8's pseudo-frames. */
function place(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] ?? url;
  if (url.startsWith("node:")) return "node:" + (url.slice(5).split("/")[0] ?? "");
  const project = /\/(src|bench|dist|test)\/(.*)$/.exec(url);
  return project ? `${project[1]}/${project[2]}` : url;
}

/** The samples [from, to) taken between two monotonic clock readings, "FROM:TO" in µs. */
function spanWindow(profile: CpuProfile, span: string): [number, number] {
  const [lo, hi] = span.split(":").map(Number);
  if (lo === undefined || hi === undefined || !(lo < hi)) throw new Error(`--span wants FROM:TO in µs, got ${span}`);
  let t = profile.startTime;
  let from = profile.samples.length;
  let to = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t >= lo && t < hi) {
      from = Math.min(from, i);
      to = i + 1;
    }
  }
  if (from >= to)
    throw new Error(`no samples between ${lo} and ${hi} (profile: ${profile.startTime}–${profile.endTime})`);
  return [from, to];
}

/** The samples [from, to) of the `sec` seconds with the least idle time (two pointers over the sample times). */
function busiestWindow(profile: CpuProfile, byId: Map<number, ProfileNode>, sec: number): [number, number] {
  const n = profile.samples.length;
  const at: number[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) at.push((t += profile.timeDeltas[i] ?? 0));
  const busy = (i: number): number =>
    byId.get(profile.samples[i] as number)?.callFrame.functionName === "(idle)" ? 0 : (profile.timeDeltas[i] ?? 0);
  let best: [number, number] = [0, n];
  let bestBusy = -1;
  let sum = 0;
  let lo = 0;
  for (let hi = 0; hi < n; hi++) {
    sum += busy(hi);
    while ((at[hi] ?? 0) - (at[lo] ?? 0) > sec * 1e6) sum -= busy(lo++);
    if (sum > bestBusy) [bestBusy, best] = [sum, [lo, hi + 1]];
  }
  return best;
}

/** The samples taken `seconds` or more after the profile started. */
function sinceWindow(profile: CpuProfile, seconds: number): [number, number] {
  const sinceUs = seconds * 1e6;
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at >= sinceUs) return [i, profile.samples.length];
  }
  return [profile.samples.length, profile.samples.length];
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: "string", default: "25" },
      match: { type: "string" },
      callers: { type: "string" },
      busiest: { type: "string" },
      span: { type: "string" },
      since: { type: "string" },
    },
  });
  const file = positionals[0];
  if (file === undefined)
    throw new Error("usage: profile-summary.ts FILE.cpuprofile [--top N] [--match TEXT] [--busiest SEC] [--since S]");
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const [from, to] =
    values.span !== undefined
      ? spanWindow(profile, values.span)
      : values.since !== undefined
        ? sinceWindow(profile, Number(values.since))
        : values.busiest === undefined
          ? [0, profile.samples.length]
          : busiestWindow(profile, byId, Number(values.busiest));
  // Self time per node: the sampled time deltas attributed to the node on top of the stack.
  const self = new Map<number, number>();
  for (let i = from; i < to; i++) {
    const id = profile.samples[i] as number;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = place(url, functionName);
    byPlace.set(where, (byPlace.get(where) ?? 0) + us);
    if (values.match !== undefined && !url.includes(values.match)) continue;
    const key = `${functionName || "(anonymous)"}  ${where}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const top = Number(values.top);
  if (values.callers !== undefined) {
    // Who calls a function: its self time split by the chain of up to 6 callers above it.
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const chains = new Map<string, number>();
    for (const [id, us] of self) {
      if (byId.get(id)?.callFrame.functionName !== values.callers) continue;
      const names: string[] = [];
      for (let p = parent.get(id), i = 0; p !== undefined && i < 6; p = parent.get(p), i++) {
        const f = byId.get(p)?.callFrame;
        if (f) names.push(`${f.functionName || "(anonymous)"}@${place(f.url, f.functionName)}:${f.lineNumber + 1}`);
      }
      const key = names.join(" < ");
      chains.set(key, (chains.get(key) ?? 0) + us);
    }
    for (const [k, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(`${((100 * us) / total).toFixed(2).padStart(6)} %  ${k}\n`);
    }
    return;
  }
  const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
  process.stdout.write(`profile: ${file}\nsampled: ${(total / 1e6).toFixed(2)} s\n\nby file or package (self time)\n`);
  for (const [k, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(`${pct(us)}  ${k}\n`);
  process.stdout.write(
    `\nby function (self time)${values.match === undefined ? "" : `, URL containing ${values.match}`}\n`,
  );
  for (const [k, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(`${pct(us)}  ${k}\n`);
}

main();
