// Which replica holds each gateway-held session (issue 23). A session whose state lives in one process (its
// stdio child, its 2025-11-25 tasks, a legacy session the gateway serves itself) can only be served there; a
// request for it that reaches another replica or worker is forwarded to that process's internal listener.
// The map is `session → owner replica` in the shared store, with a lease the owner renews while the session
// lives (the same pattern as a task's lease); one process (the memory store) holds every session it knows.
import { LRUCache } from "lru-cache";
import type { HeldSessions } from "../protocol/held-sessions.js";

/** How long a session stays bound to its verified caller after it was issued, or last looked up on a replica. */
export const SESSION_BINDING_MS = 24 * 60 * 60 * 1000;
/** Sessions one verified caller may have bound at once when nothing configures it (server.maxSessionsPerCaller). */
export const DEFAULT_SESSIONS_PER_CALLER = 1_000;
/** Bindings one process keeps (memory store): the least recently used go first. */
const LOCAL_BINDINGS = 50_000;

export interface SessionOwners extends HeldSessions {
  /** This process's replica id (the task leases' own). */
  readonly replicaId: string;
  /** Whether this process holds the session: the hot path's check, in memory. */
  holds(sessionId: string): boolean;
  /** The replica the store names as the session's owner; undefined when none (not a gateway-held session, or lapsed). */
  ownerOf(sessionId: string): Promise<string | undefined>;
  /**
   * Binds a session id the gateway issued, or the upstream returned to an initialize, to its verified caller
   * (identity digest), in the shared store: true when it is bound to this caller (now or before), false when
   * another caller holds it. A caller keeps at most its cap of bindings: past it, its oldest binding goes (that
   * session then answers 404, and its client starts a new one). Nothing else ever writes a binding, so a session
   * id a client makes up costs no key.
   */
  bindCaller(sessionId: string, caller: string): Promise<boolean>;
  /** The caller a session id is bound to (and its binding renewed), or undefined when none is. */
  boundCaller(sessionId: string): Promise<string | undefined>;
  /** Sessions held here. */
  readonly size: number;
  /** Stops renewing and gives up the records still held (shutdown, after the sessions ended). */
  close(): Promise<void>;
}

/**
 * The sessions this process holds, counted: one id can be held twice (a 2025-11-25 task session on a stdio
 * session), and it is let go when the last holder releases it.
 */
export class HeldCounts {
  private readonly counts = new Map<string, number>();

  /** True when the id was not held before. */
  add(id: string): boolean {
    const n = this.counts.get(id) ?? 0;
    this.counts.set(id, n + 1);
    return n === 0;
  }

  /** True when the id is no longer held. */
  remove(id: string): boolean {
    const n = this.counts.get(id);
    if (n === undefined) return false;
    if (n > 1) {
      this.counts.set(id, n - 1);
      return false;
    }
    this.counts.delete(id);
    return true;
  }

  has(id: string): boolean {
    return this.counts.has(id);
  }

  ids(): string[] {
    return [...this.counts.keys()];
  }

  get size(): number {
    return this.counts.size;
  }

  clear(): void {
    this.counts.clear();
  }
}

/** One process: every session is its own, nothing to record or forward. */
export class LocalSessionOwners implements SessionOwners {
  private readonly held = new HeldCounts();
  private readonly callers = new LRUCache<string, string>({ max: LOCAL_BINDINGS, ttl: SESSION_BINDING_MS });
  /** Each caller's bound session ids, oldest first (a Set keeps insertion order). */
  private readonly byCaller = new Map<string, Set<string>>();

  constructor(
    readonly replicaId: string,
    private readonly maxPerCaller = DEFAULT_SESSIONS_PER_CALLER,
  ) {}

  bindCaller(sessionId: string, caller: string): Promise<boolean> {
    const bound = this.callers.get(sessionId);
    if (bound !== undefined) return Promise.resolve(bound === caller);
    this.callers.set(sessionId, caller);
    let ids = this.byCaller.get(caller);
    if (!ids) this.byCaller.set(caller, (ids = new Set()));
    // Ids the LRU dropped (or that expired) leave the caller's count too.
    for (const id of ids) if (this.callers.peek(id) !== caller) ids.delete(id);
    ids.add(sessionId);
    for (const oldest of ids) {
      if (ids.size <= this.maxPerCaller) break;
      ids.delete(oldest);
      this.callers.delete(oldest);
    }
    return Promise.resolve(true);
  }

  boundCaller(sessionId: string): Promise<string | undefined> {
    return Promise.resolve(this.callers.get(sessionId));
  }

  claim(sessionId: string): Promise<void> {
    this.held.add(sessionId);
    return Promise.resolve();
  }

  release(sessionId: string): void {
    this.held.remove(sessionId);
  }

  holds(sessionId: string): boolean {
    return this.held.has(sessionId);
  }

  ownerOf(sessionId: string): Promise<string | undefined> {
    return Promise.resolve(this.held.has(sessionId) ? this.replicaId : undefined);
  }

  get size(): number {
    return this.held.size;
  }

  close(): Promise<void> {
    this.held.clear();
    return Promise.resolve();
  }
}
