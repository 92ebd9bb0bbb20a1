// TaskStore on Redis (ioredis), shared by every replica and worker that uses the
// same prefix: any of them serves any task, and the limits hold over all of them.
//
// Keys (redis-keys.ts): a task is ONE hash `${prefix}task:{id}` (owner, status,
// json, size, exp, bucket) with Redis's own TTL, set at creation (PEXPIRE ttlMs)
// and never extended (HSET keeps a key's TTL). The counters all carry the hash tag
// `{counters}`: ZSET `unfinished` and one ZSET per owner (member task id, score its
// expiry), HASH `usage` (bytes and task counts per expiry bucket, and their totals)
// and ZSET `buckets` (the live buckets, by end time). Every script touches one slot
// only (the task's, or the counters'), so the same code runs on Redis Cluster.
//
// Round trips (what the caller waits for):
//   create  1: the task write (task slot) and the admission (counters slot) are sent
//              together, not one after the other; +1 when the admission refuses (the
//              written task key is deleted again); +1 with leases (the sweep
//              candidate: ZADD and its expiry, one pipeline); +1 when the admission
//              evicted finished tasks (their keys deleted). A task larger than the
//              whole budget (or the caller's quota) is refused without any.
//   get     1: HMGET owner status json (with leases, and GET of the lease, in one pipeline), read as
//              bytes: a poll writes the stored JSON as Redis sent it (getBytes).
//   update  1 for a version of an unfinished task no larger than the stored one:
//              the task script (checks the size), then the counts, sent right away
//              but not waited for. 2 for a version that finishes the task: the
//              counts first (room, the freed slot visible to every replica), then
//              the task script. 3 for an unfinished version that grew: the task
//              script says so without writing, the counts, the task script again.
//              +1 when finished tasks were evicted (their keys deleted).
//   get     +0: a get of a finished task is a use; uses are gathered and written as one
//              pipeline at most every TOUCH_EVERY_MS (and before this instance's next create, update or stats).
//   stats   1: one script on the counters.
//   ping    1: PING.
//
// What is atomic, and why it cannot over-admit: the admission is one Lua script on
// the counters' slot: it prunes the expired entries, checks maxTasks,
// maxTasksPerCaller and the byte budget, and adds the task to the counts, all at
// once, so concurrent creates on any number of replicas are admitted exactly up to
// the limits. A task's update is one Lua script on its own key: missing -> gone,
// terminal -> final (unchanged), else HSET (the TTL stays) -> ok, returning what it
// replaced, so the counters are settled right after by the one writer of that
// unfinished task. A task and its counters live in different slots and are never
// updated together; what a failure between the two halves leaves is bounded:
//   - the task key is written alongside the admission (nobody knows the new id
//     yet, so nobody can read it) and deleted again if it is refused; should the
//     process die in between, an orphan nobody can name expires at its TTL;
//   - a write whose counter follow-up is lost (crash, Redis away) leaves an
//     unfinished count too high (the slot frees itself at the task's expiry, ZSET
//     scores) or the bytes off by that write's size change (until its expiry
//     bucket ends). Nothing is counted twice as long as the client never re-sends
//     a command whose connection dropped, as a client from connectRedis does not
//     (a re-sent admission would add its bytes twice; its ZADDs are idempotent).
//
// Expiry and bytes: a task's bytes are added to the bucket of its expiry time
// (`bucketMs` wide, 1 min by default); a bucket leaves the totals when it ends, so
// bytes of expired tasks stop counting by themselves, at most one bucket width
// late (documented overcount). `stats().stored` is counted the same way: a cheap
// approximation that may include tasks expired within the last bucket width.
// Redis expires tasks on its own clock; the injected `now` only computes expiry
// timestamps (ZSET scores, buckets) and prunes the counters.
//
// Byte budgets (task-store.ts, "Fair use"), over every replica: the counters also
// hold every task's size, status and owner (HASH `info`), its expiry (ZSET
// `expiries`: expired tasks leave every count exactly, a batch per script), the
// bytes per owner and the unfinished bytes (HASH `quota`), and the finished tasks
// in a shared recency order: ZSET `finished` and one ZSET per owner, scored by
// last use (the time it finished, moved on by gets of it: gathered per instance
// and written with ZADD XX GT at most TOUCH_EVERY_MS later, not waited for). The admission script (create) and the recount
// script (an update that grows a task or finishes it, run BEFORE the write) make
// room by evicting from those ZSETs, lowest score first: the owner's own for its
// quota, anyone's for the global budget. Unfinished tasks are never evicted; a
// create that cannot be given room is refused, an update is "full". An evicted
// task leaves the counts inside the script; its key (another slot) is deleted by
// the replica that evicted it right after, and reported to onEvict there. Should
// that replica die in between, the key stays readable, uncounted, until its TTL.
// Run Redis with `maxmemory-policy noeviction`: every key here has a TTL, so under
// a volatile-* (or allkeys-*) policy Redis may evict a counter, which then undercounts.
//
// onEvict: Redis expires keys server-side and tells nobody (keyspace notifications
// are not used). For the unfinished tasks this instance created (the ones whose
// upstream call it runs), it keeps a timer at the task's expiry; when it fires and
// the key is gone, listeners hear "expired" with the last version this instance
// wrote. Tasks of other replicas, finished tasks, and keys evicted by Redis itself
// are not reported; the engine learns of those on its next update ("gone").
//
// Leases (option `lease`): the creating replica's lease is taken in the task's own
// create script, `get` reads the holder in the same round trip (StoredTask.runner:
// the id, or null once it lapsed), and a write that ends the task drops it.
// Renewal, the lapsed-lease path and handoffs are redis-leases.ts.
//
// The client belongs to the caller unless `ownsClient` is set: close() quits it
// only then. It is an ioredis `Redis` (a single node, or a Sentinel-managed primary) or
// `Cluster`: the same code runs on each (every pipeline stays within one slot).
//
// WAIT (option `wait`, tasks.redisWaitReplicas): a create, and an update that finishes a
// task, resolve only once that many replicas hold the task's write and the counters'
// (redis-wait.ts); a create not confirmed is undone and rejects, like a store that is away.
import { closeRedis, type RedisClient } from "./redis-connect.js";
import { redisKeys, type RedisKeys } from "./redis-keys.js";
import { ADMIT, CREATE_TASK, FORGET, RECOUNT, SETTLE, STATS, UPDATE_TASK } from "./redis-scripts.js";
import { taskBytes } from "./task-bytes.js";
import { ReplicaWait, type WaitSettings } from "./redis-wait.js";
import {
  storedFromJson,
  TERMINAL,
  type CreateLimits,
  type CreateOutcome,
  type CreateRefusal,
  type EvictedTask,
  type EvictionReason,
  type StoreStats,
  type StoredBytes,
  type StoredTask,
  type TaskStatus,
  type TaskStore,
  type UpdateOutcome,
} from "./task-store.js";

