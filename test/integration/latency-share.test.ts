// Adaptive promotion's latency history shared through Redis (src/store/redis-latency.ts)
// between "replicas" (LatencyHistory instances on their own connections), on an
// injected clock and explicit flushes: what one learns the other uses, both feed one
// history, a speed-up spreads too, one EVALSHA per exchange whatever the number of
// tools, Redis stays bounded, random names never reach it, and a failed exchange
// loses no samples.
import { describe, expect, it, vi } from "vitest";
import { LatencyHistory, type AdaptiveSettings } from "../../src/tasks/latency-history.js";
import { decodeState, latencyKeys, RedisLatencyShare } from "../../src/store/redis-latency.js";
import type { LatencyShare } from "../../src/store/latency-share.js";
import { fileRedis } from "../helpers/redis.js";

const { redis, opened } = fileRedis();

const T0 = 1_767_225_600_000;
const THRESHOLD = 5_000;
const UPSTREAM = "http://upstream.example/mcp";
const DECISION = { thresholdMs: THRESHOLD, pollIntervalMs: 1_000 };

interface Replica {
  history: LatencyHistory;
  share: RedisLatencyShare;
  evalshas: () => number;
}

const settings = (): AdaptiveSettings => ({ enabled: true, minPollIntervalMs: 250, maxPollIntervalMs: 5_000 });

async function replica(prefix: string, clock: { t: number }, maxTools = 1_000): Promise<Replica> {
  const client = await redis.connect();
  const spy = vi.spyOn(client, "evalsha");
  const share = new RedisLatencyShare({ client, prefix, upstream: UPSTREAM, maxTools, now: () => clock.t });
  // syncMs 0: the test flushes by hand.
  const history = new LatencyHistory({ now: () => clock.t, settings: settings(), share, syncMs: 0 });
  opened.push(() => history.close());
  return { history, share, evalshas: () => spy.mock.calls.length };
}

/** `n` answered calls of `tool` taking `ms` each on the shared clock. */
function calls(r: Replica, clock: { t: number }, tool: string, n: number, ms: number): void {
  for (let i = 0; i < n; i++) {
    r.history.atOnce(tool, THRESHOLD);
    const timing = r.history.begin(tool, DECISION, false);
    clock.t += ms;
    timing?.answered();
  }
}

describe("the latency history shared through Redis", () => {
  it("what one replica learns, another uses after one exchange each", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, clock);
    const b = await replica(prefix, clock);
    calls(a, clock, "report", 6, 10_000);
    expect(a.history.atOnce("report", THRESHOLD)).toBe(true);
    await a.history.flush();
    // B has never seen the tool: the first lookup waits the threshold, and asks for the tool at the next exchange.
    expect(b.history.atOnce("report", THRESHOLD)).toBe(false);
    await b.history.flush();
    expect(b.history.atOnce("report", THRESHOLD)).toBe(true);
    expect(b.history.estimate("report", DECISION)).toMatchObject({ samples: 6, slowShare: 1 });
  });

  it("both replicas feed one history, and a speed-up seen on one ends promotion at once on the other", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, clock);
    const b = await replica(prefix, clock);
    calls(a, clock, "build", 3, 20_000);
    calls(b, clock, "build", 3, 20_000);
    // Neither has MIN_SAMPLES alone.
    expect(a.history.atOnce("build", THRESHOLD)).toBe(false);
    expect(b.history.atOnce("build", THRESHOLD)).toBe(false);
    await a.history.flush();
    await b.history.flush();
    // A replica refreshes the tools it was asked about since its last exchange (a call of "build" here).
    a.history.atOnce("build", THRESHOLD);
    await a.history.flush();
    expect(a.history.estimate("build", DECISION)?.samples).toBe(6);
    expect(b.history.estimate("build", DECISION)?.samples).toBe(6);
    expect(a.history.atOnce("build", THRESHOLD)).toBe(true);
    expect(b.history.atOnce("build", THRESHOLD)).toBe(true);
    // The upstream got faster; B sees it.
    calls(b, clock, "build", 4, 50);
    expect(b.history.atOnce("build", THRESHOLD)).toBe(false);
    await b.history.flush();
    expect(a.history.atOnce("build", THRESHOLD)).toBe(true);
    await a.history.flush();
    expect(a.history.atOnce("build", THRESHOLD)).toBe(false);
  });

  it("one EVALSHA per exchange, however many calls and tools it carries", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, clock);
    for (let tool = 0; tool < 20; tool++) calls(a, clock, `tool-${tool}`, 50, 100 + tool);
    const before = a.evalshas();
    await a.history.flush();
    expect(a.evalshas() - before).toBe(1);
    // Nothing new and nothing looked up: no exchange at all.
    await a.history.flush();
    expect(a.evalshas() - before).toBe(1);
    const stored = await redis.client.hgetall(latencyKeys(prefix, UPSTREAM).hash);
    expect(Object.keys(stored)).toHaveLength(20);
    expect(decodeState(stored["tool-3"] as string, 48)?.samples).toBe(50);
  });

  it("tools on probation (one call each, like random names) never reach Redis", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, clock);
    for (let i = 0; i < 500; i++) calls(a, clock, `random-${i}`, 1, 10);
    calls(a, clock, "real", 2, 10);
    await a.history.flush();
    const keys = latencyKeys(prefix, UPSTREAM);
    expect(await redis.client.hkeys(keys.hash)).toEqual(["real"]);
    expect(await redis.client.pttl(keys.hash)).toBeGreaterThan(86_400_000);
  });

  it("Redis keeps at most maxTools tools, the least recently used going first", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const a = await replica(prefix, clock, 30);
    for (let i = 0; i < 100; i++) {
      calls(a, clock, `t${i}`, 2, 10);
      if (i % 10 === 9) await a.history.flush();
    }
    const keys = latencyKeys(prefix, UPSTREAM);
    expect(await redis.client.hlen(keys.hash)).toBe(30);
    expect(await redis.client.zcard(keys.lru)).toBe(30);
    expect(await redis.client.hexists(keys.hash, "t99")).toBe(1);
    expect(await redis.client.hexists(keys.hash, "t0")).toBe(0);
  });

  it("a failed exchange loses no samples: they go with the next one, after those that came meanwhile", async () => {
    const clock = { t: T0 };
    const prefix = redis.freshPrefix();
    const client = await redis.connect();
    const real = new RedisLatencyShare({ client, prefix, upstream: UPSTREAM, maxTools: 100, now: () => clock.t });
    let fail = true;
    const flaky: LatencyShare = {
      exchange: (w, r, n) => (fail ? Promise.reject(new Error("connection lost")) : real.exchange(w, r, n)),
    };
    const errors: string[] = [];
    const history = new LatencyHistory({
      now: () => clock.t,
      settings: settings(),
      share: flaky,
      syncMs: 0,
      onShareError: (e) => errors.push(e.message),
    });
    const r: Replica = { history, share: real, evalshas: () => 0 };
    calls(r, clock, "job", 4, 30_000);
    await history.flush();
    await history.flush();
    // Told once per outage.
    expect(errors).toEqual(["connection lost"]);
    calls(r, clock, "job", 2, 30_000);
    fail = false;
    await history.flush();
    expect(history.stats(() => DECISION).sync).toMatchObject({ failed: 2, exchanges: 1, samplesSent: 6 });
    const stored = await client.hget(latencyKeys(prefix, UPSTREAM).hash, "job");
    expect(decodeState(stored ?? "", 48)?.samples).toBe(6);
    expect(history.estimate("job", DECISION)?.samples).toBe(6);
  });
});
