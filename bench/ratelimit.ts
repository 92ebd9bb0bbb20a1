// `npm run bench -- ratelimit`: what rate limits (limits.rules) cost, on loopback, in about a minute.
//
//   1. The check itself, in process (no HTTP): CPU per RateLimiter.check with the memory store, for a request no
//      rule matches, one per-caller rule, and a global plus a per-caller rule (--checks of each, after a warm-up).
//   2. tools/call through the gateway (memory store), the fast upstream's json-1k answer, 2026-07-28 requests from
//      8 clients (undici, in this process; the gateway's CPU is read from /proc): gateway CPU per call without limits and with a per-caller rule that never refuses; rounds
//      alternate (the order swapped every round), medians.
//   3. Redis: one script round trip (RedisRateStore.take, sequential, in process) p50; tools/call p50 at c=1
//      through two gateways sharing the Redis store, one with the rule and one without; the EVALSHA calls Redis
//      counted per limited request (INFO commandstats).
//   4. tasks/get of a completed task (the lean poll path), 8 clients: requests per second without limits and
//      with a rule on tasks/get that never refuses.
//
// Options: --rounds N (2), --duration S (3), --skip 1,2,3,4; --checks N (200000); --redis URL (redis://127.0.0.1:6379).
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { RedisRateStore } from "../src/ratelimit/redis-store.js";
import { connectRedis } from "../src/store/redis-connect.js";
import { parseStoreSpec } from "../src/store/store-url.js";
import { gatewayLauncher, type ConfiguredGateway } from "./lib/config-gateway.js";
import { alternate } from "./lib/alternate.js";
import { NEVER, rateCheckCosts } from "./lib/rate-check.js";
import { cpuSeconds } from "./lib/cpu.js";
import { installCleanup, setChildLifetime, stopAll } from "./lib/procs.js";
import { median, writeRawFigures } from "./lib/run-options.js";
import { startFastUpstream } from "./lib/upstreams.js";
import { Pool } from "undici";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "2" },
    duration: { type: "string", default: "3" },
    skip: { type: "string", default: "" },
    checks: { type: "string", default: "200000" },
    redis: { type: "string", default: "redis://127.0.0.1:6379" },
  },
});
const ROUNDS = Math.max(1, Number(values.rounds));
const DURATION = Math.max(1, Number(values.duration));
const CHECKS = Math.max(1000, Number(values.checks));
const SKIP = new Set(values.skip.split(",").filter((s) => s !== ""));
const REDIS_URL = values.redis;

const ARGS = { size: 1024, format: "json", delayMs: 0 };
const f = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const figures: Record<string, unknown> = {};

