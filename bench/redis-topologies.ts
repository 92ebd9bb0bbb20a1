// The Redis deployments of issue 25 side by side: task creation and tasks/get throughput through two gateway
// replicas on a single redis-server, on a 3-master/3-replica Redis Cluster and behind Sentinel (a primary and a
// replica), each without and (where there are replicas) with tasks.redisWaitReplicas: 1; and, on the cluster,
// how the masters' CPU splits while tasks are created (the counters' slot is one master's: is it the hot one?).
//
//   npm run bench -- redis [--seconds 10] [--concurrency 32]
//
// Every deployment is private (free loopback ports, temp dirs) and stopped afterwards. The load generator runs
// in this process, on the same cores as the gateways and Redis: the figures compare deployments on one machine,
// they are not capacities. Requests go one per connection (no keep-alive), alternating between the replicas.
// Writes bench/out/redis-topologies.json and prints a Markdown table.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startSdkUpstream } from "../test/fixtures/sdk-upstream.js";
import { startPrivateRedis } from "../test/helpers/redis-server.js";
import { cli, startRedisCluster, startRedisSentinel } from "../test/helpers/redis-topologies.js";
import { getTask, replicaConfig, Replicas, rpc, type ReplicaProcess } from "../test/helpers/replicas.js";
import { OUT_DIR } from "./lib/paths.js";
import { connectRedis } from "../src/store/redis-connect.js";
import { RedisTaskStore } from "../src/store/redis-store.js";
import { parseStoreSpec, type RedisStoreSpec } from "../src/store/store-url.js";
import { storedTask } from "../src/store/task-store.js";
import { taskRecord } from "../test/helpers/task-record.js";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, concurrency: { type: "string", default: "32" } },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);

interface Deployment {
  name: string;
  url: string;
  /** Ports of the masters (CPU split), when more than one. */
  masters: number[];
  stop(): Promise<void>;
}

interface Row {
  deployment: string;
  /** RedisTaskStore.create (and the completing update) straight from this process, no gateway: the store's ceiling. */
  storeCreatesPerSec: number;
  wait: number;
  createsPerSec: number;
  createP50Ms: number;
  createP99Ms: number;
  getsPerSec: number;
  getP99Ms: number;
  errors: number;
  /** Cluster: each master's share of the Redis CPU during the create phase, the counters' master first. */
  masterCpuShare?: number[];
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

/** `CONCURRENCY` loops of `one` for `SECONDS`; the latencies of the ones that succeeded, and the failures. */
async function drive(one: (i: number) => Promise<boolean>): Promise<{ ok: number[]; errors: number; ms: number }> {
  const ok: number[] = [];
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const end = start + SECONDS * 1_000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        if (await one(i++).catch(() => false)) ok.push(performance.now() - t0);
        else errors += 1;
      }
    }),
  );
  return { ok, errors, ms: performance.now() - start };
}

async function cpuOf(port: number): Promise<number> {
  const info = await cli(port, "INFO", "cpu");
  const num = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return num("used_cpu_sys") + num("used_cpu_user");
}

async function measure(upstreamUrl: string, d: Started, wait: number): Promise<Row> {
  const replicas = new Replicas();
  const prefix = `mtg-bench:${process.pid}:${d.name.replace(/\W/g, "")}:${wait}:`;
  const config = replicaConfig(upstreamUrl, d.url, prefix, {
    leaseMs: 15_000,
    sweepIntervalMs: 5_000,
    thresholdMs: 5_000,
    maxTasks: 1_000_000,
    maxTasksPerCaller: 1_000_000,
    redisWaitReplicas: wait,
    rules: [{ tool: "echo", mode: "always" }],
  });
  try {
    const gateways: ReplicaProcess[] = await Promise.all([replicas.start("A", config), replicas.start("B", config)]);
    const url = (i: number): string => gateways[i % 2]?.url ?? "";
    const ids: string[] = [];
    const counters = d.masters.length > 1 ? await d.masterOf(`${prefix}{counters}:unfinished`) : undefined;
    const cpuBefore = await Promise.all(d.masters.map(cpuOf));
    const created = await drive(async (i) => {
      const reply = await rpc(url(i), "tools/call", { name: "echo", arguments: { text: `t${i}` } });
      const id = reply.result?.taskId;
      if (typeof id !== "string") return false;
      if (ids.length < 20_000) ids.push(id);
      return true;
    });
    const cpuAfter = await Promise.all(d.masters.map(cpuOf));
    const gets = await drive(async (i) => {
      const reply = await getTask(url(i + 1), ids[i % ids.length] ?? "");
      return reply.result?.status === "completed";
    });
    let share: number[] | undefined;
    if (d.masters.length > 1) {
      const used = d.masters.map((port, k) => ({ port, cpu: (cpuAfter[k] ?? 0) - (cpuBefore[k] ?? 0) }));
      const total = used.reduce((s, u) => s + u.cpu, 0) || 1;
      used.sort((x, y) => (x.port === counters ? -1 : y.port === counters ? 1 : y.cpu - x.cpu));
      share = used.map((u) => Math.round((u.cpu / total) * 100) / 100);
    }
    const ceiling = await storeCeiling(d, prefix, wait);
    return {
      deployment: d.name,
      storeCreatesPerSec: ceiling,
      wait,
      createsPerSec: Math.round((created.ok.length / created.ms) * 1_000),
      createP50Ms: Math.round(pct(created.ok, 50) * 10) / 10,
      createP99Ms: Math.round(pct(created.ok, 99) * 10) / 10,
      getsPerSec: Math.round((gets.ok.length / gets.ms) * 1_000),
      getP99Ms: Math.round(pct(gets.ok, 99) * 10) / 10,
      errors: created.errors + gets.errors,
      ...(share && { masterCpuShare: share }),
    };
  } finally {
    await replicas.cleanup();
  }
}

