// `npm run bench -- sessions`: what gateway-held sessions on every replica cost (issue 23).
//
//   node --import tsx bench/sessions.ts [--requests N] [--seconds S] [--concurrency C]
//
// Needs Redis at 127.0.0.1:6379 (REDIS_URL overrides); every key goes under a fresh prefix, deleted at the end.
// 1. Forwarded request: two gateway processes (the CLI) on one Redis in front of server-everything over stdio;
//    tools/call echo on a session held by A, N requests sent to A (served there) and N to B (forwarded to A),
//    alternating, one at a time: the added p50 is B's p50 − A's (lib/forwarded-session.ts, also run by --check);
//    B reaches A over a Unix socket (server.internalSocketDir, as --workers does), then over loopback TCP.
// 2. stdio echo throughput, `--workers 2` against `--workers 1` (the CLI, real processes): C sessions each
//    calling echo in a loop for S seconds over a pool of C keep-alive connections, so about half of the
//    requests reach the worker that does not hold the session and are forwarded.
// 3. The owner map's Redis cost: round trips counted by the map itself (two gateways in this process, so that its
//    counter can be read) at the creation of M sessions, and its renewals over a few renewal intervals (scaled to a minute, at the default tasks.leaseMs of 15 s).
// Prints a Markdown table; figures go to bench/RESULTS.md by hand.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { forwardedSession } from "./lib/forwarded-session.js";
import { openSession, post } from "./lib/legacy-session.js";
import { installCleanup, stopAll } from "./lib/procs.js";
import { gatewayArgs } from "./lib/gateway-program.js";
import { parseConfig } from "../src/config/validate.js";
import { startGateway } from "../src/index.js";
import { createLogger } from "../src/log/logger.js";
import { openSharedTasks } from "../src/shared-tasks.js";
import type { RedisSessionOwners } from "../src/store/redis-session-owners.js";
import { connectRedis } from "../src/store/redis-connect.js";
import { parseStoreSpec } from "../src/store/store-url.js";
import { everythingCommand } from "../test/helpers/stdio-servers.js";

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? undefined : Number(process.argv[i + 1]);
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}
const REQUESTS = option("requests", 500);
const SECONDS = option("seconds", 5);
const CONCURRENCY = option("concurrency", 8);
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `bench-sessions-${randomBytes(4).toString("hex")}:`;

const ECHO = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "hi" } } };

const ms = (x: number): string => x.toFixed(3);
const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function config(leaseMs: number) {
  return parseConfig({
    upstream: { command: everythingCommand() },
    server: { host: "127.0.0.1", port: 0 },
    tasks: { store: REDIS_URL, storePrefix: PREFIX, leaseMs },
    log: { level: "error" },
    metrics: { enabled: false },
  });
}

// 1: two gateway processes (lib/forwarded-session.ts): the forwarded request's extra hop as deployed.
async function forwarded(): Promise<string[]> {
  const f = await forwardedSession({ redisUrl: REDIS_URL, requests: REQUESTS });
  const tcp = await forwardedSession({ redisUrl: REDIS_URL, requests: REQUESTS, transport: "tcp" });
  return [
    `| served by the owner (A), echo p50 | ${ms(f.ownerP50Ms)} ms |`,
    `| forwarded (B → A's internal listener over a Unix socket, as --workers), echo p50 | ${ms(f.forwardedP50Ms)} ms |`,
    `| **forwarded request, added p50** | **${ms(f.addedMs)} ms** (${REQUESTS} requests each; A and B separate processes) |`,
    `| the same over loopback TCP (replicas started separately), added p50 | ${ms(tcp.addedMs)} ms |`,
  ];
}