export interface RedisTaskStoreOptions {
  /** A connected ioredis client (see connectRedis in store-url.ts). */
  client: RedisClient;
  /** Prefix of every key; replicas that share tasks use the same one. */
  prefix: string;
  /** Byte budget over every replica (see taskBytes). */
  maxBytes: number;
  /** Most bytes one owner's tasks may take, over every replica (tasks.maxBytesPerCaller). Default: maxBytes. */
  maxBytesPerCaller?: number | undefined;
  now: () => number;
  /** Whether close() quits the client. Default false: the caller owns it. */
  ownsClient?: boolean;
  /** Width of the expiry buckets that count bytes (ms); bytes of expired tasks count at most this long. Default 60 s. */
  bucketMs?: number;
  /**
   * Leases (replicas sharing tasks): a task is created with `replicaId`'s lease of
   * `leaseMs`, `get` says who holds it (StoredTask.runner), and a write that ends
   * a task drops it. See redis-leases.ts for renewal and the lapsed-lease path.
   */
  lease?: { replicaId: string; leaseMs: number } | undefined;
  /**
   * Failures of bookkeeping that does not change an operation's outcome (a counter
   * follow-up, a rollback, an expiry check). The counters heal by themselves at the
   * tasks' expiry. Default: ignored.
   */
  onError?: (error: unknown) => void;
  /**
   * tasks.redisWaitReplicas: a create, and an update that finishes a task, resolve only once this many
   * replicas hold them (WAIT); otherwise they reject with NotReplicatedError (a create is undone first).
   */
  wait?: WaitSettings | undefined;
}

