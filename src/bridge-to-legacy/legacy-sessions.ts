// Legacy (≤ 2025-11-25) upstream sessions opened on behalf of modern clients.
// A modern client has no session; a legacy server needs one. The pool keys
// sessions by what makes them differ (the caller's credentials and the mapped
// capabilities), reuses them, re-initializes transparently when the upstream
// forgets one (404, or server-everything's 400 "No valid session ID"), and
// closes idle ones with DELETE.
import { canonicalJson, isRecord, type JsonObject } from "../protocol/json.js";
import { DigestCache } from "../protocol/digest.js";
import { LEGACY_VERSION, parseInitializeResult, type InitializeResult } from "../protocol/era-translate.js";
import type { Implementation } from "../protocol/modern-request.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamClient } from "../upstream/client.js";
import { headerValue } from "../protocol/headers.js";
import { postRpc, responseTo } from "../upstream/rpc.js";
import { raceSignal } from "../upstream/race-signal.js";

export interface SessionSpec {
  /** Credential-bearing headers of the caller (flat name/value list), forwarded on every session request. */
  credentialHeaders: string[];
  capabilities: JsonObject;
  clientInfo: Implementation | undefined;
  /**
   * Keeps callers apart that send the upstream the same credentials: with auth.jwt and the token not
   * forwarded, two subjects look alike upstream, yet must not share a session (its subscriptions, its
   * server-to-client requests). Part of the key only; never sent.
   */
  partition?: string | undefined;
}

export class UpstreamSessionError extends Error {
  override readonly name = "UpstreamSessionError";
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
    /** The upstream's WWW-Authenticate on a 401/403, relayed so the client can start OAuth. */
    readonly wwwAuthenticate?: string | undefined,
  ) {
    super(message);
  }
}

export class LegacySession {
  /** Undefined when the upstream is stateless and issued no Mcp-Session-Id. */
  readonly sessionId: string | undefined;
  readonly init: InitializeResult;
  lastUsed: number;
  lost = false;
  private seq = 0;

  constructor(
    readonly key: string,
    readonly credentialHeaders: string[],
    sessionId: string | undefined,
    init: InitializeResult,
    now: number,
  ) {
    this.sessionId = sessionId;
    this.init = init;
    this.lastUsed = now;
  }

  /** Upstream JSON-RPC ids are chosen by the gateway: unique per session, never the client's. */
  nextId(): string {
    this.seq += 1;
    return `gw-${this.seq}`;
  }

  headers(): string[] {
    const out = [...this.credentialHeaders, "mcp-protocol-version", this.init.protocolVersion];
    if (this.sessionId !== undefined) out.push("mcp-session-id", this.sessionId);
    return out;
  }
}

/** A 404, or a 400 that names the session, means the upstream no longer knows it. */
export function isSessionLost(status: number, body: unknown): boolean {
  if (status === 404) return true;
  if (status !== 400 || !isRecord(body) || !isRecord(body.error)) return false;
  const message = body.error.message;
  return typeof message === "string" && /session/i.test(message);
}

export interface SessionPoolOptions {
  idleMs: number;
  maxSessions: number;
  gatewayInfo: Implementation;
  now: () => number;
  log: Logger;
  /** Deadline for opening one session (initialize + initialized). */
  openTimeoutMs: number;
  /** Deadline for the gateway's own short messages (cancellations, answers to upstream requests, DELETE). */
  controlTimeoutMs: number;
}

/**
 * A session held busy for one use (a call, a listen's event stream). While any
 * lease is out, neither the idle sweep nor eviction closes the session.
 * `release` may be called any number of times; only the first counts.
 */
export interface SessionLease {
  readonly session: LegacySession;
  release(): void;
}

/** Session keys by their canonical text (see LegacySessionPool.keyOf). */
const KEY_DIGESTS = new DigestCache();

