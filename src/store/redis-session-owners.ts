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
import { HeldCounts, SESSION_BINDING_MS, type SessionOwners } from "./session-owners.js";

export interface RedisSessionOwnersOptions {
  client: RedisClient;
  prefix: string;
  leaseMs: number;
  replicaId: string;
  log: Logger;
}

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

  /** One round trip: SET NX GET, so the first caller wins and every later one reads who did. */
  async bindCaller(sessionId: string, caller: string): Promise<boolean> {
    this.roundTrips++;
    const key = `${this.opts.prefix}session-caller:{${sessionId}}`;
    const before = await this.opts.client.set(key, caller, "PX", SESSION_BINDING_MS, "NX", "GET");
    return before === null || before === caller;
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
