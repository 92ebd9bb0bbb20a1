// Leases on Redis: which replica runs each unfinished task, and the registry of
// where replicas can be reached. A lease is a key in the task's own slot holding
// the replica id, with Redis's TTL (PX) as the lease length: a replica that stops
// renewing (crash, kill -9, lost network) loses it by itself. Every check-and-set
// is one Lua script on that slot, so two replicas never both end or take a task.
//
// Round trips: renew 1 (one command per task, sent back to back, plus the sweep ZSET update);
// runner 1; lapsed 1; endLapsed 1 (+1 to settle the counters when it ended the
// task); adopt 1; register and addressOf 1.
import { randomBytes } from "node:crypto";
import type { RedisClient } from "./redis-connect.js";
import { redisKeys, type RedisKeys } from "./redis-keys.js";
import { ADOPT_LEASE, END_LAPSED, RECOUNT, RELEASE_LEASE, RUNNER, SETTLE } from "./redis-scripts.js";
import type { TaskLeases } from "./task-leases.js";
import { taskBytes } from "./task-bytes.js";
import type { StoredTask } from "./task-store.js";

export interface RedisLeasesOptions {
  client: RedisClient;
  prefix: string;
  leaseMs: number;
  now: () => number;
  /** This replica's id; default: 128 fresh random bits. */
  replicaId?: string;
}

export class RedisLeases implements TaskLeases {
  readonly replicaId: string;
  private readonly client: RedisClient;
  private readonly keys: RedisKeys;
  private readonly leaseMs: number;
  private readonly now: () => number;
  private registered: { address: string; timer: NodeJS.Timeout } | undefined;
  /** The shared secrets this replica uses, by name: written again with the registration if Redis lost them. */
  private readonly secrets = new Map<string, string>();

  constructor(options: RedisLeasesOptions) {
    this.client = options.client;
    this.keys = redisKeys(options.prefix);
    this.leaseMs = options.leaseMs;
    this.now = options.now;
    this.replicaId = options.replicaId ?? randomBytes(16).toString("base64url");
  }

  async runner(taskId: string): Promise<string | undefined> {
    // A lease key can outlive its task by up to a lease (the task expired): only an unfinished task has a runner.
    const holder = await RUNNER.run(this.client, [this.keys.task(taskId), this.keys.lease(taskId)], []);
    return typeof holder === "string" ? holder : undefined;
  }

  /**
   * Adds sweep candidates. The ZSET outlives every replica being down (a later one
   * must still find the orphans) but not an abandoned prefix: its expiry is only
   * ever pushed later, to the longest lease or task expiry written into it.
   */
  private async candidates(entries: Array<string | number>, untilMs = this.leaseMs * 4): Promise<void> {
    await this.client
      .pipeline()
      .zadd(this.keys.leases, ...entries)
      .pexpire(this.keys.leases, untilMs, "NX")
      .pexpire(this.keys.leases, untilMs, "GT")
      .exec();
  }

  async renew(taskIds: readonly string[]): Promise<string[]> {
    if (taskIds.length === 0) return [];
    // A renewal is an adoption from ourselves: the same script, one check-and-set. One command per task, not
    // one pipeline: the tasks live in different slots, so on a cluster on different masters (ioredis writes the
    // commands back to back all the same). Each falls back to EVAL where the server lacks the script (NOSCRIPT:
    // first use, or a replica promoted since).
    const replies = await Promise.allSettled(
      taskIds.map((id) =>
        ADOPT_LEASE.run(
          this.client,
          [this.keys.task(id), this.keys.lease(id)],
          [this.replicaId, this.replicaId, this.leaseMs],
        ),
      ),
    );
    const lost: string[] = [];
    const kept: Array<string | number> = [];
    let failed: unknown;
    replies.forEach((reply, i) => {
      const id = taskIds[i] as string;
      if (reply.status === "rejected") failed ??= reply.reason;
      else if (reply.value === 1) kept.push(this.now() + this.leaseMs, id);
      else lost.push(id);
    });
    if (kept.length > 0) await this.candidates(kept);
    // Some could not be renewed (their master is failing over): the caller tries them all again soon.
    if (failed !== undefined) throw failed instanceof Error ? failed : new Error(String(failed));
    return lost;
  }