export class LegacySessionPool {
  private readonly sessions = new Map<string, LegacySession>();
  private readonly opening = new Map<string, Promise<LegacySession>>();
  /** Leases out per session: the busy count is the pool's alone. */
  private readonly leases = new Map<LegacySession, number>();
  private openingCount = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly opts: SessionPoolOptions,
  ) {
    if (opts.idleMs > 0) {
      this.sweeper = setInterval(() => void this.sweep(), Math.max(1_000, Math.floor(opts.idleMs / 2)));
      this.sweeper.unref();
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  static keyOf(spec: SessionSpec): string {
    // Asked for twice per bridged call (Mcp-Param-* check, lease): hashing it each time was 0.8 % of the bridge's CPU.
    return KEY_DIGESTS.of(
      canonicalJson({ c: spec.credentialHeaders, k: spec.capabilities, p: spec.partition ?? null }),
    );
  }

  /** A ready session for this caller, opened (once, even under concurrency) if needed. */
  async acquire(spec: SessionSpec, signal: AbortSignal): Promise<LegacySession> {
    const key = LegacySessionPool.keyOf(spec);
    const existing = this.sessions.get(key);
    if (existing && !existing.lost) {
      existing.lastUsed = this.opts.now();
      return existing;
    }
    let opening = this.opening.get(key);
    if (!opening) {
      // Shared by every caller with this key: it runs under its own deadline, not the first caller's signal.
      opening = this.open(key, spec, AbortSignal.timeout(this.opts.openTimeoutMs)).finally(() =>
        this.opening.delete(key),
      );
      this.opening.set(key, opening);
    }
    return raceSignal(opening, signal);
  }

  /** A session for this caller, held busy until the lease is released. */
  async lease(spec: SessionSpec, signal: AbortSignal): Promise<SessionLease> {
    const session = await this.acquire(spec, signal);
    this.leases.set(session, (this.leases.get(session) ?? 0) + 1);
    let released = false;
    return {
      session,
      release: () => {
        if (released) return;
        released = true;
        const n = (this.leases.get(session) ?? 1) - 1;
        if (n <= 0) this.leases.delete(session);
        else this.leases.set(session, n);
      },
    };
  }

  private busy(session: LegacySession): boolean {
    return this.leases.has(session);
  }

  /** A message on a session that expects no answer (a cancellation, an answer to an upstream request), under the control deadline. */
  async post(session: LegacySession, message: unknown): Promise<void> {
    const answer = await postRpc(
      this.upstream,
      session.headers(),
      message,
      AbortSignal.timeout(this.opts.controlTimeoutMs),
    );
    answer.discard();
    // A refused message (the session is gone, the caller is no longer allowed) was not delivered.
    if (answer.status >= 400)
      throw new UpstreamSessionError(`upstream refused the message (HTTP ${answer.status})`, answer.status, undefined);
  }

  /** The same, fire-and-forget: the upstream may be gone, and whoever reads the session's streams reports that. */
  send(session: LegacySession, message: unknown): Promise<void> {
    return this.post(session, message).catch(() => undefined);
  }

  /** One request on a session whose answer is not needed beyond its arrival (resources/subscribe). */
  async request(session: LegacySession, method: string, params: JsonObject): Promise<void> {
    try {
      const answer = await postRpc(
        this.upstream,
        session.headers(),
        { jsonrpc: "2.0", id: session.nextId(), method, params },
        AbortSignal.timeout(this.opts.controlTimeoutMs),
      );
      await answer.messages.next();
      answer.discard();
    } catch {
      // A dead upstream shows on the session's event stream; the caller retries on the next session.
    }
  }

  /**
   * Lets go of a session without closing it upstream: a call on it was handed
   * to another gateway instance, which goes on using it. Shutdown must not
   * DELETE it from under that instance.
   */
  forget(session: LegacySession): void {
    if (this.sessions.get(session.key) === session) this.sessions.delete(session.key);
  }

  /** The upstream forgot this session: drop it so the next acquire re-initializes. */
  invalidate(session: LegacySession): void {
    session.lost = true;
    if (this.sessions.get(session.key) === session) this.sessions.delete(session.key);
  }

  private async open(key: string, spec: SessionSpec, signal: AbortSignal): Promise<LegacySession> {
    // Other sessions still opening count too, or concurrent first requests overshoot the limit.
    const othersOpening = this.openingCount;
    const inUse = (): number => this.sessions.size + othersOpening;
    if (inUse() >= this.opts.maxSessions) await this.evictIdle();
    if (inUse() >= this.opts.maxSessions) {
      throw new UpstreamSessionError(`too many upstream sessions (limit ${this.opts.maxSessions})`, 503, undefined);
    }
    this.openingCount += 1;
    try {
      return await this.initialize(key, spec, signal);
    } finally {
      this.openingCount -= 1;
    }
  }

  private async initialize(key: string, spec: SessionSpec, signal: AbortSignal): Promise<LegacySession> {
    const initId = "gw-init";
    const answer = await postRpc(
      this.upstream,
      [...spec.credentialHeaders, "mcp-protocol-version", LEGACY_VERSION],
      {
        jsonrpc: "2.0",
        id: initId,
        method: "initialize",
        params: {
          protocolVersion: LEGACY_VERSION,
          capabilities: spec.capabilities,
          clientInfo: spec.clientInfo ?? this.opts.gatewayInfo,
        },
      },
      signal,
    );
    const message = await responseTo(answer, initId);
    if (answer.status >= 400 || !isRecord(message) || !("result" in message)) {
      throw new UpstreamSessionError(
        `upstream refused initialize (HTTP ${answer.status})`,
        answer.status,
        message,
        headerValue(answer.headers, "www-authenticate"),
      );
    }
    const init = parseInitializeResult(message.result);
    if (!init) throw new UpstreamSessionError("upstream sent a malformed initialize result", 502, message);
    const sessionId = headerValue(answer.headers, "mcp-session-id");
    const session = new LegacySession(key, spec.credentialHeaders, sessionId, init, this.opts.now());

    // Servers such as server-everything register capability-gated tools only on `initialized`.
    const initialized = await postRpc(
      this.upstream,
      session.headers(),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      signal,
    );
    initialized.discard();
    this.sessions.set(key, session);
    this.opts.log.debug("opened upstream session", { sessions: this.sessions.size, version: init.protocolVersion });
    return session;
  }

  private async evictIdle(): Promise<void> {
    let oldest: LegacySession | undefined;
    for (const s of this.sessions.values()) {
      if (!this.busy(s) && (!oldest || s.lastUsed < oldest.lastUsed)) oldest = s;
    }
    if (oldest) await this.closeSession(oldest);
  }

  private async closeSession(session: LegacySession): Promise<void> {
    this.sessions.delete(session.key);
    if (session.sessionId === undefined) return;
    try {
      const res = await this.upstream.request({
        method: "DELETE",
        search: "",
        headers: session.headers(),
        signal: AbortSignal.timeout(this.opts.controlTimeoutMs),
      });
      await res.body.dump();
    } catch {
      // The upstream may already be gone; the session dies with it.
    }
  }

  /** Closes sessions idle for longer than idleMs. */
  async sweep(): Promise<void> {
    const cutoff = this.opts.now() - this.opts.idleMs;
    const idle = [...this.sessions.values()].filter((s) => !this.busy(s) && s.lastUsed < cutoff);
    await Promise.all(idle.map((s) => this.closeSession(s)));
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.all([...this.sessions.values()].map((s) => this.closeSession(s)));
  }
}