/** Tasks created and completed per second by RedisTaskStore itself, CONCURRENCY at a time (no gateway). */
async function storeCeiling(d: Started, prefix: string, wait: number): Promise<number> {
  const spec = parseStoreSpec(d.url) as RedisStoreSpec;
  const client = await connectRedis(spec);
  const store = new RedisTaskStore({
    client,
    prefix: `${prefix}store:`,
    maxBytes: 1 << 30,
    now: Date.now,
    ownsClient: true,
    wait: { replicas: wait, timeoutMs: 1_000 },
  });
  const limits = { maxTasks: 1_000_000, maxTasksPerCaller: 1_000_000 };
  try {
    const run = await drive(async (i) => {
      const record = taskRecord(`bench-${i}-${process.pid}`, Date.now(), { ttlMs: 60_000 });
      const json = JSON.stringify({ taskId: record.taskId, status: "working" });
      if (!(await store.create(storedTask(record, json), limits)).ok) return false;
      const done = { ...record, status: "completed" as const, result: { content: [] } };
      return (
        (await store.update(storedTask(done, JSON.stringify({ taskId: record.taskId, status: "completed" })))) === "ok"
      );
    });
    return Math.round((run.ok.length / run.ms) * 1_000);
  } finally {
    await store.close();
  }
}

type Started = Deployment & { masterOf(key: string): Promise<number> };

function deployments(): Array<() => Promise<Started>> {
  return [
    async () => {
      const r = await startPrivateRedis();
      return { name: "single node", url: r.url, masters: [], stop: r.stop, masterOf: () => Promise.resolve(r.port) };
    },
    async () => {
      const c = await startRedisCluster();
      const masters = (await c.topology()).filter((n) => n.master).map((n) => n.port);
      return { name: "cluster 3+3", url: c.url, masters, stop: c.stop, masterOf: c.masterOf };
    },
    async () => {
      const s = await startRedisSentinel();
      return { name: "sentinel 1+1", url: s.url, masters: [], stop: s.stop, masterOf: s.primary };
    },
  ];
}

const upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
const rows: Row[] = [];
try {
  for (const start of deployments()) {
    const d = await start();
    try {
      for (const wait of d.name === "single node" ? [0] : [0, 1]) {
        const row = await measure(upstream.url, d, wait);
        console.error(JSON.stringify(row));
        rows.push(row);
      }
    } finally {
      await d.stop();
    }
  }
} finally {
  await upstream.close();
}

const table = [
  "| deployment | redisWaitReplicas | creates/s | create p50 / p99 (ms) | gets/s | get p99 (ms) | errors | cluster masters' CPU share (counters' first) | store alone: create+complete/s |",
  "|---|---:|---:|---:|---:|---:|---:|---|---:|",
  ...rows.map(
    (r) =>
      `| ${r.deployment} | ${r.wait} | ${r.createsPerSec} | ${r.createP50Ms} / ${r.createP99Ms} | ${r.getsPerSec} | ${r.getP99Ms} | ${r.errors} | ${r.masterCpuShare?.join(" / ") ?? ""} | ${r.storeCreatesPerSec} |`,
  ),
].join("\n");
mkdirSync(OUT_DIR, { recursive: true });
writeFileSync(
  join(OUT_DIR, "redis-topologies.json"),
  JSON.stringify({ seconds: SECONDS, concurrency: CONCURRENCY, rows }, null, 2),
);
console.log(table);
