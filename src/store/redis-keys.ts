// Where the Redis store keeps things. Every key of one task carries the task id
// as its hash tag (`{id}`), and every counter carries the tag `{counters}`, so on
// Redis Cluster a task's keys share one slot and the counters share another: each
// Lua script and MULTI touches one slot only, and the same code runs on a single
// Redis or a cluster. (If the prefix itself contains a `{...}` tag, everything
// lands in that one slot, which is still correct.)
//
// The scripts on the counters' slot also reach one owner's counters by name
// (`counters + "owner:" + owner`, `counters + "ofin:" + owner`), built inside the
// script for tasks of other owners (an expired task, an evicted one): every such
// key carries the `{counters}` tag, so it is in the slot the script runs on.

/** The hash tag of every counter key. */
const COUNTERS_TAG = "{counters}";

export interface RedisKeys {
  /** What every counter key starts with (the prefix and the `{counters}` tag); scripts build per-owner keys from it. */
  readonly counters: string;
  /** Hash of one task: owner, status, json (the tasks/get bytes), size, exp, bucket. Expires with the task. */
  task(taskId: string): string;
  /** ZSET of the unfinished tasks: member task id, score its expiry (ms). */
  readonly unfinished: string;
  /** ZSET of one owner's unfinished tasks, scored like `unfinished`. */
  owner(owner: string): string;
  /** Hash of the byte and task counts: `b:<end>` / `n:<end>` per expiry bucket, `bytes` / `tasks` totals. */
  readonly usage: string;
  /** ZSET of the live expiry buckets: member and score the bucket's end (ms). */
  readonly buckets: string;
  /** Hash of every counted task: member task id, value `size:bucket:status:owner` (what its counts are). */
  readonly info: string;
  /** ZSET of every counted task: member task id, score its expiry (ms); expired ones leave the counts exactly. */
  readonly expiries: string;
  /** ZSET of the finished tasks: member task id, score its last use (ms): the global eviction order (LRU). */
  readonly finished: string;
  /** ZSET of one owner's finished tasks, scored like `finished`: the eviction order within its quota. */
  ownerFinished(owner: string): string;
  /** Hash of the byte quotas: `ub` unfinished bytes overall; `b:<owner>` an owner's bytes, `u:<owner>` its unfinished bytes. */
  readonly quota: string;
  /** String: the replica id holding an unfinished task's lease; expires with the lease. In the task's slot. */
  lease(taskId: string): string;
  /** ZSET of leased unfinished tasks: member task id, score the lease's deadline (ms). Sweep candidates. */
  readonly leases: string;
  /** String: where a replica's internal listener is; expires unless the replica keeps renewing it. */
  replica(replicaId: string): string;
  /** String: a secret every replica agrees on (the MRTR requestState key). */
  secret(name: string): string;
  /** Pub/sub channel of one task's changes. */
  events(taskId: string): string;
  /** String: a handoff ticket waiting for a taker (short-lived). In the task's slot. */
  handoff(taskId: string): string;
  /** Pub/sub channel on which replicas offer tasks to each other. */
  readonly handoffs: string;
  /** String: an upstream credential entry (credentials/consent/: a sealed user grant, a state nonce, a client registration). */
  oauth(name: string): string;
}

export function redisKeys(prefix: string): RedisKeys {
  const counters = `${prefix}${COUNTERS_TAG}:`;
  return {
    counters,
    task: (taskId) => `${prefix}task:{${taskId}}`,
    unfinished: `${counters}unfinished`,
    owner: (owner) => `${counters}owner:${owner}`,
    usage: `${counters}usage`,
    buckets: `${counters}buckets`,
    info: `${counters}info`,
    expiries: `${counters}expiries`,
    finished: `${counters}finished`,
    ownerFinished: (owner) => `${counters}ofin:${owner}`,
    quota: `${counters}quota`,
    lease: (taskId) => `${prefix}lease:{${taskId}}`,
    leases: `${counters}leases`,
    replica: (replicaId) => `${prefix}replica:${replicaId}`,
    secret: (name) => `${prefix}secret:${name}`,
    events: (taskId) => `${prefix}events:{${taskId}}`,
    handoff: (taskId) => `${prefix}handoff:{${taskId}}`,
    handoffs: `${prefix}handoffs`,
    oauth: (name) => `${prefix}oauth:${name}`,
  };
}
