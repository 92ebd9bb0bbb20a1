// Soak (issue 25): two gateway replicas on Redis for N minutes at a fixed rate of mixed work, through Redis
// failovers and replica restarts, counting what was acknowledged and never readable as final (lost).
//
//   npm run soak -- --minutes N [--rate 20] [--redis sentinel|cluster] [--failover-every 120] [--restart-every 90]
//                   [--wait-replicas 0] [--replicas 2]
//
// Work, started at --rate per second and spread over both replicas:
//   40 % plain calls (add: answered at once), 25 % tasks with input (echo, rule always), 15 % slow tasks (slow_task
//   past the threshold: becomes a task), 10 % cancels (a slow task, then tasks/cancel), 10 % pollers (tasks/get of a
//   task seen before). Every acknowledged task is polled, on the other replica, until it is final.
// Faults: every --failover-every seconds the Redis primary (Sentinel) or a random master (Cluster) is killed with
// SIGKILL and started again once its replica is promoted; every --restart-every seconds replica B is stopped
// (SIGTERM: drain and hand off) and started again. Sentinel runs --replicas replicas (default 2): a killed primary
// comes back empty and is a replica in sync only 15-20 s later, so with one replica a second failover inside that
// time promotes a replica that lacks the latest writes.
// Without WAIT (--wait-replicas 0) replication is asynchronous, and docs/deployment.md says what a failover may
// then lose (the last writes before the kill, or what a resyncing replica had not received): such a run can exit 1
// by design. With WAIT (CI runs --wait-replicas 1) nothing acknowledged may be lost.
// Reports: each replica's RSS and heap (from /metrics) every 5 s with the slope after warm-up (the first fifth);
// tasks created, finished and lost (acknowledged, never readable with a final status within a minute after the
// run); errors by reason; p99 latency per phase (steady, failover, restart) and kind of work.
// Writes bench/out/soak.json; exits 1 when a task was lost.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { startSdkUpstream } from "../test/fixtures/sdk-upstream.js";
import { startRedisCluster, startRedisSentinel } from "../test/helpers/redis-topologies.js";
import { getTask, replicaConfig, Replicas, rpc, type Json, type ReplicaProcess } from "../test/helpers/replicas.js";
import { OUT_DIR } from "./lib/paths.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "2" },
    rate: { type: "string", default: "20" },
    redis: { type: "string", default: "sentinel" },
    "failover-every": { type: "string", default: "120" },
    "restart-every": { type: "string", default: "90" },
    "wait-replicas": { type: "string", default: "0" },
    replicas: { type: "string", default: "2" },
  },
});
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const FAILOVER_S = Number(values["failover-every"]);
const RESTART_S = Number(values["restart-every"]);
const WAIT = Number(values["wait-replicas"]);
const TOPOLOGY = values.redis === "cluster" ? "cluster" : "sentinel";

type Phase = "steady" | "failover" | "restart";
type Kind = "plain" | "input" | "slow" | "cancel" | "poll";

let phase: Phase = "steady";
const latencies = new Map<string, number[]>();
const errors = new Map<string, number>();
/** Each acknowledged task: its final status once seen, and where and when it was acknowledged (for a lost one). */
interface Acked {
  final?: string;
  kind: Kind;
  replica: string;
  atS: number;
  phase: Phase;
}
const acknowledged = new Map<string, Acked>();
let finished = 0;

const note = (reason: string): void => void errors.set(reason, (errors.get(reason) ?? 0) + 1);
/** Successful task creations (ms since start), for the longest stretch without one (a failover's). */
const creations: number[] = [];
function timed(kind: Kind, ms: number, at: Phase): void {
  const key = `${at}:${kind}`;
  let xs = latencies.get(key);
  if (!xs) latencies.set(key, (xs = []));
  xs.push(ms);
}
const reasonOf = (reply: { status: number; error: Json | undefined }): string => {
  const data = reply.error?.data;
  const reason = data && typeof data === "object" && "reason" in data ? String(data.reason) : undefined;
  return reason ?? `http_${reply.status}`;
};

const upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
const redis =
  TOPOLOGY === "cluster" ? await startRedisCluster() : await startRedisSentinel({ replicas: Number(values.replicas) });
const replicas = new Replicas();
const prefix = `mtg-soak:${process.pid}:`;
const config = replicaConfig(upstream.url, redis.url, prefix, {
  leaseMs: 15_000,
  sweepIntervalMs: 5_000,
  thresholdMs: 300,
  pollIntervalMs: 200,
  maxTasksPerCaller: 100_000,
  redisWaitReplicas: WAIT,
  rules: [{ tool: "echo", mode: "always" }],
});
/** Every replica process started, stopped ones too: a lost task's story is in their logs. */
const everyReplica: ReplicaProcess[] = [];
const startReplica = async (name: string): Promise<ReplicaProcess> => {
  const started = await replicas.start(name, config);
  everyReplica.push(started);
  return started;
};
let a = await startReplica("A");
let b: ReplicaProcess | undefined = await startReplica("B");
const live = (): ReplicaProcess[] => [a, ...(b ? [b] : [])];
const pick = (i: number): ReplicaProcess => live()[i % live().length] ?? a;

