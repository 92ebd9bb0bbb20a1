// The session owner map on Redis: one string per gateway-held session, `<prefix>session:{<id>}` → the owner's
// replica id (the id is the key's hash tag, so on Redis Cluster each record is one key in one slot). The owner
// writes it before the client learns the id (1 round trip), and writes it again for every session it holds every
// third of a lease: one command per session, sent back to back (1 round trip per tick on a single node; not one
// pipeline, since on a Cluster the records live in different slots, on different masters). The record
// lives two leases: a killed owner's sessions are still known as gateway-held for a lease after its registration
// (`replica:<id>`, one lease) lapsed, so they answer 404 (re-initialize) everywhere instead of falling through to
// a pass-through that does not know them.
import type { RedisClient } from "./redis-connect.js";
import type { Logger } from "../log/logger.js";
import { DEFAULT_SESSIONS_PER_CALLER, HeldCounts, SESSION_BINDING_MS, type SessionOwners } from "./session-owners.js";
import { LuaScript } from "./redis-scripts.js";

export interface RedisSessionOwnersOptions {
  client: RedisClient;
  prefix: string;
  leaseMs: number;
  replicaId: string;
  /** Sessions one caller may have bound at once (server.maxSessionsPerCaller). */
  maxPerCaller?: number | undefined;
  /** The clock that orders a caller's bindings (oldest goes first past the cap). */
  now?: (() => number) | undefined;
  log: Logger;
}

/**
 * A caller's bound sessions, one sorted set per caller (its own key and slot): adds one, keeps the set alive as
 * long as a binding, and pops the oldest past the cap (returned, so their bindings can be deleted too).
 * KEYS[1] the caller's set; ARGV: now, session id, ttl ms, cap.
 */
const TRACK_BINDING = new LuaScript(
  "track-binding",
  `
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], over)
  local ids = {}
  for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
  return ids
end
return {}
`,
);

/** The shortest renewal interval, whatever the lease length (the task leases' own floor). */
const MIN_RENEW_MS = 250;

export class RedisSessionOwners implements SessionOwners {
  readonly replicaId: string;
  private readonly held = new HeldCounts();
  private readonly recordMs: number;
  private timer: NodeJS.Timeout | undefined;
  /** Round trips to Redis made by this map (bench/sessions.ts reads them). */
  roundTrips = 0;

  constructor(private readonly opts: RedisSessionOwnersOptions) {
    this.replicaId = opts.replicaId;
    this.recordMs = opts.leaseMs * 2;
  }

  private key(sessionId: string): string {
    return `${this.opts.prefix}session:{${sessionId}}`;
  }

  async claim(sessionId: string): Promise<void> {
    if (!this.held.add(sessionId)) return;
    this.renewing();
    try {
      this.roundTrips++;
      await this.opts.client.set(this.key(sessionId), this.replicaId, "PX", this.recordMs);
    } catch (err) {
      // The session still works here (a sticky client never notices); the next renewal writes the record.
      this.opts.log.warn("could not record a session's owner", { cause: (err as Error).message });
    }
  }

  release(sessionId: string): void {
    if (!this.held.remove(sessionId)) return;
    this.roundTrips++;
    // Not awaited: a record left behind lapses by itself, and its owner answers 404 for a session it no longer holds.
    this.opts.client.del(this.key(sessionId)).catch(() => undefined);
  }

  holds(sessionId: string): boolean {
    return this.held.has(sessionId);
  }

  private bindingKey(sessionId: string): string {
    return `${this.opts.prefix}session-caller:{${sessionId}}`;
  }

  /**
   * SET NX GET, so the first caller wins and every later one reads who did; then the caller's own set counts it,
   * and the bindings it pops past the cap are deleted (each key in its own slot: separate commands on a Cluster).
   */
  async bindCaller(sessionId: string, caller: string): Promise<boolean> {
    const { client } = this.opts;
    this.roundTrips++;
    const before = await client.set(this.bindingKey(sessionId), caller, "PX", SESSION_BINDING_MS, "NX", "GET");
    if (before !== null) return before === caller;
    this.roundTrips++;
    const evicted = (await TRACK_BINDING.run(
      client,
      [`${this.opts.prefix}session-callers:{${caller}}`],
      [
        (this.opts.now ?? Date.now)(),
        sessionId,
        SESSION_BINDING_MS,
        this.opts.maxPerCaller ?? DEFAULT_SESSIONS_PER_CALLER,
      ],
    )) as string[];
    if (evicted.length > 0) {
      this.roundTrips++;
      await Promise.all(evicted.map((id) => client.del(this.bindingKey(id))));
    }
    return true;
  }

  async boundCaller(sessionId: string): Promise<string | undefined> {
    this.roundTrips++;
    return (await this.opts.client.getex(this.bindingKey(sessionId), "PX", SESSION_BINDING_MS)) ?? undefined;
  }

  async ownerOf(sessionId: string): Promise<string | undefined> {
    this.roundTrips++;
    return (await this.opts.client.get(this.key(sessionId))) ?? undefined;
  }

  get size(): number {
    return this.held.size;
  }

  private renewing(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.renew(), Math.max(MIN_RENEW_MS, Math.floor(this.opts.leaseMs / 3)));
    this.timer.unref();
  }

  /** Writes every record held here again (SET, not PEXPIRE: a record Redis lost comes back). */
  async renew(): Promise<void> {
    const ids = this.held.ids();
    if (ids.length === 0) return;
    try {
      this.roundTrips++;
      await Promise.all(ids.map((id) => this.opts.client.set(this.key(id), this.replicaId, "PX", this.recordMs)));
    } catch (err) {
      this.opts.log.warn("could not renew session owners", { cause: (err as Error).message });
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const ids = this.held.ids();
    this.held.clear();
    if (ids.length === 0) return;
    // One DEL per key, back to back: on Redis Cluster each record is in a slot of its own.
    await Promise.all(ids.map((id) => this.opts.client.del(this.key(id)))).catch(() => undefined);
  }
}
