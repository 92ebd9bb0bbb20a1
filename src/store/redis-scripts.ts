// The Lua scripts of the Redis store. Each one touches the keys of ONE slot only
// (a task's keys, or the counters; see redis-keys.ts), all of them passed in KEYS,
// so each runs atomically on a single Redis and on a cluster alike. They return
// only strings and integers, so RESP2 and RESP3 clients read the same replies.
import { createHash } from "node:crypto";
import type { RedisClient } from "./redis-connect.js";
import { FINISH_RESERVE_BYTES } from "./task-bytes.js";
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

  async run(client: RedisClient, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
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

/** Most expired tasks one script takes off the counts (the rest go in the next ones; the buckets bound the totals meanwhile). */
const PRUNE_BATCH = 100;

/**
 * The counts of every task, for the scripts on the counters' slot. Expects in
 * scope: `now`, `C` (the counters' key prefix, RedisKeys.counters) and the eight
 * counter keys in KEYS order: UNF (unfinished), USAGE, BUCKETS, INFO, EXP
 * (expiries), FIN (finished), QUOTA, LEASES. An owner's own keys are built from C.
 *
 * A task is counted once (INFO: `size:bucket:status:owner`): its bytes in its
 * expiry bucket (USAGE) and for its owner (QUOTA `b:`); an unfinished one also in
 * UNF, its owner's ZSET and the unfinished bytes (QUOTA `ub`, `u:`); a finished
 * one in FIN and its owner's `ofin:` ZSET, scored by last use. Expired tasks
 * leave all of it (forget), at most PRUNE_BATCH per script.
 */
const COUNTS_LUA = `
local UNF, USAGE, BUCKETS, INFO, EXP, FIN, QUOTA, LEASES = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local RESERVE = ${FINISH_RESERVE_BYTES}
${KEEP_LUA}
${PRUNE_LUA}
local function ownerKey(o) return C .. 'owner:' .. o end
local function ofinKey(o) return C .. 'ofin:' .. o end
local function unfinished(status) return not (${isTerminalLua}) end
local function num(v) return tonumber(v) or 0 end
local function qget(field) return num(redis.call('HGET', QUOTA, field)) end
local function qadd(field, delta)
  if delta == 0 then return end
  if redis.call('HINCRBY', QUOTA, field, delta) <= 0 then redis.call('HDEL', QUOTA, field) end
end
local function parse(v)
  local size, bucket, status, owner = string.match(v, '^(%d+):(%d+):([%a_]+):(.*)$')
  return tonumber(size), bucket, status, owner
end
-- A bucket that already ended (its tasks expired, its counts pruned) is left alone.
local function unbucket(bucket, bytes, tasks)
  if redis.call('HEXISTS', USAGE, 'b:' .. bucket) == 0 then return end
  if bytes ~= 0 then
    redis.call('HINCRBY', USAGE, 'b:' .. bucket, bytes)
    redis.call('HINCRBY', USAGE, 'bytes', bytes)
  end
  if tasks ~= 0 then
    redis.call('HINCRBY', USAGE, 'n:' .. bucket, tasks)
    redis.call('HINCRBY', USAGE, 'tasks', tasks)
  end
end
-- Takes a task off every count. Returns its size, owner and status (nil if it was not counted).
local function forget(id)
  redis.call('ZREM', EXP, id)
  redis.call('ZREM', FIN, id)
  local v = redis.call('HGET', INFO, id)
  if not v then return nil end
  redis.call('HDEL', INFO, id)
  local size, bucket, status, owner = parse(v)
  qadd('b:' .. owner, -size)
  if unfinished(status) then
    qadd('ub', -size)
    qadd('u:' .. owner, -size)
    redis.call('ZREM', UNF, id)
    redis.call('ZREM', ownerKey(owner), id)
    redis.call('ZREM', LEASES, id)
  else
    redis.call('ZREM', ofinKey(owner), id)
  end
  unbucket(bucket, -size, -1)
  return size, owner, status
end
local function pruneAll()
  prune(USAGE, BUCKETS)
  local ids = redis.call('ZRANGEBYSCORE', EXP, '-inf', '(' .. now, 'LIMIT', 0, ${PRUNE_BATCH})
  for _, id in ipairs(ids) do forget(id) end
end
local evicted = {}
-- Evicts the least recently used task of a finished-task ZSET. False when it holds none.
local function evictOne(zset)
  local id = redis.call('ZRANGE', zset, 0, 0)[1]
  if not id then return false end
  redis.call('ZREM', zset, id)
  local v = redis.call('HGET', INFO, id)
  -- Never an unfinished task (none is in a finished ZSET; this guards against a stray entry).
  if v then
    local _, _, status = parse(v)
    if not unfinished(status) then
      local _, owner = forget(id)
      evicted[#evicted + 1] = id
      evicted[#evicted + 1] = owner
      evicted[#evicted + 1] = status
    end
  end
  return true
end
-- Evicts finished tasks until grow more bytes of owner's fit: its own (least recently used first) while its
-- quota needs room, then anyone's while the budget does. Returns the refusal when finished tasks run out.
local function makeRoom(owner, grow, maxBytes, maxPerCaller)
  if grow <= 0 then return nil end
  while qget('b:' .. owner) + grow > maxPerCaller do
    if not evictOne(ofinKey(owner)) then return 'max_bytes_per_caller' end
  end
  while num(redis.call('HGET', USAGE, 'bytes')) + grow > maxBytes do
    if not evictOne(FIN) then return 'store_full' end
  end
  return nil
end
local function reply(head)
  local out = {head}
  for _, v in ipairs(evicted) do out[#out + 1] = v end
  return out
end
-- Every counter key lives as long as its longest-lived entry (plus the grace): the keys just written to.
local function keepAll(keys, exp)
  for _, key in ipairs(keys) do keep(key, exp) end
end`;

/**
 * Admits a new task against the limits and the byte budgets, or refuses it;
 * atomic, so concurrent creates on any number of replicas can never over-admit.
 * Room is made by evicting finished tasks only (COUNTS_LUA makeRoom); an
 * unfinished task needs its bytes and FINISH_RESERVE_BYTES beside every other
 * unfinished task's, within maxBytes and (its owner's) within maxBytesPerCaller.
 * KEYS: the eight counter keys (COUNTS_LUA).
 * ARGV: C, now, id, owner, status, size, exp, bucket (its end, ms), maxTasks, maxTasksPerCaller, maxBytes, maxBytesPerCaller.
 * Returns {outcome, evicted...}: outcome 'ok', 'max_tasks', 'max_tasks_per_caller', 'store_full' or
 * 'max_bytes_per_caller'; evicted as (id, owner, status) triples, whose task keys the caller deletes.
 */
export const ADMIT = new LuaScript(
  "admit",
  `
local C, now = ARGV[1], tonumber(ARGV[2])
${COUNTS_LUA}
local id, owner, status, size, exp, bucket = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local maxBytes, maxPerCaller = tonumber(ARGV[11]), tonumber(ARGV[12])
local counted = unfinished(status)
local mine = ownerKey(owner)
pruneAll()
if counted then
  -- Tasks that expired while unfinished stop counting by themselves.
  redis.call('ZREMRANGEBYSCORE', UNF, '-inf', '(' .. ARGV[2])
  redis.call('ZREMRANGEBYSCORE', mine, '-inf', '(' .. ARGV[2])
  local n, mineN = redis.call('ZCARD', UNF), redis.call('ZCARD', mine)
  if n >= tonumber(ARGV[9]) then return {'max_tasks'} end
  if mineN >= tonumber(ARGV[10]) then return {'max_tasks_per_caller'} end
  if qget('ub') + RESERVE * (n + 1) + size > maxBytes then return {'store_full'} end
  if qget('u:' .. owner) + RESERVE * (mineN + 1) + size > maxPerCaller then return {'max_bytes_per_caller'} end
else
  if qget('ub') + size > maxBytes then return {'store_full'} end
  if qget('u:' .. owner) + size > maxPerCaller then return {'max_bytes_per_caller'} end
end
local refused = makeRoom(owner, size, maxBytes, maxPerCaller)
if refused then return reply(refused) end
if counted then
  redis.call('ZADD', UNF, exp, id)
  redis.call('ZADD', mine, exp, id)
  qadd('ub', size)
  qadd('u:' .. owner, size)
else
  redis.call('ZADD', FIN, now, id)
  redis.call('ZADD', ofinKey(owner), now, id)
end
qadd('b:' .. owner, size)
redis.call('HSET', INFO, id, size .. ':' .. bucket .. ':' .. status .. ':' .. owner)
redis.call('ZADD', EXP, exp, id)
redis.call('HINCRBY', USAGE, 'b:' .. bucket, size)
redis.call('HINCRBY', USAGE, 'n:' .. bucket, 1)
redis.call('HINCRBY', USAGE, 'bytes', size)
redis.call('HINCRBY', USAGE, 'tasks', 1)
redis.call('ZADD', BUCKETS, bucket, bucket)
keep(USAGE, tonumber(bucket))
keep(BUCKETS, tonumber(bucket))
if counted then keepAll({UNF, mine, INFO, EXP, QUOTA}, exp) else keepAll({FIN, ofinKey(owner), INFO, EXP, QUOTA}, exp) end
return reply('ok')
`,
);

/**
 * Counts a new version of an unfinished task BEFORE it is written (the task's
 * own key is in another slot): its size, and whether it finished. A version that
 * grows the task, or finishes it, is given room by evicting finished tasks; when
 * it cannot be, nothing changes and the reply is {'full'}.
 * KEYS: the eight counter keys (COUNTS_LUA). ARGV: C, now, id, size, status, maxBytes, maxBytesPerCaller,
 * force ('1': count it whatever the budgets say, without evicting: a failure that must be recorded).
 * Returns {'untracked'} (the counts do not hold it: nothing done, see SETTLE), {'finished'}
 * (counted as finished already, by a racing writer: nothing done), {'full'}, or
 * {'ok', evicted...} (triples, as ADMIT).
 */
export const RECOUNT = new LuaScript(
  "recount",
  `
local C, now = ARGV[1], tonumber(ARGV[2])
${COUNTS_LUA}
local id, size, status = ARGV[3], tonumber(ARGV[4]), ARGV[5]
local maxBytes, maxPerCaller = tonumber(ARGV[6]), tonumber(ARGV[7])
pruneAll()
local v = redis.call('HGET', INFO, id)
if not v then return {'untracked'} end
local old, bucket, oldStatus, owner = parse(v)
if not unfinished(oldStatus) then return {'finished'} end
local grow = size - old
local stays = unfinished(status)
if ARGV[8] ~= '1' then
  local ub, mineUb = qget('ub'), qget('u:' .. owner)
  if stays then
    if grow > 0 and (ub + grow + RESERVE * redis.call('ZCARD', UNF) > maxBytes
      or mineUb + grow + RESERVE * redis.call('ZCARD', ownerKey(owner)) > maxPerCaller) then return {'full'} end
  elseif ub - old + size > maxBytes or mineUb - old + size > maxPerCaller then
    return {'full'}
  end
  -- Finished tasks running out here means bytes these counts do not hold (they leave at their expiry).
  makeRoom(owner, grow, maxBytes, maxPerCaller)
end
qadd('b:' .. owner, grow)
unbucket(bucket, grow, 0)
if stays then
  qadd('ub', grow)
  qadd('u:' .. owner, grow)
else
  qadd('ub', -old)
  qadd('u:' .. owner, -old)
  redis.call('ZREM', UNF, id)
  redis.call('ZREM', ownerKey(owner), id)
  redis.call('ZREM', LEASES, id)
  -- Finishing is a use: the most recently used finished task.
  redis.call('ZADD', FIN, now, id)
  redis.call('ZADD', ofinKey(owner), now, id)
end
redis.call('HSET', INFO, id, size .. ':' .. bucket .. ':' .. status .. ':' .. owner)
if not stays then keepAll({FIN, ofinKey(owner), QUOTA}, tonumber(redis.call('ZSCORE', EXP, id)) or now) end
return reply('ok')
`,
);

/** Takes a task off every count (its key is gone, or its admission is undone). KEYS: the eight counter keys. ARGV: C, now, id. */
export const FORGET = new LuaScript(
  "forget",
  `
local C, now = ARGV[1], tonumber(ARGV[2])
${COUNTS_LUA}
forget(ARGV[3])
return 1
`,
);

/**
 * Replaces a task that is not terminal yet. KEYS: task [, lease].
 * ARGV: owner, status, json, size, growCheck ('1': do not write a version larger than the stored one), terminal ('1').
 * A write that makes the task terminal also drops its lease (nothing is left to run).
 * Returns {'gone'} (no such task), {'final'} (terminal: unchanged), or
 * {'ok' | 'grow', oldStatus, oldSize, bucket, oldOwner}: 'ok' written (the key
 * keeps its TTL); 'grow' not written, the new version being larger (the caller
 * counts it first, RECOUNT, then writes it without the check).
 */
export const UPDATE_TASK = new LuaScript(
  "updateTask",
  `
local cur = redis.call('HMGET', KEYS[1], 'status', 'size', 'bucket', 'owner')
local status = cur[1]
if not status then return {'gone'} end
if ${isTerminalLua} then return {'final'} end
local reply = {'ok', status, cur[2] or '0', cur[3] or '0', cur[4] or ''}
if ARGV[5] == '1' and tonumber(ARGV[4]) > (tonumber(cur[2]) or 0) then
  reply[1] = 'grow'
  return reply
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'status', ARGV[2], 'json', ARGV[3], 'size', ARGV[4])
if KEYS[2] and ARGV[6] == '1' then redis.call('DEL', KEYS[2]) end
return reply
`,
);

/**
 * Counter follow-up of a write to a task the counts do not hold (RECOUNT said
 * 'untracked': created before these counts existed, e.g. by an older replica).
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

/** KEYS: the eight counter keys (COUNTS_LUA). ARGV: C, now. Returns {tasks, bytes, unfinished}, expired ones pruned first. */
export const STATS = new LuaScript(
  "stats",
  `
local C, now = ARGV[1], tonumber(ARGV[2])
${COUNTS_LUA}
pruneAll()
redis.call('ZREMRANGEBYSCORE', UNF, '-inf', '(' .. ARGV[2])
local u = redis.call('HMGET', USAGE, 'tasks', 'bytes')
return {tonumber(u[1]) or 0, tonumber(u[2]) or 0, redis.call('ZCARD', UNF)}
`,
);
