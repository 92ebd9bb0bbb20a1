// Rate-limit budgets in Redis, shared by every replica and worker: one Lua script takes every rule of a request
// in one round trip, atomically (all or none), on Redis's own clock (TIME), so replicas with skewed clocks
// still share one budget. Each key is a string holding its TAT (ms, Redis time) with a TTL that ends when
// the burst is full again: an idle key vanishes, and a missing key is a full burst.
//
// Every rate-limit key carries one hash tag, `{<storePrefix>rl}`: on Redis Cluster they all live in one slot,
// so a request that matches a global rule and a per-caller rule is still one script on one node, one round
// trip. The cost is that one node serves every rate-limit key of a deployment; the keys are tiny and each
// request is one short script, so that node saturates long after the gateway's own CPU does. Tagging by
// caller would spread them, but a global rule's key would then sit in another slot than the caller's keys
// and a request would need a script per slot.
import type { RedisClient } from "../store/redis-connect.js";
import { LuaScript } from "../store/redis-scripts.js";
import { GCRA_EPSILON_MS } from "./gcra.js";
import type { RateOutcome, RateStore, RateTake } from "./store.js";

/**
 * KEYS: one per rule. ARGV: intervalMs and burst per rule, in the keys' order. Returns four integers per
 * rule: allowed (1/0), remaining, retryAfterMs and resetMs (both rounded up). Mirrors gcra.ts.
 */
const TAKE = new LuaScript(
  "rateLimitTake",
  `
-- TIME before writes needs effects replication: the default since Redis 5, asked for explicitly before it.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local n = #KEYS
local froms, nexts = {}, {}
local out = {}
local allowed = true
for i = 1, n do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local stored = redis.call('GET', KEYS[i])
  local from = now
  if stored then
    local tat = tonumber(stored)
    if tat and tat > now then from = tat end
  end
  local nxt = from + interval
  local over = nxt - now - burst * interval
  froms[i], nexts[i] = from, nxt
  if over > ${GCRA_EPSILON_MS} then
    allowed = false
    out[4 * i - 3] = 0
    out[4 * i - 2] = 0
    out[4 * i - 1] = math.ceil(over)
    out[4 * i] = math.ceil(from - now)
  else
    local remaining = math.floor((burst * interval - (nxt - now)) / interval + ${GCRA_EPSILON_MS})
    if remaining < 0 then remaining = 0 end
    out[4 * i - 3] = 1
    out[4 * i - 2] = remaining
    out[4 * i - 1] = 0
    out[4 * i] = math.ceil(nxt - now)
  end
end
if allowed then
  for i = 1, n do
    local ttl = math.ceil(nexts[i] - now)
    if ttl < 1 then ttl = 1 end
    redis.call('SET', KEYS[i], string.format('%.17g', nexts[i]), 'PX', ttl)
  end
end
return out
`,
);

/**
 * How long a check waits for Redis before it counts as a store that is down (limits.onStoreDown): a Redis that
 * hangs rather than refusing must not hold every limited request for the connection's 10 s command timeout.
 */
const CHECK_TIMEOUT_MS = 1_000;

export class RedisRateStore implements RateStore {
  readonly shared = true;
  private readonly keyPrefix: string;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
    private readonly timeoutMs = CHECK_TIMEOUT_MS,
  ) {
    this.keyPrefix = `${prefix}{${prefix}rl}:`;
  }

  /** The Redis key of a budget (tests look at its TTL). */
  keyOf(key: string): string {
    return `${this.keyPrefix}${key}`;
  }

  async take(items: readonly RateTake[]): Promise<RateOutcome[]> {
    const keys = items.map((i) => this.keyOf(i.key));
    const args: number[] = [];
    for (const i of items) args.push(i.intervalMs, i.burst);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from Redis within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    let reply: number[];
    try {
      reply = (await Promise.race([TAKE.run(this.client, keys, args), late])) as number[];
    } finally {
      clearTimeout(timer);
    }
    return items.map((_, i) => ({
      allowed: reply[4 * i] === 1,
      remaining: Number(reply[4 * i + 1]),
      retryAfterMs: Number(reply[4 * i + 2]),
      resetMs: Number(reply[4 * i + 3]),
    }));
  }
}
