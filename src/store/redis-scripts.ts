// The Lua scripts of the Redis store. Each one touches the keys of ONE slot only
// (a task's keys, or the counters; see redis-keys.ts), all of them passed in KEYS,
// so each runs atomically on a single Redis and on a cluster alike. They return
// only strings and integers, so RESP2 and RESP3 clients read the same replies.
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { TERMINAL } from "./task-store.js";

/** A script run by EVALSHA, falling back to EVAL (which caches it) when the server does not know it yet. */
export class LuaScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  async run(client: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return await client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

const isTerminalLua = [...TERMINAL].map((s) => `status == '${s}'`).join(" or ");

/**
 * Grace (ms) added to the TTL of the counter keys beyond their last entry, so a
 * replica clock slightly behind Redis's cannot make a counter vanish early.
 */
const COUNTER_GRACE_MS = 60_000;

/** Extends a key's TTL to reach `untilMs` (plus the grace), never shortens it. Needs `now` in scope. */
const KEEP_LUA = `
local function keep(key, untilMs)
  local want = untilMs + ${COUNTER_GRACE_MS} - now
  if want > 0 and redis.call('PTTL', key) < want then redis.call('PEXPIRE', key, want) end
end`;

/**
 * Drops the expiry buckets that ended (every task in them has expired) and takes
 * their counts off the totals. Expects `now` in scope.
 */
const PRUNE_LUA = `
local function prune(usage, buckets)
  local ended = redis.call('ZRANGEBYSCORE', buckets, '-inf', now)
  for _, b in ipairs(ended) do
    local v = redis.call('HMGET', usage, 'b:' .. b, 'n:' .. b)
    local bytes, tasks = tonumber(v[1]) or 0, tonumber(v[2]) or 0
    if bytes ~= 0 then redis.call('HINCRBY', usage, 'bytes', -bytes) end
    if tasks ~= 0 then redis.call('HINCRBY', usage, 'tasks', -tasks) end
    redis.call('HDEL', usage, 'b:' .. b, 'n:' .. b)
  end
  if #ended > 0 then redis.call('ZREMRANGEBYSCORE', buckets, '-inf', now) end
end`;

/**
 * Writes a new task. KEYS: task [, lease]. ARGV: owner, status, json, size, exp, bucket, ttlMs [, replicaId, leaseMs].
 * Returns 1, or 0 (and writes nothing) if the key exists. The TTL is Redis's own,
 * counted from now; HSET on an existing hash (updates) keeps it. With a lease key,
 * the creating replica's lease is taken in the same step: a task is never visible
 * unleased, so no replica can take it for orphaned.
 */
export const CREATE_TASK = new LuaScript(
  "createTask",
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'status', ARGV[2], 'json', ARGV[3], 'size', ARGV[4], 'exp', ARGV[5], 'bucket', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if KEYS[2] then redis.call('SET', KEYS[2], ARGV[8], 'PX', ARGV[9]) end
return 1
`,
);

/**
 * Who runs a task: its lease holder, if the task exists and is unfinished.
 * KEYS: task, lease. Returns the replica id, or false.
 */
export const RUNNER = new LuaScript(
  "runner",
  `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or ${isTerminalLua} then return false end
return redis.call('GET', KEYS[2])
`,
);

/** Gives a lease up if it is this replica's. KEYS: lease. ARGV: replicaId. */
export const RELEASE_LEASE = new LuaScript(
  "releaseLease",
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
`,
);

/**
 * Takes a lease: one this replica holds (a renewal: `from` is itself), one handed
 * on by `from`, or a lapsed one. KEYS: task, lease. ARGV: replicaId, from, leaseMs.
 * Returns 1 when the lease is (again) this replica's; 0 when the task is gone or
 * finished, or a third replica holds it.
 */
export const ADOPT_LEASE = new LuaScript(
  "adoptLease",
  `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or ${isTerminalLua} then return 0 end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[2] and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return 1
`,
);

/**
 * Ends an unfinished task whose lease lapsed, atomically. KEYS: task, lease.
 * ARGV: status, json, size. Returns {'gone'}, {'final'} (already terminal),
 * {'held'} (the lease is held: its replica is alive), or {'ok', oldSize, bucket, owner}.
 */
export const END_LAPSED = new LuaScript(
  "endLapsed",
  `
local cur = redis.call('HMGET', KEYS[1], 'status', 'size', 'bucket', 'owner')
local status = cur[1]
if not status then return {'gone'} end
if ${isTerminalLua} then return {'final'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'held'} end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'json', ARGV[2], 'size', ARGV[3])
return {'ok', cur[2] or '0', cur[3] or '0', cur[4] or ''}
`,
);

/**
 * Admits a new task against the limits, or refuses it; atomic, so concurrent
 * creates on any number of replicas can never over-admit.
 * KEYS: unfinished, owner, usage, buckets.
 * ARGV: id, exp, now, size, maxTasks, maxTasksPerCaller, maxBytes, bucket (its end, ms), counted ('1': unfinished).
 * Returns 'ok', 'max_tasks', 'max_tasks_per_caller' or 'store_full'.
 */
export const ADMIT = new LuaScript(
  "admit",
  `
local id, exp, now, size = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local counted = ARGV[9] == '1'
${KEEP_LUA}
${PRUNE_LUA}
prune(KEYS[3], KEYS[4])
if counted then
  -- Tasks that expired while unfinished stop counting by themselves.
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[3])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then return 'max_tasks' end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return 'max_tasks_per_caller' end
end
if (tonumber(redis.call('HGET', KEYS[3], 'bytes')) or 0) + size > tonumber(ARGV[7]) then return 'store_full' end
if counted then
  redis.call('ZADD', KEYS[1], ARGV[2], id)
  redis.call('ZADD', KEYS[2], ARGV[2], id)
  keep(KEYS[1], exp)
  keep(KEYS[2], exp)
end
redis.call('HINCRBY', KEYS[3], 'b:' .. ARGV[8], ARGV[4])
redis.call('HINCRBY', KEYS[3], 'n:' .. ARGV[8], 1)
redis.call('HINCRBY', KEYS[3], 'bytes', ARGV[4])
redis.call('HINCRBY', KEYS[3], 'tasks', 1)
redis.call('ZADD', KEYS[4], ARGV[8], ARGV[8])
keep(KEYS[3], tonumber(ARGV[8]))
keep(KEYS[4], tonumber(ARGV[8]))
return 'ok'
`,
);

/**
 * Replaces a task that is not terminal yet. KEYS: task [, lease]. ARGV: owner, status, json, size, tooLarge ('1').
 * A write that makes the task terminal also drops its lease (nothing is left to run).
 * Returns {'gone'} (no such task), {'final'} (terminal: unchanged), or
 * {'ok' | 'dropped', oldStatus, oldSize, bucket, oldOwner}: 'ok' written (the key
 * keeps its TTL), 'dropped' deleted because the new version is too large to keep.
 */
export const UPDATE_TASK = new LuaScript(
  "updateTask",
  `
local cur = redis.call('HMGET', KEYS[1], 'status', 'size', 'bucket', 'owner')
local status = cur[1]
if not status then return {'gone'} end
if ${isTerminalLua} then return {'final'} end
local reply = {'ok', status, cur[2] or '0', cur[3] or '0', cur[4] or ''}
if ARGV[5] == '1' then
  redis.call('DEL', KEYS[1])
  if KEYS[2] then redis.call('DEL', KEYS[2]) end
  reply[1] = 'dropped'
  return reply
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'status', ARGV[2], 'json', ARGV[3], 'size', ARGV[4])
if KEYS[2] and ARGV[6] == '1' then redis.call('DEL', KEYS[2]) end
return reply
`,
);

/**
 * Counter follow-up of a write (or a rollback of an admission).
 * KEYS: unfinished, owner, usage [, leases]. ARGV: id, leaves ('1': no longer unfinished), bucket, bytesDelta, tasksDelta.
 * A bucket that already ended (all its tasks expired, counts pruned) is left alone.
 */
export const SETTLE = new LuaScript(
  "settle",
  `
if ARGV[2] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  if KEYS[4] then redis.call('ZREM', KEYS[4], ARGV[1]) end
end
if redis.call('HEXISTS', KEYS[3], 'b:' .. ARGV[3]) == 1 then
  if ARGV[4] ~= '0' then
    redis.call('HINCRBY', KEYS[3], 'b:' .. ARGV[3], ARGV[4])
    redis.call('HINCRBY', KEYS[3], 'bytes', ARGV[4])
  end
  if ARGV[5] ~= '0' then
    redis.call('HINCRBY', KEYS[3], 'n:' .. ARGV[3], ARGV[5])
    redis.call('HINCRBY', KEYS[3], 'tasks', ARGV[5])
  end
end
return 1
`,
);

/** KEYS: unfinished, usage, buckets. ARGV: now. Returns {tasks, bytes, unfinished}, expired ones pruned first. */
export const STATS = new LuaScript(
  "stats",
  `
local now = tonumber(ARGV[1])
${PRUNE_LUA}
prune(KEYS[2], KEYS[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
local u = redis.call('HMGET', KEYS[2], 'tasks', 'bytes')
return {tonumber(u[1]) or 0, tonumber(u[2]) or 0, redis.call('ZCARD', KEYS[1])}
`,
);