type EvictListener = (task: EvictedTask, reason: EvictionReason) => void;

/** An unfinished task this instance created, watched until it ends or expires. */
interface Watch {
  task: StoredTask;
  timer: NodeJS.Timeout | undefined;
}

const REFUSALS: ReadonlySet<string> = new Set<CreateRefusal>([
  "max_tasks",
  "max_tasks_per_caller",
  "store_full",
  "max_bytes_per_caller",
]);
const STATUSES: ReadonlySet<string> = new Set<TaskStatus>([
  "working",
  "input_required",
  "completed",
  "failed",
  "cancelled",
]);
/** setTimeout's ceiling; a longer TTL is re-armed when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Most time (ms) a use of a finished task (a get) waits to be written to the shared recency order. */
const TOUCH_EVERY_MS = 250;
/** How soon an expiry check that could not reach Redis is tried again. */
const EXPIRY_RETRY_MS = 1_000;

const isUnfinished = (status: TaskStatus): boolean => !TERMINAL.has(status);

export class RedisTaskStore implements TaskStore {
  private readonly client: RedisClient;
  private readonly keys: RedisKeys;
  private readonly maxBytes: number;
  private readonly maxBytesPerCaller: number;
  private readonly now: () => number;
  private readonly ownsClient: boolean;
  private readonly bucketMs: number;
  private readonly reportError: (error: unknown) => void;
  private readonly lease: RedisTaskStoreOptions["lease"];
  private readonly replicaWait: ReplicaWait | undefined;
  private readonly listeners: EvictListener[] = [];
  private readonly watched = new Map<string, Watch>();
  /** Counter follow-ups sent but not waited for; close() waits for them. */
  private readonly pending = new Set<Promise<void>>();
  /** Finished tasks read since the last flushTouches, with their owners. */
  private readonly touched = new Map<string, string>();
  private touchTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: RedisTaskStoreOptions) {
    this.client = options.client;
    this.keys = redisKeys(options.prefix);
    this.maxBytes = options.maxBytes;
    this.maxBytesPerCaller = Math.min(options.maxBytesPerCaller ?? options.maxBytes, options.maxBytes);
    this.now = options.now;
    this.ownsClient = options.ownsClient ?? false;
    this.bucketMs = options.bucketMs ?? 60_000;
    if (!(Number.isInteger(this.bucketMs) && this.bucketMs > 0)) throw new Error("bucketMs must be a positive integer");
    this.reportError = options.onError ?? (() => undefined);
    this.lease = options.lease;
    this.replicaWait =
      options.wait && options.wait.replicas > 0 ? new ReplicaWait(this.client, options.wait) : undefined;
  }

  /** The counter keys a write to a task the counts do not hold settles (the leases ZSET too, when tasks are leased). */
  private countersOf(owner: string): string[] {
    const counters = [this.keys.unfinished, this.keys.owner(owner), this.keys.usage];
    if (this.lease) counters.push(this.keys.leases);
    return counters;
  }

  /** The eight counter keys of the counting scripts (COUNTS_LUA in redis-scripts.ts), in their order. */
  private get countKeys(): string[] {
    const k = this.keys;
    return [k.unfinished, k.usage, k.buckets, k.info, k.expiries, k.finished, k.quota, k.leases];
  }

  async create(task: StoredTask, limits: CreateLimits): Promise<CreateOutcome> {
    this.flushTouches();
    const size = taskBytes(task);
    if (size > this.maxBytes) return { ok: false, refusal: "store_full" };
    if (size > this.maxBytesPerCaller) return { ok: false, refusal: "max_bytes_per_caller" };
    const { taskId, ttlMs } = task.record;
    const counted = isUnfinished(task.status);
    const now = this.now();
    const expiresAt = now + ttlMs;
    const bucket = (Math.floor(expiresAt / this.bucketMs) + 1) * this.bucketMs;
    const taskKey = this.keys.task(taskId);
    const lease = this.lease && counted ? this.lease : undefined;
    // Two slots, two scripts (and the lease's sweep entry), sent together: one round trip.
    const [written, admitted] = await Promise.allSettled([
      lease
        ? CREATE_TASK.run(
            this.client,
            [taskKey, this.keys.lease(taskId)],
            [task.owner, task.status, task.json, size, expiresAt, bucket, ttlMs, lease.replicaId, lease.leaseMs],
          )
        : CREATE_TASK.run(this.client, [taskKey], [task.owner, task.status, task.json, size, expiresAt, bucket, ttlMs]),
      ADMIT.run(this.client, this.countKeys, [
        this.keys.counters,
        now,
        taskId,
        task.owner,
        task.status,
        size,
        expiresAt,
        bucket,
        limits.maxTasks,
        limits.maxTasksPerCaller,
        this.maxBytes,
        this.maxBytesPerCaller,
      ]) as Promise<string[]>,
    ]);
    const wrote = written.status === "fulfilled" && written.value === 1;
    const [outcome = "", ...evicted] = admitted.status === "fulfilled" ? admitted.value : [];
    // Finished tasks evicted to make room (even for a create refused in the end) leave the store now.
    if (evicted.length > 0) await this.dropEvicted(evicted);
    const admittedOk = outcome === "ok";
    if (wrote && admittedOk) {
      if (counted) this.watch(taskId, task, expiresAt);
      // The sweep's candidate list lives at least as long as this task can (an orphan must be found even
      // after every replica was down); its expiry only moves later (NX for a new key, GT after that).
      if (lease) {
        const keepMs = ttlMs + lease.leaseMs * 4;
        await this.client
          .pipeline()
          .zadd(this.keys.leases, now + lease.leaseMs, taskId)
          .pexpire(this.keys.leases, keepMs, "NX")
          .pexpire(this.keys.leases, keepMs, "GT")
          .exec();
      }
      if (this.replicaWait) {
        try {
          await this.replicaWait.confirm([taskKey, this.keys.unfinished]);
        } catch (err) {
          // Not acknowledged: the task is undone, as far as the primary still takes writes.
          this.unwatch(taskId);
          await this.client.del(taskKey).catch(this.reportError);
          await this.forget(taskId).catch(this.reportError);
          throw err;
        }
      }
      return { ok: true };
    }
    // Undo whichever half landed.
    if (wrote) await this.client.del(taskKey).catch(this.reportError);
    if (admittedOk) await this.forget(taskId).catch(this.reportError);
    if (written.status === "rejected") throw written.reason;
    if (admitted.status === "rejected") throw admitted.reason;
    if (!wrote) throw new Error(`task ${taskId} is already stored`);
    if (!REFUSALS.has(outcome)) throw new Error(`unexpected admission reply from Redis: ${outcome}`);
    return { ok: false, refusal: outcome as CreateRefusal };
  }

  async get(taskId: string): Promise<StoredTask | undefined> {
    const task = await this.read(taskId);
    return task && storedFromJson(task.owner, task.status, task.bytes.toString("utf8"), task.runner);
  }

  /** The task as Redis sent it: a poll writes its tasks/get JSON without decoding it (endpoints/task-poll.ts). */
  getBytes(taskId: string): Promise<StoredBytes | undefined> {
    return this.read(taskId);
  }

  /**
   * One round trip: HMGET owner status json (with leases, and GET of the lease, in one pipeline, one slot). The
   * fields come as the Buffers ioredis parses them into; the JSON, the large one, is never turned into a string
   * here (decoding 1 KB and encoding it again for the answer cost a poll more than the rest of the read).
   */
  private async read(taskId: string): Promise<StoredBytes | undefined> {
    const key = this.keys.task(taskId);
    let fields: (Buffer | null)[];
    let holder: string | null = null;
    if (!this.lease) fields = await this.client.hmgetBuffer(key, "owner", "status", "json");
    else {
      const replies = await this.client
        .pipeline()
        .hmgetBuffer(key, "owner", "status", "json")
        .get(this.keys.lease(taskId))
        .exec();
      if (!replies) throw new Error("Redis answered no replies");
      const [[fieldsErr, read], [leaseErr, lease]] = replies as [
        [Error | null, (Buffer | null)[]],
        [Error | null, string | null],
      ];
      if (fieldsErr) throw fieldsErr;
      if (leaseErr) throw leaseErr;
      fields = read;
      holder = lease;
    }
    const [ownerBytes, statusBytes, bytes] = fields;
    if (ownerBytes == null || statusBytes == null || bytes == null) return undefined;
    const status = statusBytes.toString("utf8");
    if (!STATUSES.has(status)) return undefined;
    const owner = ownerBytes.toString("utf8");
    const runner = this.lease && isUnfinished(status as TaskStatus) ? (holder ?? null) : undefined;
    this.touch(taskId, owner, status as TaskStatus);
    return { owner, status: status as TaskStatus, bytes, runner };
  }

  async update(task: StoredTask): Promise<UpdateOutcome> {
    this.flushTouches();
    const taskId = task.record.taskId;
    const size = taskBytes(task);
    const finishing = !isUnfinished(task.status);
    if (size > this.maxBytes || size > this.maxBytesPerCaller) {
      // Never fits: "full", unless there is nothing to replace.
      const status = await this.client.hget(this.keys.task(taskId), "status");
      if (status == null) return this.ended(taskId, "gone");
      return TERMINAL.has(status as TaskStatus) ? this.ended(taskId, "final") : "full";
    }
    // A version that finishes the task is counted (and given room) before it is written.
    let counted: "ok" | "full" | "untracked" | undefined;
    if (finishing) {
      counted = await this.recount(taskId, size, task.status, false);
      if (counted === "full") return "full";
    }
    let reply = await this.write(task, size, !finishing);
    if (reply[0] === "grow") {
      // An unfinished version larger than the stored one: counted (and given room) first, then written.
      counted = await this.recount(taskId, size, task.status, false);
      if (counted === "full") return "full";
      reply = await this.write(task, size, false);
    }
    const [outcome, , oldSize = "0", bucket = "0", oldOwner = task.owner] = reply;
    if (outcome === "gone") {
      // Counted for a write that found no task: its counts go too.
      if (counted === "ok") await this.forget(taskId).catch(this.reportError);
      return this.ended(taskId, "gone");
    }
    // A finish is acknowledged once the replicas hold it; "final" too: it may be this writer's own earlier
    // write, whose confirmation failed, tried again.
    if (finishing && (outcome === "ok" || outcome === "final"))
      await this.replicaWait?.confirm([this.keys.task(taskId), this.keys.unfinished]);
    if (outcome === "final") return this.ended(taskId, "final");
    if (outcome !== "ok") throw new Error(`unexpected update reply from Redis: ${String(outcome)}`);
    const delta = size - Number(oldSize);
    if (finishing) this.unwatch(taskId);
    else {
      const watch = this.watched.get(taskId);
      if (watch) watch.task = task;
    }
    if (counted === undefined) {
      // Not larger than the stored version: counted after the write, not waited for.
      if (delta !== 0) this.background(this.recountAfter(task, size, oldOwner, bucket, delta));
    } else if (counted === "untracked") {
      // A task the counts do not hold (an older replica created it): its counters settled as they used to be.
      const settled = this.settle(this.countersOf(oldOwner), taskId, finishing, bucket, delta, 0);
      if (finishing) await settled.catch(this.reportError);
      else this.background(settled);
    }
    return "ok";
  }

  private async write(task: StoredTask, size: number, growCheck: boolean): Promise<string[]> {
    const taskId = task.record.taskId;
    return (await UPDATE_TASK.run(
      this.client,
      this.lease ? [this.keys.task(taskId), this.keys.lease(taskId)] : [this.keys.task(taskId)],
      [task.owner, task.status, task.json, size, growCheck ? 1 : 0, isUnfinished(task.status) ? 0 : 1],
    )) as string[];
  }

  /** A smaller (or equal) unfinished version was written: its counts follow. */
  private async recountAfter(
    task: StoredTask,
    size: number,
    oldOwner: string,
    bucket: string,
    delta: number,
  ): Promise<void> {
    const counted = await this.recount(task.record.taskId, size, task.status, true);
    if (counted === "untracked")
      await this.settle(this.countersOf(oldOwner), task.record.taskId, false, bucket, delta, 0);
  }

  private ended(taskId: string, outcome: "gone" | "final"): "gone" | "final" {
    this.unwatch(taskId);
    return outcome;
  }

  onEvict(listener: EvictListener): void {
    this.listeners.push(listener);
  }

  async stats(): Promise<StoreStats> {
    this.flushTouches();
    const reply = (await STATS.run(this.client, this.countKeys, [this.keys.counters, this.now()])) as number[];
    const [stored = 0, bytes = 0, unfinished = 0] = reply.map(Number);
    return { stored: Math.max(0, stored), bytes: Math.max(0, bytes), unfinished };
  }

  /** One PING: resolves when Redis answers, rejects with the client's error otherwise (fast while it is down). */
  async ping(): Promise<void> {
    const reply = await this.client.ping();
    if (reply !== "PONG") throw new Error(`unexpected PING reply from Redis: ${String(reply)}`);
  }

  async close(): Promise<void> {
    this.flushTouches();
    this.closed = true;
    for (const watch of this.watched.values()) clearTimeout(watch.timer);
    this.watched.clear();
    await Promise.allSettled([...this.pending]);
    if (this.ownsClient) await closeRedis(this.client);
  }

  private async settle(
    counters: string[],
    taskId: string,
    leaves: boolean,
    bucket: number | string,
    bytesDelta: number,
    tasksDelta: number,
  ): Promise<void> {
    await SETTLE.run(this.client, counters, [taskId, leaves ? 1 : 0, bucket, bytesDelta, tasksDelta]);
  }

  /** Takes a task off every count (its key is gone, or its admission is undone). */
  private async forget(taskId: string): Promise<void> {
    await FORGET.run(this.client, this.countKeys, [this.keys.counters, this.now(), taskId]);
  }

  /**
   * Counts a new version before it is written (RECOUNT): "full" when no room can
   * be made for it; finished tasks evicted to make room leave the store first.
   */
  private async recount(
    taskId: string,
    size: number,
    status: TaskStatus,
    force: boolean,
  ): Promise<"ok" | "full" | "untracked"> {
    const [outcome = "", ...evicted] = (await RECOUNT.run(this.client, this.countKeys, [
      this.keys.counters,
      this.now(),
      taskId,
      size,
      status,
      this.maxBytes,
      this.maxBytesPerCaller,
      force ? 1 : 0,
    ])) as string[];
    if (evicted.length > 0) await this.dropEvicted(evicted);
    // Counted as finished already (a racing writer ended it): nothing to count; the write says "final".
    if (outcome === "finished") return "ok";
    if (outcome !== "ok" && outcome !== "full" && outcome !== "untracked")
      throw new Error(`unexpected recount reply from Redis: ${outcome}`);
    return outcome;
  }

  /** Deletes the keys of tasks a script evicted (id, owner, status triples) and tells the listeners. */
  private async dropEvicted(triples: string[]): Promise<void> {
    const gone: EvictedTask[] = [];
    for (let i = 0; i + 2 < triples.length; i += 3) {
      gone.push({
        taskId: triples[i] as string,
        owner: triples[i + 1] as string,
        status: triples[i + 2] as TaskStatus,
      });
    }
    // One slot per task: separate commands (ioredis writes them back to back).
    await Promise.all(gone.map((t) => this.client.del(this.keys.task(t.taskId)).catch(this.reportError)));
    for (const task of gone) for (const listener of this.listeners) listener(task, "evicted");
  }

  /**
   * A get of a finished task is a use: it moves up the recency order. Uses are
   * gathered (one per task) and written together at most every TOUCH_EVERY_MS,
   * and before this instance's next create, update or stats, so a poll costs no
   * extra command of its own.
   */
  private touch(taskId: string, owner: string, status: TaskStatus): void {
    if (isUnfinished(status) || this.closed) return;
    this.touched.set(taskId, owner);
    if (this.touchTimer) return;
    this.touchTimer = setTimeout(() => this.flushTouches(), TOUCH_EVERY_MS);
    this.touchTimer.unref();
  }

  /** Writes the uses gathered so far: ZADD XX (only tasks still counted) GT (never back in time), one per ZSET. */
  private flushTouches(): void {
    clearTimeout(this.touchTimer);
    this.touchTimer = undefined;
    if (this.touched.size === 0) return;
    const now = this.now();
    const all: Array<string | number> = [];
    const byOwner = new Map<string, Array<string | number>>();
    for (const [taskId, owner] of this.touched) {
      all.push(now, taskId);
      let mine = byOwner.get(owner);
      if (!mine) byOwner.set(owner, (mine = []));
      mine.push(now, taskId);
    }
    this.touched.clear();
    // One slot (the counters'): one pipeline.
    const pipeline = this.client.pipeline().zadd(this.keys.finished, "XX", "GT", ...all);
    for (const [owner, entries] of byOwner) pipeline.zadd(this.keys.ownerFinished(owner), "XX", "GT", ...entries);
    this.background(pipeline.exec().then(() => undefined));
  }

  private background(work: Promise<void>): void {
    const tracked = work.catch(this.reportError).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  // ---- expiry of the unfinished tasks this instance created (onEvict) ----

  private watch(taskId: string, task: StoredTask, expiresAt: number): void {
    if (this.listeners.length === 0 || this.closed) return;
    const watch: Watch = { task, timer: undefined };
    this.watched.set(taskId, watch);
    this.arm(taskId, watch, expiresAt - this.now());
  }

  private unwatch(taskId: string): void {
    const watch = this.watched.get(taskId);
    if (!watch) return;
    clearTimeout(watch.timer);
    this.watched.delete(taskId);
  }

  private arm(taskId: string, watch: Watch, delayMs: number): void {
    watch.timer = setTimeout(
      () => void this.checkExpired(taskId, watch),
      Math.min(Math.max(delayMs + 1, 0), MAX_TIMER_MS),
    );
    watch.timer.unref();
  }

  private async checkExpired(taskId: string, watch: Watch): Promise<void> {
    let pttl: number;
    try {
      pttl = await this.client.pttl(this.keys.task(taskId));
    } catch (err) {
      this.reportError(err);
      if (this.watched.get(taskId) === watch) this.arm(taskId, watch, EXPIRY_RETRY_MS);
      return;
    }
    // Finished, or closed, while the check was under way.
    if (this.watched.get(taskId) !== watch) return;
    if (pttl >= 0) {
      // Redis's clock is behind ours: look again when Redis says it expires.
      this.arm(taskId, watch, pttl);
      return;
    }
    this.watched.delete(taskId);
    // -1: the key has no TTL (not written by this store): not ours to report.
    if (pttl !== -2) return;
    const { taskId: id, owner, status } = watch.task.record;
    for (const listener of this.listeners) listener({ taskId: id, owner, status }, "expired");
  }
}