setChildLifetime(120 + ROUNDS * DURATION * 12);
installCleanup();
const launcher = gatewayLauncher("mtg-bench-ratelimit-");
const upstream = await startFastUpstream();
console.log(
  `node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);

/** Figure 1: µs of CPU per check, in process (lib/rate-check.ts). */
function checkCost(): void {
  const rows = rateCheckCosts(CHECKS);
  figures.check = rows;
  console.log(
    `\n1. RateLimiter.check, memory store, ${CHECKS} checks each over 1,000 callers (the loop itself is the "no rules" row)`,
  );
  console.log("| request | CPU µs per check |\n|---|---:|");
  for (const r of rows) console.log(`| ${r.case} | ${f(r.usPerCheck, 3)} |`);
}

function gatewayConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return { upstream: { url: upstream.url, era: "legacy" }, server: { host: "127.0.0.1" }, ...extra };
}

interface LoadResult {
  requests: number;
  durationSec: number;
  p50Us: number;
}

/**
 * `c` clients, each sending one request after another for DURATION s over a connection pool of its own (undici,
 * in this process: no wrk here). The gateway's CPU is read from /proc around the run, so the load generator's
 * own CPU is not counted; its latency is in the p50, equally for both sides of a comparison.
 */
async function load(g: ConfiguredGateway, c: number, body: Body): Promise<{ result: LoadResult; cpuUs: number }> {
  const pool = new Pool(g.origin, { connections: c, pipelining: 1 });
  const latencies: number[] = [];
  let failures = 0;
  const before = cpuSeconds(g.pid);
  const started = performance.now();
  const end = started + DURATION * 1000;
  let id = 0;
  try {
    await Promise.all(
      Array.from({ length: c }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          const res = await pool.request({
            path: "/mcp",
            method: "POST",
            headers: body.headers,
            body: body.text(++id),
          });
          await res.body.text();
          if (res.statusCode !== 200) failures += 1;
          latencies.push((performance.now() - t) * 1000);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const durationSec = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(g.pid) - before;
  if (failures > 0) throw new Error(`${failures} requests failed`);
  return {
    result: { requests: latencies.length, durationSec, p50Us: median(latencies) },
    cpuUs: (cpu * 1e6) / Math.max(1, latencies.length),
  };
}

interface Body {
  headers: Record<string, string>;
  text(id: number): string;
}

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "0.0.0" },
};

/** A 2026-07-28 request (the _meta envelope, the mirroring headers). */
function modern(method: string, params: Record<string, unknown>, name: string): Body {
  const tail = JSON.stringify({ method, params: { ...params, _meta: META } }).slice(1);
  return {
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      "mcp-name": name,
    },
    text: (id) => `{"jsonrpc":"2.0","id":${id},${tail}`,
  };
}

const CALL = modern("tools/call", { name: "bench", arguments: ARGS }, "bench");

/** Alternating rounds of `measure` on two gateways; medians of each. */
/** Gateway a and gateway b measured in turns (lib/alternate.ts). */
function inTurns<T>(
  a: ConfiguredGateway,
  b: ConfiguredGateway,
  measure: (g: ConfiguredGateway) => Promise<T>,
): Promise<{ a: T[]; b: T[] }> {
  return alternate(["a", "b"], ROUNDS, (which) => measure(which === "a" ? a : b));
}

/** Figure 2: gateway CPU per tools/call, memory store, without and with a rule. */
async function callCost(): Promise<void> {
  const none = await launcher.start("no-limits", gatewayConfig({}));
  const ruled = await launcher.start(
    "limits",
    gatewayConfig({ limits: { rules: [{ method: "tools/call", per: "caller", requests: NEVER, perMs: 1000 }] } }),
  );
  for (const g of [none, ruled]) await load(g, 8, CALL); // warm-up
  const got = await inTurns(none, ruled, (g) => load(g, 8, CALL));
  const cpu = (xs: Array<{ cpuUs: number }>) => median(xs.map((x) => x.cpuUs));
  const rps = (xs: Array<{ result: LoadResult }>) => median(xs.map((x) => x.result.requests / x.result.durationSec));
  figures.callCpu = { none: got.a, rule: got.b };
  console.log(`\n2. tools/call json-1k through the gateway (memory store), c=8, ${ROUNDS} rounds of ${DURATION} s`);
  console.log("| gateway | CPU µs per call | req/s |\n|---|---:|---:|");
  console.log(`| no limits | ${f(cpu(got.a), 1)} | ${f(rps(got.a), 0)} |`);
  console.log(`| a per-caller rule on tools/call | ${f(cpu(got.b), 1)} | ${f(rps(got.b), 0)} |`);
  console.log(`| difference | ${f(cpu(got.b) - cpu(got.a), 1)} | |`);
  await none.child.stop();
  await ruled.child.stop();
}

/** Figure 3: Redis. */
async function redisCost(): Promise<void> {
  const spec = parseStoreSpec(REDIS_URL);
  if (spec.kind !== "redis") throw new Error("--redis must be a redis:// URL");
  const client = await connectRedis(spec, { connectionName: "mcp-task-gateway-bench" });
  const prefix = `mtg-bench-rl:${randomBytes(4).toString("hex")}:`;
  try {
    const store = new RedisRateStore(client, prefix);
    const items = [
      { key: "g/x:*", intervalMs: 1000 / NEVER, burst: NEVER },
      { key: "c/x:caller", intervalMs: 1000 / NEVER, burst: NEVER },
    ];
    const lat: number[] = [];
    for (let i = 0; i < 2200; i++) {
      const t = performance.now();
      await store.take(items);
      if (i >= 200) lat.push((performance.now() - t) * 1000);
    }
    const scriptP50 = median(lat);
    const store0 = { tasks: { store: REDIS_URL, storePrefix: prefix } };
    const none = await launcher.start("redis-no-limits", gatewayConfig(store0));
    const ruled = await launcher.start(
      "redis-limits",
      gatewayConfig({
        ...store0,
        limits: { rules: [{ method: "tools/call", per: "caller", requests: NEVER, perMs: 1000 }] },
      }),
    );
    for (const g of [none, ruled]) await load(g, 1, CALL); // warm-up
    const evalshaCalls = async (): Promise<number> => {
      const info = await client.info("commandstats");
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
    };
    const evalsha = { none: [] as number[], rule: [] as number[] };
    const got = await inTurns(none, ruled, async (g) => {
      const before = await evalshaCalls();
      const r = await load(g, 1, CALL);
      evalsha[g === ruled ? "rule" : "none"].push(((await evalshaCalls()) - before) / r.result.requests);
      return r;
    });
    const p50 = (xs: Array<{ result: LoadResult }>) => median(xs.map((x) => x.result.p50Us));
    const inGateway = await checkHistogram(ruled);
    figures.redis = { scriptP50Us: scriptP50, none: got.a, rule: got.b, evalshaPerRequest: evalsha, inGateway };
    console.log(`\n3. Redis (${spec.display}): the script alone, and tools/call json-1k at c=1 , ${ROUNDS} rounds`);
    console.log("| figure | value |\n|---|---:|");
    console.log(`| one script round trip (two rules), p50, in process | ${f(scriptP50, 0)} µs |`);
    console.log(`| tools/call p50, Redis store, no limits | ${f(p50(got.a), 0)} µs |`);
    console.log(`| tools/call p50, Redis store, a per-caller rule | ${f(p50(got.b), 0)} µs |`);
    console.log(`| added p50 | ${f(p50(got.b) - p50(got.a), 0)} µs |`);
    console.log(
      `| the check as the gateway timed it (its histogram): mean, and the bucket holding the median | ${f(inGateway.meanUs, 0)} µs, ≤ ${f(inGateway.p50BucketUs, 0)} µs |`,
    );
    // Other replicas' scripts (leases, latency) run too; the rule's own share is the difference.
    console.log(`| EVALSHA per request, no limits | ${f(median(evalsha.none), 3)} |`);
    console.log(`| EVALSHA per request, a per-caller rule | ${f(median(evalsha.rule), 3)} |`);
    await none.child.stop();
    await ruled.child.stop();
  } finally {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
}

/** What the gateway's own histogram says of its rate-limit checks (mcp_gateway_rate_limit_check_duration_seconds). */
async function checkHistogram(g: ConfiguredGateway): Promise<{ meanUs: number; p50BucketUs: number; count: number }> {
  const text = await (await fetch(`${g.origin}/metrics`)).text();
  const name = "mcp_gateway_rate_limit_check_duration_seconds";
  const num = (re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN);
  const count = num(new RegExp(`^${name}_count (\\S+)$`, "m"));
  const sum = num(new RegExp(`^${name}_sum (\\S+)$`, "m"));
  let p50BucketUs = NaN;
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))) {
    if (Number(m[2]) >= count / 2) {
      p50BucketUs = Number(m[1]) * 1e6;
      break;
    }
  }
  return { meanUs: (sum / count) * 1e6, p50BucketUs, count };
}

/** The id of a completed task on `g` (a tasks rule always on bench). */
async function completedTask(g: ConfiguredGateway): Promise<string> {
  const post = async (body: Body) => {
    const res = await fetch(`${g.origin}/mcp`, { method: "POST", headers: body.headers, body: body.text(1) });
    return (await res.json()) as { result?: Record<string, unknown> };
  };
  const created = await post(CALL);
  const taskId = created.result?.taskId;
  if (typeof taskId !== "string") throw new Error(`no task: ${JSON.stringify(created)}`);
  for (let i = 0; i < 100; i++) {
    const got = await post(modern("tasks/get", { taskId }, taskId));
    if (got.result?.status === "completed") return taskId;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the task did not complete");
}

/** Figure 4: tasks/get throughput, without and with a rule on tasks/get. */
async function pollThroughput(): Promise<void> {
  const tasks = { rules: [{ tool: "bench", mode: "always" }] };
  const none = await launcher.start("polls-no-limits", gatewayConfig({ tasks }));
  const ruled = await launcher.start(
    "polls-limits",
    gatewayConfig({ tasks, limits: { rules: [{ method: "tasks/get", per: "caller", requests: NEVER, perMs: 1000 }] } }),
  );
  const polls = new Map<ConfiguredGateway, Body>();
  for (const g of [none, ruled]) {
    const taskId = await completedTask(g);
    polls.set(g, modern("tasks/get", { taskId }, taskId));
  }
  const poll = (g: ConfiguredGateway) => load(g, 8, polls.get(g) as Body);
  for (const g of [none, ruled]) await poll(g); // warm-up
  const got = await inTurns(none, ruled, poll);
  const rps = (xs: Array<{ result: LoadResult }>) => median(xs.map((x) => x.result.requests / x.result.durationSec));
  const cpu = (xs: Array<{ cpuUs: number }>) => median(xs.map((x) => x.cpuUs));
  figures.polls = { none: got.a, rule: got.b };
  console.log(`\n4. tasks/get of a completed task (lean path, memory store), c=8, ${ROUNDS} rounds of ${DURATION} s`);
  console.log("| gateway | req/s | CPU µs per poll |\n|---|---:|---:|");
  console.log(`| no limits | ${f(rps(got.a), 0)} | ${f(cpu(got.a), 1)} |`);
  console.log(`| a per-caller rule on tasks/get | ${f(rps(got.b), 0)} | ${f(cpu(got.b), 1)} |`);
  await none.child.stop();
  await ruled.child.stop();
}

try {
  if (!SKIP.has("1")) checkCost();
  if (!SKIP.has("2")) await callCost();
  if (!SKIP.has("3")) await redisCost();
  if (!SKIP.has("4")) await pollThroughput();
  console.log(
    `\nload average at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  writeRawFigures("ratelimit", figures);
} finally {
  await stopAll();
  launcher.cleanup();
}