/** Polls a task until final (on whichever replica is up), for at most `ms`. */
async function untilFinal(taskId: string, from: number, ms: number): Promise<string | undefined> {
  const deadline = Date.now() + ms;
  for (let i = from; Date.now() < deadline; i++) {
    const reply = await getTask(pick(i).url, taskId).catch(() => undefined);
    const status = reply?.result?.status;
    if (typeof status === "string" && ["completed", "failed", "cancelled"].includes(status)) return status;
    if (reply && reply.result === undefined) note(`poll:${reasonOf(reply)}`);
    await sleep(200);
  }
  return undefined;
}

/** Polls an acknowledged task (call() recorded it) until final. */
async function track(taskId: string, i: number): Promise<void> {
  const entry = acknowledged.get(taskId);
  if (!entry) return;
  const final = await untilFinal(taskId, i + 1, 30_000);
  if (final !== undefined) {
    entry.final = final;
    finished += 1;
  }
}

async function call(kind: Kind, i: number, name: string, args: Json): Promise<string | undefined> {
  // A call counts in the phase it started in.
  const at = phase;
  const t0 = performance.now();
  const target = pick(i);
  const reply = await rpc(target.url, "tools/call", { name, arguments: args }).catch((err: unknown) => {
    note(`${kind}:${(err as NodeJS.ErrnoException).code ?? "exception"}`);
    return undefined;
  });
  if (!reply) return undefined;
  if (reply.result === undefined) {
    note(`${kind}:${reasonOf(reply)}`);
    return undefined;
  }
  timed(kind, performance.now() - t0, at);
  const id = reply.result.taskId;
  if (typeof id !== "string") return "";
  creations.push(Date.now() - started);
  acknowledged.set(id, { kind, replica: `${target.name}#${target.pid}`, atS: (Date.now() - started) / 1_000, phase });
  return id;
}

async function one(i: number): Promise<void> {
  const r = (i * 7919) % 100;
  if (r < 40) {
    await call("plain", i, "add", { a: i, b: 1 });
  } else if (r < 65) {
    const id = await call("input", i, "echo", { text: `soak ${i}` });
    if (id) await track(id, i);
  } else if (r < 80) {
    const id = await call("slow", i, "slow_task", { durationMs: 500 + (i % 1_500), steps: 2 });
    if (id) await track(id, i);
  } else if (r < 90) {
    const id = await call("cancel", i, "slow_task", { durationMs: 5_000, steps: 5 });
    if (!id) return;
    const cancelled = await rpc(pick(i + 1).url, "tasks/cancel", { taskId: id }).catch(() => undefined);
    if (cancelled && cancelled.result === undefined) note(`cancel:${reasonOf(cancelled)}`);
    await track(id, i);
  } else {
    const known = [...acknowledged.keys()];
    const id = known[i % Math.max(1, known.length)];
    if (id === undefined) return;
    const at = phase;
    const t0 = performance.now();
    const reply = await getTask(pick(i).url, id).catch(() => undefined);
    if (reply?.result) timed("poll", performance.now() - t0, at);
    else note(`poll:${reply ? reasonOf(reply) : "exception"}`);
  }
}

// ---- memory over time ----
interface Sample {
  s: number;
  /** The replica's name and pid: a restarted replica is a new series. */
  replica: string;
  rssMiB: number;
  heapMiB: number;
}
const samples: Sample[] = [];
const started = Date.now();
async function sample(): Promise<void> {
  for (const g of live()) {
    try {
      const status = readFileSync(`/proc/${g.pid}/status`, "utf8");
      const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const metrics = await (await fetch(`${g.origin}/metrics`)).text();
      const heap = Number(/^mcp_gateway_nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)?.[1] ?? 0);
      samples.push({
        s: (Date.now() - started) / 1_000,
        replica: `${g.name}#${g.pid}`,
        rssMiB: rssKiB / 1024,
        heapMiB: heap / 2 ** 20,
      });
    } catch {
      // A replica restarting: no sample this time.
    }
  }
}

/** Least-squares slope of y over x, per 10 minutes. */
function slopePer10Min(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 600;
}

// ---- faults ----
/** When each fault began and ended (s since start), to set beside a lost task's acknowledgement. */
const faults: Array<{ kind: "failover" | "restart"; fromS: number; toS?: number }> = [];
const since = (): number => (Date.now() - started) / 1_000;

async function failover(): Promise<void> {
  phase = "failover";
  const t0 = Date.now();
  const record: (typeof faults)[number] = { kind: "failover", fromS: since() };
  faults.push(record);
  try {
    if ("promotedFrom" in redis) {
      const primary = await redis.primary();
      const node = redis.data.find((n) => n.port === primary);
      await node?.kill();
      await redis.promotedFrom(primary);
      await node?.start();
    } else {
      const masters = (await redis.topology()).filter((n) => n.master);
      const victim = masters[Math.floor(Math.random() * masters.length)];
      if (victim) {
        await redis.node(victim.port).kill();
        // Restarted only once its replica took over: back earlier, it would serve its slots again, empty.
        await redis.failedOver(victim.port);
        await redis.node(victim.port).start();
        await redis.healthy();
      }
    }
    record.toS = since();
    console.error(`soak: failover done in ${Date.now() - t0} ms`);
  } catch (err) {
    note(`failover:${(err as Error).message.slice(0, 60)}`);
  }
  await sleep(5_000);
  phase = "steady";
}

