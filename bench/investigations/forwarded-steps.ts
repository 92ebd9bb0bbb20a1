// Where the forwarding replica's JavaScript thread spends a forwarded session request, by step (issue 38): two
// gateway CLIs on one Redis (as forwarded-cpu.ts), a stdio session on A, N echo calls sent to B (forwarded to A),
// with B alone under `node --cpu-prof` at a fine interval. The profile's samples taken during the N requests are
// each given to the innermost step on their stack (the pipeline's steps, session routing, the credential, the
// proxy to the owner, the answer's relay, undici, Node's HTTP server, the collector, idle), and each step's share of
// B's sampled busy time is given per forward, beside B's main-thread CPU per forward (/proc/PID/task/PID/schedstat).
//
//   BENCH_GATEWAY=dist node --import tsx bench/investigations/forwarded-steps.ts [requests] [interval µs] [unix|tcp]
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ECHO, startForwardedPair } from "../lib/forwarded-session.js";
import { post } from "../lib/legacy-session.js";
import { stepOf, STEPS, type Frame } from "./forwarded-step-rules.js";

const requests = Number(process.argv[2] ?? 3000);
const intervalUs = Number(process.argv[3] ?? 50);
const transport = process.argv[4] === "tcp" ? "tcp" : "unix";

const profDir = mkdtempSync(join(tmpdir(), "bench-fws-prof-"));
function mainThreadUs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1000;
}
/** The monotonic clock in µs, as V8's profile timestamps read it on Linux. */
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

const { b, poolB, headers, stop } = await startForwardedPair({
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  transport,
  nodeArgsB: `--cpu-prof --cpu-prof-dir=${profDir} --cpu-prof-interval=${intervalUs}`,
});
let window: [number, number] = [0, 0];
let mainUs = 0;
const times: number[] = [];
try {
  const one = async () => {
    const t0 = performance.now();
    const res = await post(poolB, "/mcp", ECHO, headers);
    times.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`echo: ${res.status} ${res.text.slice(0, 200)}`);
  };
  for (let i = 0; i < 500; i++) await one();
  times.length = 0;
  const m0 = mainThreadUs(b.pid);
  const t0 = monoUs();
  for (let i = 0; i < requests; i++) await one();
  window = [t0, monoUs()];
  mainUs = (mainThreadUs(b.pid) - m0) / requests;
} finally {
  await stop();
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
if (file === undefined) throw new Error(`no profile in ${profDir}`);
const profile = JSON.parse(readFileSync(join(profDir, file), "utf8")) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
};
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const stepCache = new Map<number, string>();
/** The step of a sample's stack (leaf first). */
const classify = (id: number): string => {
  const known = stepCache.get(id);
  if (known !== undefined) return known;
  const stack: Frame[] = [];
  for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
    const n = byId.get(p);
    if (n) stack.push({ ...n.callFrame, lineNumber: n.callFrame.lineNumber + 1 });
  }
  const found = stepOf(stack) ?? "other";
  stepCache.set(id, found);
  return found;
};
const perStep = new Map<string, number>();
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i] ?? 0;
  if (t < window[0] || t >= window[1]) continue;
  const s = classify(profile.samples[i] as number);
  perStep.set(s, (perStep.get(s) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const idle = perStep.get("(idle)") ?? 0;
const busy = [...perStep.values()].reduce((x, y) => x + y, 0) - idle;
const sorted = [...times].sort((x, y) => x - y);
// Sampled time is wall time with the step on the stack, so it includes time the thread sat preempted there (inside a
// writev that woke another process, mostly); the scheduler's figure is CPU time only.
process.stdout.write(
  `forwarder: ${(busy / requests).toFixed(0)} µs sampled busy per forward, ${mainUs.toFixed(0)} µs main-thread CPU ` +
    `(schedstat); p50 ${(1000 * (sorted[Math.floor(sorted.length / 2)] ?? NaN)).toFixed(0)} µs; ${requests} requests, ` +
    `profile interval ${intervalUs} µs\n\n| step | share of busy | sampled µs per forward |\n|---|---:|---:|\n`,
);
for (const s of [...STEPS, "other"]) {
  const us = perStep.get(s);
  if (us === undefined || s === "(idle)") continue;
  process.stdout.write(`| ${s} | ${((100 * us) / busy).toFixed(1)} % | ${(us / requests).toFixed(1)} |\n`);
}
process.stdout.write(`\nprofile kept: ${join(profDir, file)}\n`);