// 3: two gateways in this process, the shared state opened here so that the owner map's counter can be read
// (round trips are counts, not timings: one process does not change them).
async function redisCost(): Promise<string[]> {
  const leaseMs = 1_500;
  const cfg = config(leaseMs);
  const log = createLogger("error");
  const [sharedA, sharedB] = await Promise.all([
    openSharedTasks(cfg, log, Date.now),
    openSharedTasks(cfg, log, Date.now),
  ]);
  const a = await startGateway(cfg, { shared: sharedA });
  const b = await startGateway(cfg, { shared: sharedB });
  const poolA = new Pool(a.origin, { connections: 1 });
  const owners = sharedA.sessions as RedisSessionOwners;
  try {
    await openSession(poolA, "/mcp");
    // Creation: the round trips the map makes for M new sessions (one SET each), then renewals over 4 intervals.
    const M = 10;
    const before = owners.roundTrips;
    for (let i = 0; i < M; i++) await openSession(poolA, "/mcp");
    const atCreation = (owners.roundTrips - before) / M;
    const renewStart = owners.roundTrips;
    const windowMs = 4 * (leaseMs / 3) + 100;
    await new Promise((r) => setTimeout(r, windowMs));
    const renewals = owners.roundTrips - renewStart;
    const perMinuteAtDefault = (renewals / windowMs) * 60_000 * (leaseMs / 15_000);
    return [
      `| owner map: Redis round trips at a session's creation | ${atCreation.toFixed(2)} (one SET before the id is sent) |`,
      `| owner map: renewals per minute (one pipeline for every session held, tasks.leaseMs 15 s) | ${perMinuteAtDefault.toFixed(1)} round trips per replica, whatever its number of sessions (${M + 1} held here: ${renewals} pipelines in ${windowMs} ms at leaseMs ${leaseMs}) |`,
      `| owner map: a session's first request on another replica | 1 GET (owner) + 1 GET (its address, cached a third of a lease); then none |`,
    ];
  } finally {
    await poolA.close();
    await b.close();
    await a.close();
    for (const s of [sharedA, sharedB]) {
      await s.sessions?.close();
      await s.leases.close();
      await s.events.close();
      await s.store.close();
    }
  }
}

// 2. --workers N through the CLI.
async function workersThroughput(workers: number, dir: string): Promise<{ rps: number; p50: number }> {
  const file = join(dir, `workers-${workers}.json`);
  await writeFile(
    file,
    JSON.stringify({
      upstream: { command: everythingCommand() },
      server: { host: "127.0.0.1", port: 0 },
      tasks: { store: REDIS_URL, storePrefix: `${PREFIX}w${workers}:` },
      log: { level: "error" },
    }),
  );
  const child = spawn(process.execPath, [...gatewayArgs(), "--config", file, "--workers", String(workers)], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start line:\n${out}`)), 30_000);
      const check = (): void => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\/mcp/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      };
      child.stdout.on("data", check);
    });
    const pool = new Pool(url, { connections: CONCURRENCY });
    const sessions = [];
    for (let i = 0; i < CONCURRENCY; i++) sessions.push(await openSession(pool, "/mcp"));
    const latencies: number[] = [];
    const warmUntil = performance.now() + 1_000;
    const until = warmUntil + SECONDS * 1_000;
    await Promise.all(
      sessions.map(async (headers) => {
        while (performance.now() < until) {
          const t0 = performance.now();
          const res = await post(pool, "/mcp", ECHO, headers);
          if (res.status !== 200) throw new Error(`echo: ${res.status} ${res.text.slice(0, 200)}`);
          if (t0 >= warmUntil) latencies.push(performance.now() - t0);
        }
      }),
    );
    await pool.close();
    return { rps: latencies.length / SECONDS, p50: p50(latencies) };
  } finally {
    if (child.pid) process.kill(-child.pid, "SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

installCleanup();
const dir = await mkdtemp(join(tmpdir(), "bench-sessions-"));
try {
  const rows = [...(await forwarded()), ...(await redisCost())];
  const one = await workersThroughput(1, dir);
  const two = await workersThroughput(2, dir);
  rows.push(
    `| stdio echo, --workers 1, ${CONCURRENCY} sessions | ${one.rps.toFixed(0)} req/s (p50 ${ms(one.p50)} ms) |`,
    `| stdio echo, --workers 2, ${CONCURRENCY} sessions (≈ half forwarded) | ${two.rps.toFixed(0)} req/s (p50 ${ms(two.p50)} ms): **${(two.rps / one.rps).toFixed(2)}×** |`,
  );
  console.log(["| figure | measured |", "|---|---|", ...rows].join("\n"));
} finally {
  await stopAll();
  await rm(dir, { recursive: true, force: true });
  const spec = parseStoreSpec(REDIS_URL);
  if (spec.kind === "redis") {
    const client = await connectRedis(spec, { connectionName: "bench-sessions-cleanup" });
    const keys = await client.keys(`${PREFIX}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
}
// Child-process pipes and timers of the gateways closed above: nothing is left to wait for.
process.exit(0);
