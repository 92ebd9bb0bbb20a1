// Adaptive promotion (issue 15): the figures.
//
//   npm run bench -- adaptive [-- --store redis://127.0.0.1:6379]
//
//   handle   time to the task handle for a 10 s tool through a real gateway (child
//            process, default threshold 5 s, memory store): the warm-up calls (the
//            threshold) against the calls after it (promoted at once), beside the
//            round trip of a plain fast call. Also the poll hint the handle carries.
//   polls    tasks/get load for a mix of 3 s and 10 min tools: a client that follows
//            the adaptive hint against the fixed 1 s interval. Computed with the
//            gateway's own LatencyHistory on an injected clock (a 10-minute tool
//            cannot be warmed up in a benchmark's time), threshold 1 s so the 3 s tool
//            is a task too; polls per task = ⌈remaining / interval⌉, the lag to see
//            the result is about half an interval.
//   redis    Redis commands per tools/call with the shared history, read from Redis
//            itself (INFO commandstats): 2,000 fast calls at c=16, adaptive on vs off,
//            same gateway config otherwise (fast plain calls touch no task keys, so the
//            difference is the history's own cost).
//
// Writes bench/out/adaptive-results.json and prints the tables (paste them into bench/RESULTS.md).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LatencyHistory } from "../../src/tasks/latency-history.js";
import { OUT_DIR } from "../lib/paths.js";
import { installCleanup, setChildLifetime, stopAll } from "../lib/procs.js";
import { renderTextTable } from "../lib/table.js";
import { startGateway, startLegacyUpstream } from "./children.js";
import type { Running } from "./children.js";
import { forEachLimit, McpClient } from "./client.js";
import { diffCalls, RedisProbe } from "./redis.js";

const { values } = parseArgs({
  options: { store: { type: "string", default: "redis://127.0.0.1:6379" }, help: { type: "boolean", default: false } },
});
if (values.help) {
  process.stdout.write("Usage: npm run bench -- adaptive [-- --store redis://HOST:PORT]\n");
  process.exit(0);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
}

const ms = (v: number): string => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

async function gateway(name: string, upstream: string, tasks: Record<string, unknown>): Promise<Running> {
  mkdirSync(OUT_DIR, { recursive: true });
  return startGateway(name, upstream, { tasks }, join(OUT_DIR, `adaptive-${name}.json`));
}

async function waitDone(client: McpClient, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    for (;;) {
      const t = await client.getTask(id);
      if (t.result?.["status"] !== "working") break;
      await sleep(200);
    }
  }
}

interface HandleFigures {
  roundTripMs: { p50: number; p99: number };
  warmup: { calls: number; handleMs: number[] };
  after: { calls: number; p50: number; p99: number; max: number; pollIntervalMs: number[] };
}

/** Time to the handle for a 10 s tool, before and after warm-up. */
async function handleTimes(upstream: string): Promise<HandleFigures> {
  const gw = await gateway("handle", upstream, { rules: [{ tool: "plain_fast", mode: "never" }] });
  const client = new McpClient(gw.url, 32);
  try {
    // The round trip: a plain fast call, sequential.
    for (let i = 0; i < 50; i++) await client.callTool("plain_fast", { delayMs: 0 });
    const rt: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await client.callTool("plain_fast", { delayMs: 0 });
      rt.push(performance.now() - t0);
    }
    // Warm-up: five 10 s calls at once; each waits the 5 s threshold for its handle.
    const warm = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const t0 = performance.now();
        const id = await client.createTask("report_10s", { delayMs: 10_000 });
        return { id, ms: performance.now() - t0 };
      }),
    );
    await waitDone(
      client,
      warm.map((w) => w.id),
    );
    // After: the tool is known to be slow; the handle comes at once.
    const after: number[] = [];
    const hints: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      const reply = await client.callTool("report_10s", { delayMs: 10_000 });
      after.push(performance.now() - t0);
      if (reply.result?.["resultType"] !== "task")
        throw new Error(`call ${i} after warm-up was not a task: ${JSON.stringify(reply.result)}`);
      hints.push(Number(reply.result["pollIntervalMs"]));
    }
    return {
      roundTripMs: { p50: quantile(rt, 0.5), p99: quantile(rt, 0.99) },
      warmup: { calls: warm.length, handleMs: warm.map((w) => w.ms) },
      after: {
        calls: after.length,
        p50: quantile(after, 0.5),
        p99: quantile(after, 0.99),
        max: Math.max(...after),
        pollIntervalMs: [...new Set(hints)],
      },
    };
  } finally {
    await client.close();
    gw.child.kill("SIGKILL");
  }
}

