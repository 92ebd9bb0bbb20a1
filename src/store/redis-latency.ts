// LatencyShare on Redis: the latency history of adaptive promotion, shared by every
// replica that uses the same prefix in front of the same upstream.
//
// Keys (one hash tag, so the one script touches one slot, on a cluster too):
//   ${prefix}{latency:<scope>}:h    HASH tool -> "samples|bucket:weight,bucket:weight,…" (sparse)
//   ${prefix}{latency:<scope>}:lru  ZSET tool -> last exchange that wrote or read it (ms)
// <scope> is a short digest of the upstream URL: replicas in front of different
// upstreams never mix their histories, even with one prefix.
//
// Bounded: after every exchange the least recently used tools beyond `maxTools` are
// dropped (ZPOPMIN + HDEL), so random tool names cannot grow Redis either. Both keys
// expire `ttlMs` after the last write (a history nobody uses goes away by itself).
//
// Cost: one EVALSHA per exchange, whatever the number of tools in it. The caller
// (LatencyHistory) batches: it exchanges at most once per sync interval, and only
// when it has samples to send or tools to refresh, so the Redis operations per call
// are (exchanges per second) / (calls per second) — nothing on a call's own path.
import { createHash } from "node:crypto";
import type { RedisClient } from "./redis-connect.js";
import { LuaScript } from "./redis-scripts.js";
import type { LatencyDelta, LatencyShare, LatencyState } from "./latency-share.js";

/**
 * KEYS: hash, lru. ARGV: now, maxTools, ttlMs, nWrites, then per write: tool,
 * added, scale, sparse delta; then the tools to read. Returns tool, encoded state
 * pairs (strings only: RESP2 and RESP3 read the same).
 */
const LATENCY_EXCHANGE = new LuaScript(
  "latency-exchange",
  `
local now = tonumber(ARGV[1])
local maxTools = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local nWrites = tonumber(ARGV[4])
local out = {}
local i = 5
for _ = 1, nWrites do
  local tool, added, scale, delta = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3]
  i = i + 4
  local n, w = 0, {}
  local cur = redis.call('HGET', KEYS[1], tool)
  if cur then
    local bar = string.find(cur, '|', 1, true)
    n = tonumber(string.sub(cur, 1, bar - 1)) or 0
    for b, v in string.gmatch(string.sub(cur, bar + 1), '(%d+):([^,]+)') do
      w[tonumber(b)] = tonumber(v) * scale
    end
  end
  for b, v in string.gmatch(delta, '(%d+):([^,]+)') do
    b = tonumber(b)
    w[b] = (w[b] or 0) + tonumber(v)
  end
  local parts = {}
  for b, v in pairs(w) do
    if v >= 1e-6 then parts[#parts + 1] = b .. ':' .. string.format('%.6g', v) end
  end
  local enc = string.format('%d', n + added) .. '|' .. table.concat(parts, ',')
  redis.call('HSET', KEYS[1], tool, enc)
  redis.call('ZADD', KEYS[2], now, tool)
  out[#out + 1] = tool
  out[#out + 1] = enc
end
for j = i, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[j])
  if v then
    redis.call('ZADD', KEYS[2], now, ARGV[j])
    out[#out + 1] = ARGV[j]
    out[#out + 1] = v
  end
end
local excess = redis.call('ZCARD', KEYS[2]) - maxTools
if excess > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], excess)
  for k = 1, #popped, 2 do redis.call('HDEL', KEYS[1], popped[k]) end
end
if nWrites > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return out
`,
);

export interface RedisLatencyOptions {
  client: RedisClient;
  prefix: string;
  /** The upstream the history is about (its URL); replicas in front of another upstream keep another history. */
  upstream: string;
  /** Most tools kept in Redis (least recently used go first). */
  maxTools: number;
  /** The history expires this long after its last write. Default 7 days. */
  ttlMs?: number;
  now: () => number;
}

/** "1:0.8,5:1" (only buckets with weight), the wire form of a dense vector. */
function encodeSparse(weights: ArrayLike<number>): string {
  const parts: string[] = [];
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i] ?? 0;
    if (w >= 1e-6) parts.push(`${i}:${w.toPrecision(6)}`);
  }
  return parts.join(",");
}

/** "samples|bucket:weight,…" back to a dense state of `buckets` entries (buckets beyond it are dropped). */
export function decodeState(encoded: string, buckets: number): LatencyState | undefined {
  const bar = encoded.indexOf("|");
  if (bar < 0) return undefined;
  const samples = Number(encoded.slice(0, bar));
  if (!Number.isFinite(samples)) return undefined;
  const weights = new Array<number>(buckets).fill(0);
  for (const part of encoded.slice(bar + 1).split(",")) {
    if (part === "") continue;
    const colon = part.indexOf(":");
    const b = Number(part.slice(0, colon));
    const w = Number(part.slice(colon + 1));
    if (Number.isInteger(b) && b >= 0 && b < buckets && Number.isFinite(w)) weights[b] = w;
  }
  return { samples, weights };
}

export function latencyKeys(prefix: string, upstream: string): { hash: string; lru: string } {
  const scope = createHash("sha256").update(upstream).digest("base64url").slice(0, 12);
  const base = `${prefix}{latency:${scope}}:`;
  return { hash: `${base}h`, lru: `${base}lru` };
}

export class RedisLatencyShare implements LatencyShare {
  private readonly keys: { hash: string; lru: string };
  private readonly ttlMs: number;

  constructor(private readonly opts: RedisLatencyOptions) {
    this.keys = latencyKeys(opts.prefix, opts.upstream);
    this.ttlMs = opts.ttlMs ?? 7 * 86_400_000;
  }

  async exchange(
    writes: readonly LatencyDelta[],
    reads: readonly string[],
    buckets: number,
  ): Promise<Map<string, LatencyState>> {
    const out = new Map<string, LatencyState>();
    if (writes.length === 0 && reads.length === 0) return out;
    const args: Array<string | number> = [Math.floor(this.opts.now()), this.opts.maxTools, this.ttlMs, writes.length];
    for (const w of writes) args.push(w.tool, w.added, w.scale.toPrecision(12), encodeSparse(w.delta));
    const written = new Set(writes.map((w) => w.tool));
    for (const tool of reads) if (!written.has(tool)) args.push(tool);
    const reply = await LATENCY_EXCHANGE.run(this.opts.client, [this.keys.hash, this.keys.lru], args);
    if (!Array.isArray(reply)) return out;
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const state = decodeState(String(reply[i + 1]), buckets);
      if (state) out.set(String(reply[i]), state);
    }
    return out;
  }
}