  async release(taskIds: readonly string[]): Promise<void> {
    await Promise.all(taskIds.map((id) => RELEASE_LEASE.run(this.client, [this.keys.lease(id)], [this.replicaId])));
  }

  async lapsed(limit: number): Promise<string[]> {
    // Candidates whose lease deadline passed; endLapsed checks the lease itself, atomically.
    return this.client.zrangebyscore(this.keys.leases, "-inf", this.now(), "LIMIT", 0, limit);
  }

  async endLapsed(ended: StoredTask): Promise<boolean> {
    const taskId = ended.record.taskId;
    const size = taskBytes(ended);
    const [outcome, oldSize = "0", bucket = "0", owner = ended.owner] = (await END_LAPSED.run(
      this.client,
      [this.keys.task(taskId), this.keys.lease(taskId)],
      [ended.status, ended.json, size],
    )) as string[];
    if (outcome === "held") return false;
    if (outcome !== "ok") {
      // Gone or finished: it is no sweep candidate any more.
      await this.client.zrem(this.keys.leases, taskId);
      return false;
    }
    // Counted as finished whatever the budgets say: the failure is written already (and it fits: FINISH_RESERVE_BYTES).
    const k = this.keys;
    const [counted] = (await RECOUNT.run(
      this.client,
      [k.unfinished, k.usage, k.buckets, k.info, k.expiries, k.finished, k.quota, k.leases],
      [k.counters, this.now(), taskId, size, ended.status, 0, 0, 1],
    )) as string[];
    // A task the counts do not hold (an older replica created it): settled as it used to be.
    if (counted === "untracked") {
      await SETTLE.run(
        this.client,
        [k.unfinished, k.owner(owner), k.usage, k.leases],
        [taskId, 1, bucket, size - Number(oldSize), 0],
      );
    }
    return true;
  }

  async adopt(taskId: string, from: string): Promise<boolean> {
    const held = await ADOPT_LEASE.run(
      this.client,
      [this.keys.task(taskId), this.keys.lease(taskId)],
      [this.replicaId, from, this.leaseMs],
    );
    if (held !== 1) return false;
    await this.candidates([this.now() + this.leaseMs, taskId]);
    return true;
  }

  async offer(taskId: string, ticket: string, windowMs: number): Promise<void> {
    await this.client.set(this.keys.handoff(taskId), ticket, "PX", windowMs);
  }

  async takeTicket(taskId: string): Promise<string | undefined> {
    return (await this.client.getdel(this.keys.handoff(taskId))) ?? undefined;
  }

  async withdraw(taskId: string): Promise<void> {
    await this.client.del(this.keys.handoff(taskId));
  }

  /** Registers the address and keeps it (and the shared secrets) registered, every third of a lease, until close(). */
  async register(address: string): Promise<void> {
    const write = async (): Promise<void> => {
      await this.client.set(this.keys.replica(this.replicaId), address, "PX", this.leaseMs);
      // A Redis that lost its data (restarted without persistence, flushed) gets the shared secrets back
      // from the replicas that use them, before a replica started since draws different ones (it could
      // then not check their MRTR requestState, nor they its).
      for (const [name, value] of this.secrets) await this.client.set(this.keys.secret(name), value, "NX");
    };
    await write();
    if (this.registered) clearInterval(this.registered.timer);
    const timer = setInterval(() => void write().catch(() => undefined), Math.max(250, Math.floor(this.leaseMs / 3)));
    timer.unref();
    this.registered = { address, timer };
  }

  async addressOf(replicaId: string): Promise<string | undefined> {
    return (await this.client.get(this.keys.replica(replicaId))) ?? undefined;
  }

  /** The secret named `name` that every replica on this prefix agrees on: the first to ask draws it. */
  async sharedSecret(name: string): Promise<Buffer> {
    const key = this.keys.secret(name);
    await this.client.set(key, randomBytes(32).toString("base64url"), "NX");
    const value = await this.client.get(key);
    if (!value) throw new Error(`the shared secret ${name} could not be read back`);
    this.secrets.set(name, value);
    return Buffer.from(value, "base64url");
  }

  /** Stops renewing the registration and removes it (a replica that shuts down). */
  async close(): Promise<void> {
    if (!this.registered) return;
    clearInterval(this.registered.timer);
    this.registered = undefined;
    await this.client.del(this.keys.replica(this.replicaId)).catch(() => undefined);
  }
}