interface PollRow {
  tool: string;
  durationMs: number;
  promoted: string;
  hintMs: number;
  pollsAdaptive: number;
  pollsFixed: number;
  lagAdaptiveMs: number;
  lagFixedMs: number;
}

/** tasks/get per task, adaptive hint against a fixed 1 s, from the gateway's own estimator. */
function pollLoad(): { rows: PollRow[]; mix: { perHourAdaptive: number; perHourFixed: number; saved: number } } {
  let t = 0;
  const history = new LatencyHistory({
    now: () => t,
    settings: { enabled: true, minPollIntervalMs: 250, maxPollIntervalMs: 5_000 },
  });
  const threshold = 1_000;
  const tools = [
    { tool: "three_s", durationMs: 3_000 },
    { tool: "ten_min", durationMs: 600_000 },
  ];
  // Warm-up: 10 calls each (a little jitter, ±10 %).
  for (const { tool, durationMs } of tools) {
    for (let i = 0; i < 10; i++) {
      const timing = history.begin(tool, { thresholdMs: threshold, pollIntervalMs: 1_000 }, false);
      t += durationMs * (0.9 + 0.02 * i);
      timing?.answered();
    }
  }
  const rows: PollRow[] = [];
  for (const { tool, durationMs } of tools) {
    const atOnce = history.atOnce(tool, threshold);
    const elapsed = atOnce ? 0 : threshold;
    const hint = history.pollIntervalMs(tool, elapsed, 1_000);
    const remaining = durationMs - elapsed;
    rows.push({
      tool,
      durationMs,
      promoted: atOnce ? "at once" : "at the threshold",
      hintMs: hint,
      pollsAdaptive: Math.ceil(remaining / hint),
      pollsFixed: Math.ceil(remaining / 1_000),
      lagAdaptiveMs: hint / 2,
      lagFixedMs: 500,
    });
  }
  // The mix: as many tasks of each per hour (100 + 100).
  const perHourAdaptive = rows.reduce((s, r) => s + 100 * r.pollsAdaptive, 0);
  const perHourFixed = rows.reduce((s, r) => s + 100 * r.pollsFixed, 0);
  return { rows, mix: { perHourAdaptive, perHourFixed, saved: 1 - perHourAdaptive / perHourFixed } };
}

interface RedisFigures {
  calls: number;
  on: { commands: Record<string, number>; perCall: number; seconds: number };
  off: { commands: Record<string, number>; perCall: number; seconds: number };
}

