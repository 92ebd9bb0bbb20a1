// CPU time per forwarded session request, per process (issue 38): two gateway CLIs on one Redis (as
// lib/forwarded-session.ts), a stdio session on A; N echo calls sent to A (served there), then N sent to B
// (forwarded to A). Each gateway's user+system CPU (/proc/PID/stat) is read around each phase: what B spends to
// relay one request, and what A spends on a forwarded request against a direct one. CPU time moves little with the
// machine's load, unlike latency. Then the same with A and B alternating, and each phase's p50.
//
//   BENCH_GATEWAY=dist node --import tsx bench/investigations/forwarded-cpu.ts [requests] [unix|tcp]
import { readFileSync } from "node:fs";
import type { Pool } from "undici";
import { ECHO, startForwardedPair } from "../lib/forwarded-session.js";
import { post } from "../lib/legacy-session.js";

const requests = Number(process.argv[2] ?? 2000);
const transport = process.argv[3] === "tcp" ? "tcp" : "unix";
const TICK_US = 1e6 / 100; // USER_HZ

function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/** The main thread's time on a CPU so far, µs, from the scheduler's nanosecond count (/proc/PID/schedstat). */
function mainThreadUs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1000;
}

/** The main thread's context switches so far: [voluntary (it waited), involuntary (it was preempted)]. */
function switches(pid: number): [number, number] {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, "utf8");
  const n = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return [n("voluntary_ctxt_switches"), n("nonvoluntary_ctxt_switches")];
}

const { a, b, poolA, poolB, headers, stop } = await startForwardedPair({
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  transport,
});
try {
  const times: number[] = [];
  const one = async (pool: Pool) => {
    const t0 = performance.now();
    const res = await post(pool, "/mcp", ECHO, headers);
    times.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`echo: ${res.status} ${res.text.slice(0, 200)}`);
  };
  const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? NaN;
  const r = (x: number) => Math.round(x);
  /** `pools` in turn, `requests` times: CPU per request of each gateway, and the p50 of each pool's requests. */
  const phase = async (pools: Pool[]) => {
    const [a0, b0] = [cpuUs(a.pid), cpuUs(b.pid)];
    const [sa0, sb0] = [switches(a.pid), switches(b.pid)];
    const [ma0, mb0] = [mainThreadUs(a.pid), mainThreadUs(b.pid)];
    const each = pools.map(() => [] as number[]);
    for (let i = 0; i < requests; i++)
      for (const [k, pool] of pools.entries()) {
        await one(pool);
        each[k]?.push(times.pop() as number);
      }
    const [a1, b1] = [cpuUs(a.pid), cpuUs(b.pid)];
    const [sa1, sb1] = [switches(a.pid), switches(b.pid)];
    const [ma1, mb1] = [mainThreadUs(a.pid), mainThreadUs(b.pid)];
    const n = requests * pools.length;
    // Involuntary switches per request: how often a process was preempted (its time then counts in a sampled
    // profile's frame, writev for one, though it is not its CPU).
    const per = (x1: number, x0: number) => Math.round(((x1 - x0) / n) * 100) / 100;
    return {
      aCpuUs: r((a1 - a0) / n),
      bCpuUs: r((b1 - b0) / n),
      // The JavaScript thread alone, at nanosecond resolution (the ticks above count 10 ms, and every thread).
      aMainUs: r((ma1 - ma0) / n),
      bMainUs: r((mb1 - mb0) / n),
      p50Us: each.map((xs) => r(p50(xs) * 1000)),
      preempted: { a: per(sa1[1], sa0[1]), b: per(sb1[1], sb0[1]) },
      waited: { a: per(sa1[0], sa0[0]), b: per(sb1[0], sb0[0]) },
    };
  };
  await phase([poolA, poolB]);
  const out = {
    transport,
    requests,
    // One pool after the other: each process stays busy.
    directOnly: await phase([poolA]),
    forwardedOnly: await phase([poolB]),
    // A, B, A, B (as lib/forwarded-session.ts): each gateway idles while the other serves.
    alternating: await phase([poolA, poolB]),
  };
  console.log(JSON.stringify({ ownerPid: a.pid, forwarderPid: b.pid, ...out }));
} finally {
  await stop();
}