async function restart(): Promise<void> {
  if (!b) return;
  phase = "restart";
  const record: (typeof faults)[number] = { kind: "restart", fromS: since() };
  faults.push(record);
  const old = b;
  b = undefined;
  await old.terminate(30_000);
  b = await startReplica("B");
  record.toS = since();
  await sleep(2_000);
  phase = "steady";
}

const endAt = started + MINUTES * 60_000;
const inflight = new Set<Promise<void>>();
const sampler = setInterval(() => void sample(), 5_000);
let nextFailover = started + FAILOVER_S * 1_000;
let nextRestart = started + RESTART_S * 1_000;
let fault: Promise<void> | undefined;
let i = 0;
try {
  while (Date.now() < endAt) {
    const tick = Date.now();
    if (!fault && tick >= nextFailover) {
      fault = failover().finally(() => (fault = undefined));
      nextFailover = tick + FAILOVER_S * 1_000;
    } else if (!fault && tick >= nextRestart) {
      fault = restart().finally(() => (fault = undefined));
      nextRestart = tick + RESTART_S * 1_000;
    }
    const p = one(i++).catch((err: unknown) => note(`exception:${(err as Error).message.slice(0, 60)}`));
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    await sleep(Math.max(0, 1_000 / RATE - (Date.now() - tick)));
  }
  await fault;
  await Promise.all([...inflight]);
  // Anything acknowledged and not seen final yet gets a last minute.
  await Promise.all(
    [...acknowledged].map(async ([id, entry], k) => {
      if (entry.final !== undefined) return;
      const final = await untilFinal(id, k, 60_000);
      if (final !== undefined) {
        entry.final = final;
        finished += 1;
      }
    }),
  );
  await sample();
} finally {
  clearInterval(sampler);
  await replicas.cleanup();
  await upstream.close();
  await redis.stop();
}

const warm = MINUTES * 60 * 0.2;
const memory = [...new Set(samples.map((s) => s.replica))].map((name) => {
  const mine = samples.filter((s) => s.replica === name && s.s >= warm);
  return {
    replica: name,
    seconds: mine.length < 2 ? 0 : Math.round((mine.at(-1)?.s ?? 0) - (mine[0]?.s ?? 0)),
    rssMiB: { first: mine[0]?.rssMiB ?? 0, last: mine.at(-1)?.rssMiB ?? 0 },
    rssSlopeMiBPer10Min: slopePer10Min(mine.map((s) => [s.s, s.rssMiB])),
    heapSlopeMiBPer10Min: slopePer10Min(mine.map((s) => [s.s, s.heapMiB])),
  };
});
const p99 = Object.fromEntries(
  [...latencies].map(([key, xs]) => {
    const sorted = [...xs].sort((x, y) => x - y);
    return [key, { n: xs.length, p99Ms: Math.round(sorted[Math.floor(0.99 * (sorted.length - 1))] ?? 0) }];
  }),
);
let longestWithoutCreationMs = 0;
creations.sort((x, y) => x - y);
for (let k = 1; k < creations.length; k++)
  longestWithoutCreationMs = Math.max(longestWithoutCreationMs, (creations[k] ?? 0) - (creations[k - 1] ?? 0));
const lost = [...acknowledged].filter(([, e]) => e.final === undefined).map(([id]) => id);
// A lost task's story: where and when it was acknowledged, and every replica log line that names it.
const lostTasks = lost.slice(0, 20).map((id) => ({
  id,
  ...acknowledged.get(id),
  log: everyReplica.flatMap((r) =>
    `${r.stdout()}\n${r.stderr()}`
      .split("\n")
      .filter((line) => line.includes(id))
      .map((line) => `${r.name}#${r.pid}: ${line.slice(0, 400)}`),
  ),
}));
const byFinal: Record<string, number> = {};
for (const [, e] of acknowledged) if (e.final) byFinal[e.final] = (byFinal[e.final] ?? 0) + 1;
const report = {
  minutes: MINUTES,
  rate: RATE,
  redis: TOPOLOGY,
  redisWaitReplicas: WAIT,
  redisReplicas: TOPOLOGY === "cluster" ? 1 : Number(values.replicas),
  started: i,
  tasks: { created: acknowledged.size, finished, lost: lost.length, byFinal, lostTasks },
  faults,
  longestWithoutCreationMs,
  errors: Object.fromEntries([...errors].sort((x, y) => y[1] - x[1])),
  p99,
  memory,
  samples,
};
mkdirSync(OUT_DIR, { recursive: true });
writeFileSync(join(OUT_DIR, "soak.json"), JSON.stringify(report, null, 2));
console.log(JSON.stringify({ ...report, samples: `${samples.length} (bench/out/soak.json)` }, null, 2));
process.exitCode = lost.length > 0 ? 1 : 0;