/** Redis commands per call, with the shared history on and off. */
async function redisOps(upstream: string, url: string): Promise<RedisFigures> {
  const probe = await RedisProbe.open(url);
  const calls = 2_000;
  const run = async (adaptive: boolean): Promise<RedisFigures["on"]> => {
    const prefix = `mcp-gateway-bench:adaptive-${process.pid}-${adaptive ? "on" : "off"}:`;
    const gw = await gateway(`redis-${adaptive ? "on" : "off"}`, upstream, {
      store: url,
      storePrefix: prefix,
      adaptive,
    });
    const client = new McpClient(gw.url, 16);
    try {
      // Settle: the gateway's start-up traffic (registration, handoff subscription) is not per call.
      await client.callTool("fast_tool", { delayMs: 0 });
      await sleep(1_500);
      const before = await probe.quiescent(600, 60_000);
      const t0 = performance.now();
      await forEachLimit(calls, 16, async (i) => {
        await client.callTool(`fast_tool_${i % 8}`, { delayMs: 0 });
      });
      const seconds = (performance.now() - t0) / 1000;
      // The last exchange (at most one sync interval later).
      await sleep(1_500);
      const after = await probe.snapshot();
      const commands = diffCalls(after.calls, before.calls);
      // The renewal loop and registration are timers, not per call: left out.
      for (const k of Object.keys(commands)) if (k.startsWith("evalsha") === false && k !== "eval") delete commands[k];
      const total = Object.values(commands).reduce((s, n) => s + n, 0);
      return { commands, perCall: total / calls, seconds };
    } finally {
      await client.close();
      gw.child.kill("SIGKILL");
      await probe.deletePrefix(prefix);
    }
  };
  const off = await run(false);
  const on = await run(true);
  return { calls, on, off };
}

async function main(): Promise<void> {
  installCleanup();
  setChildLifetime(600);
  const upstream = await startLegacyUpstream();
  try {
    const handle = await handleTimes(upstream.url);
    const polls = pollLoad();
    const redis = await redisOps(upstream.url, values.store);
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(join(OUT_DIR, "adaptive-results.json"), `${JSON.stringify({ handle, polls, redis }, null, 2)}\n`);
    const out: string[] = [];
    out.push("Time to the task handle, 10 s tool, threshold 5 s (ms)");
    out.push(
      renderTextTable(
        ["", "calls", "p50", "p99 / max"],
        [
          ["plain fast call (round trip)", "200", ms(handle.roundTripMs.p50), ms(handle.roundTripMs.p99)],
          [
            "warm-up (the threshold)",
            String(handle.warmup.calls),
            ms(quantile(handle.warmup.handleMs, 0.5)),
            ms(Math.max(...handle.warmup.handleMs)),
          ],
          [
            "after warm-up (at once)",
            String(handle.after.calls),
            ms(handle.after.p50),
            `${ms(handle.after.p99)} / ${ms(handle.after.max)}`,
          ],
        ],
      ),
    );
    out.push(`poll hint on the handles after warm-up: ${handle.after.pollIntervalMs.join(", ")} ms`);
    out.push("");
    out.push("tasks/get per task: adaptive hint vs fixed 1 s (threshold 1 s)");
    out.push(
      renderTextTable(
        ["tool", "promoted", "hint ms", "polls (hint)", "polls (1 s)", "lag (hint)", "lag (1 s)"],
        polls.rows.map((r) => [
          r.tool,
          r.promoted,
          String(r.hintMs),
          String(r.pollsAdaptive),
          String(r.pollsFixed),
          ms(r.lagAdaptiveMs),
          ms(r.lagFixedMs),
        ]),
      ),
    );
    out.push(
      `mix of 100 + 100 tasks: ${polls.mix.perHourAdaptive} tasks/get with hints vs ${polls.mix.perHourFixed} at 1 s (${(polls.mix.saved * 100).toFixed(1)} % fewer)`,
    );
    out.push("");
    out.push(`Redis scripts per tools/call (${redis.calls} fast calls, c=16)`);
    out.push(
      renderTextTable(
        ["tasks.adaptive", "EVALSHA/EVAL", "per call", "run s"],
        [
          ["false", JSON.stringify(redis.off.commands), redis.off.perCall.toFixed(4), redis.off.seconds.toFixed(1)],
          ["true", JSON.stringify(redis.on.commands), redis.on.perCall.toFixed(4), redis.on.seconds.toFixed(1)],
        ],
      ),
    );
    process.stdout.write(`${out.join("\n")}\n`);
  } finally {
    await stopAll();
  }
}

await main();
