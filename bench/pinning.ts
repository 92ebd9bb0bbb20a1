// `npm run bench -- pinning`: what pinned definitions (upstreams.<name>.pinning) cost, in under a minute.
//
//   1. The check itself, in process: CPU per PinRegistry.checkList of a tools/list page whose tools are all
//      approved (the steady state), for pages of 10, 50 and 200 tools (memory store, after a warm-up).
//   2. Through the gateway (after a warm-up pass of every case; in this process, in front of an SDK upstream listing 50 tools, modern 2026-07-28
//      requests one at a time): tools/list and tools/call latency (p50) and this process's CPU per request, with
//      pinning off, hide on the memory store, and hide on Redis (one version GET per checked request); tools/call
//      under hide with pinningListMaxAgeMs 0 (the gateway lists the upstream before every call) and 60000.
//
// Options: --requests N (300), --checks N (20000), --redis URL (redis://127.0.0.1:6379).
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { PinRegistry } from "../src/catalog/pin-registry.js";
import { startGateway, type GatewayConfigInput } from "../src/index.js";
import { MemoryPinStore } from "../src/store/pins.js";
import { ECHO, startDynamicUpstream, type DynamicTool } from "../test/fixtures/dynamic-upstream.js";
import { callTool, modernRpc } from "../test/helpers/modern-rpc.js";
import { median } from "./lib/run-options.js";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "300" },
    checks: { type: "string", default: "20000" },
    redis: { type: "string", default: "redis://127.0.0.1:6379" },
  },
});
const REQUESTS = Math.max(50, Number(values.requests));
const CHECKS = Math.max(1000, Number(values.checks));

const toolsOf = (n: number): DynamicTool[] =>
  Array.from({ length: n }, (_, i) => ({
    ...ECHO,
    name: `tool_${i}`,
    description: `${ECHO.description} (${i}) `.repeat(4),
  }));

console.log(
  `node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);

// 1. checkList in process.
for (const n of [10, 50, 200]) {
  const tools = toolsOf(n);
  const registry = new PinRegistry(
    new MemoryPinStore(),
    () => ({ policy: "hide", pins: {}, listMaxAgeMs: 0 }),
    { changed: () => {}, approved: () => {}, overflow: () => {}, failed: () => {} },
    Date.now,
  );
  await registry.refresh("u");
  await registry.seed("u", tools);
  for (let i = 0; i < 1000; i++) registry.checkList("u", tools);
  const rounds = Math.max(100, Math.round(CHECKS / n));
  const start = process.cpuUsage();
  for (let i = 0; i < rounds; i++) registry.checkList("u", tools);
  const used = process.cpuUsage(start);
  const us = (used.user + used.system) / rounds;
  console.log(`checkList, ${n} tools: ${us.toFixed(1)} µs CPU per page (${(us / n).toFixed(2)} µs per tool)`);
}

// 2. Through the gateway.
const upstream = await startDynamicUpstream(toolsOf(50));
const prefix = `mtg-bench-pins:${randomBytes(4).toString("hex")}:`;

/** The first pass only warms up (JIT, connections, the upstream): its figures are not printed. */
let quiet = true;

async function measure(label: string, block: Record<string, unknown>, redis: boolean): Promise<void> {
  const config: GatewayConfigInput = {
    upstreams: { u: { url: upstream.url, ...block } },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    ...(redis && { tasks: { store: values.redis, storePrefix: `${prefix}${label.replace(/\W+/g, "-")}:` } }),
  };
  const gw = await startGateway(config);
  const url = `${gw.url}/u`;
  try {
    for (const [what, send] of [
      ["tools/list", () => modernRpc(url, "tools/list", {})],
      ["tools/call", () => callTool(url, "tool_1", { message: "hi" })],
    ] as const) {
      for (let i = 0; i < 30; i++) await send();
      const times: number[] = [];
      const start = process.cpuUsage();
      for (let i = 0; i < REQUESTS; i++) {
        const t0 = performance.now();
        const answer = await send();
        times.push(performance.now() - t0);
        if (answer.body.error) throw new Error(`${label} ${what}: ${JSON.stringify(answer.body.error)}`);
      }
      const used = process.cpuUsage(start);
      const cpu = (used.user + used.system) / REQUESTS;
      if (!quiet)
        console.log(
          `${label.padEnd(34)} ${what}: p50 ${(median(times) * 1000).toFixed(0)} µs, CPU ${cpu.toFixed(0)} µs per request`,
        );
    }
  } finally {
    await gw.close(0);
  }
}

for (const pass of [1, 2]) {
  quiet = pass === 1;
  await measure("pinning off", {}, false);
  await measure("hide, memory store", { pinning: "hide" }, false);
  await measure("hide, memory, listMaxAgeMs 60000", { pinning: "hide", pinningListMaxAgeMs: 60_000 }, false);
  await measure("hide, Redis store", { pinning: "hide" }, true);
  await measure("hide, Redis, listMaxAgeMs 60000", { pinning: "hide", pinningListMaxAgeMs: 60_000 }, true);
}
await upstream.close();
// The Redis keys the runs wrote go with them.
{
  const { connectRedis, closeRedis } = await import("../src/store/redis-connect.js");
  const { parseStoreSpec } = await import("../src/store/store-url.js");
  const spec = parseStoreSpec(values.redis);
  if (spec.kind === "redis") {
    const client = await connectRedis(spec);
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    await closeRedis(client);
  }
}
