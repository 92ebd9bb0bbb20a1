// One call on a legacy upstream session, and its only owner. It holds the
// session lease, chooses the upstream request id, reads the answer, and is the
// one place that cancels: `cancel(reason)` sends notifications/cancelled with
// the upstream id exactly once (only if the request went out), stops reading
// and gives the lease back, whatever phase the call is in: before the request
// is sent, while it waits for response headers (a JSON-answering upstream sends
// them only at the end), or while its stream is read.
//
// The object exists before the request is sent, so a task created at once
// (`always`) can be cancelled before the upstream has heard of it.
import type { JsonObject } from "../protocol/json.js";
import { isRecord } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { headerValue } from "../protocol/headers.js";
import {
  isSessionLost,
  LegacySession,
  UpstreamSessionError,
  type LegacySessionPool,
  type SessionLease,
  type SessionSpec,
} from "./legacy-sessions.js";
import type { PendingInput } from "../protocol/input-requests.js";
import { firstMessage, postRpc, resumeRpc } from "../upstream/rpc.js";
import type { UpstreamClient } from "../upstream/client.js";

/** The abort reason of an ended call (see end()); shared, so ending a call allocates no error. */
const CALL_ENDED = new DOMException("This operation was aborted", "AbortError");

/**
 * Everything another gateway instance needs to pick a call up where this one
 * left it (a rolling deploy's handoff): the upstream session, the call's
 * upstream id, and the SSE cursor to resume from. JSON, for the store.
 * It holds the caller's credential headers: it lives in the store only for the
 * moments of a handoff.
 */
export interface ResumeTicket {
  method: string;
  sessionId: string;
  protocolVersion: string;
  serverInfo: JsonObject;
  credentialHeaders: string[];
  upstreamId: string;
  lastEventId: string;
  pending: Array<[string, PendingInput]>;
  keySeq: number;
}

/**
 * What a call needs of the sessions it runs on: the pool (pooled sessions for
 * modern callers), or one client's own upstream session (tasks-2025/).
 */
export type CallSessions = Pick<LegacySessionPool, "lease" | "post" | "send" | "invalidate" | "forget">;

export class LegacyCall {
  /** Input requests sent to the client and not answered yet, by key (unique for the call's life). */
  readonly pending = new Map<string, PendingInput>();
  private keySeq = 0;
  private lease: SessionLease | undefined;
  /** A call picked up from another instance runs on a session the pool does not own. */
  private adopted: LegacySession | undefined;
  private lastEventId: (() => string | undefined) | undefined;
  private detachedFlag = false;
  private id: string | undefined;
  private sent = false;
  private ended = false;
  /** Aborts the session wait and the upstream HTTP exchange. */
  private readonly controller = new AbortController();
  private stream: AsyncIterator<unknown> | undefined;
  private discard: (() => void) | undefined;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly pool: CallSessions,
    private readonly spec: SessionSpec,
    readonly method: string,
    /**
     * The client's traceparent/tracestate (flat list), sent with the call's request: a pooled session's
     * requests otherwise carry only the session's own headers. With tracing on, the upstream span's
     * context replaces them (upstream/client.ts).
     */
    private readonly traceHeaders: readonly string[] = [],
  ) {}

  get session(): LegacySession {
    const session = this.current;
    if (!session) throw new Error("the call has no session yet");
    return session;
  }

  /** The session the call runs on: leased from the pool, or adopted from another instance. */
  private get current(): LegacySession | undefined {
    return this.adopted ?? this.lease?.session;
  }

  /**
   * Picks up a call another gateway instance handed on: its messages resume
   * (GET with Last-Event-ID on its session) right after the last event that
   * instance read. Rejects when the upstream will not resume it.
   */
  static async resume(
    upstream: UpstreamClient,
    pool: LegacySessionPool,
    ticket: ResumeTicket,
    now: number,
  ): Promise<LegacyCall> {
    const call = new LegacyCall(
      upstream,
      pool,
      { credentialHeaders: ticket.credentialHeaders, capabilities: {}, clientInfo: undefined },
      ticket.method,
    );
    const init = { protocolVersion: ticket.protocolVersion, capabilities: {}, serverInfo: ticket.serverInfo };
    call.adopted = new LegacySession("handoff", ticket.credentialHeaders, ticket.sessionId, init, now);
    call.id = ticket.upstreamId;
    call.sent = true;
    call.keySeq = ticket.keySeq;
    for (const [key, p] of ticket.pending) call.pending.set(key, p);
    let answer: Awaited<ReturnType<typeof resumeRpc>>;
    try {
      answer = await resumeRpc(upstream, call.adopted.headers(), ticket.lastEventId, call.controller.signal);
    } catch (err) {
      // The call goes on upstream with nobody to read it: stop it there.
      call.cancel("the gateway could not resume the call");
      throw err;
    }
    if (answer.status !== 200) {
      answer.discard();
      call.cancel("the gateway could not resume the call");
      throw new UpstreamSessionError(
        `upstream refused to resume the call (HTTP ${answer.status})`,
        answer.status,
        undefined,
      );
    }
    call.stream = answer.messages;
    call.discard = () => answer.discard();
    call.lastEventId = () => answer.lastEventId() ?? ticket.lastEventId;
    return call;
  }

  /**
   * Stops reading without telling the upstream (the call goes on there) and
   * returns what another instance needs to resume it, or undefined when the
   * call cannot be resumed (a JSON answer, no event ids, no session id). After
   * it, cancel() still reaches the upstream: the handoff may find no taker.
   */
  detach(): ResumeTicket | undefined {
    const session = this.current;
    const cursor = this.lastEventId?.();
    if (
      this.ended ||
      !this.sent ||
      !session ||
      session.sessionId === undefined ||
      this.id === undefined ||
      cursor === undefined
    )
      return undefined;
    this.detachedFlag = true;
    this.discard?.();
    this.discard = undefined;
    // The session goes on serving the call elsewhere: this instance must not close it.
    this.pool.forget(session);
    return {
      method: this.method,
      sessionId: session.sessionId,
      protocolVersion: session.init.protocolVersion,
      serverInfo: session.init.serverInfo,
      credentialHeaders: session.credentialHeaders,
      upstreamId: this.id,
      lastEventId: cursor,
      pending: [...this.pending],
      keySeq: this.keySeq,
    };
  }

  /** True once detach() handed the call on: its reader stops without ending it. */
  get detached(): boolean {
    return this.detachedFlag;
  }

  /** The upstream JSON-RPC id the gateway chose (set once the request is sent). */
  get upstreamId(): string | undefined {
    return this.id;
  }

  get progressToken(): string | undefined {
    return this.id === undefined ? undefined : `${this.id}-progress`;
  }

  /** The upstream's messages for this call, in order; set once send() resolved. */
  get messages(): AsyncIterator<unknown> {
    if (!this.stream) throw new Error("the call was not sent");
    return this.stream;
  }

  /** The next key for an input request: `input-1`, `input-2`, … */
  nextInputKey(): string {
    this.keySeq += 1;
    return `input-${this.keySeq}`;
  }

  /**
   * Sends the call upstream on a leased session, re-initializing once if the
   * upstream forgot the session. `params` builds the params for the upstream
   * from the progress token the gateway chose. Throws an UpstreamSessionError
   * (401/403 with its challenge, a session that cannot be opened) or the
   * transport's error; resolves once the answer's headers are in.
   */
  async send(params: (progressToken: string) => JsonObject): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      if (this.ended) return;
      // The session wait stops when the call is cancelled, never because one client left.
      this.lease = await this.pool.lease(this.spec, this.controller.signal);
      if (this.ended) {
        this.lease.release();
        return;
      }
      const session = this.lease.session;
      this.id = session.nextId();
      this.sent = true;
      const answer = await postRpc(
        this.upstream,
        this.traceHeaders.length === 0 ? session.headers() : [...session.headers(), ...this.traceHeaders],
        { jsonrpc: "2.0", id: this.id, method: this.method, params: params(`${this.id}-progress`) },
        this.controller.signal,
      ).catch((err: unknown) => {
        this.end();
        throw err;
      });
      if (answer.status === 401 || answer.status === 403) {
        const body = await firstMessage(answer);
        this.end();
        throw new UpstreamSessionError(
          `upstream refused the request (HTTP ${answer.status})`,
          answer.status,
          body,
          headerValue(answer.headers, "www-authenticate"),
        );
      }
      if (answer.status === 404 || answer.status === 400) {
        const body = await firstMessage(answer);
        if (isSessionLost(answer.status, body) && attempt === 0) {
          this.lease.release();
          this.pool.invalidate(session);
          this.sent = false;
          continue;
        }
        // Not a lost session: the error body is the call's answer (one without an id, or with id null, is ours).
        const id = this.id;
        this.stream = (async function* () {
          yield isRecord(body) && (body.id === undefined || body.id === null) ? { ...body, id } : body;
        })();
        return;
      }
      this.stream = answer.messages;
      this.discard = () => answer.discard();
      this.lastEventId = () => answer.lastEventId();
      return;
    }
  }

  /** Answers a request the upstream sent on this call (an input response, or an error for one we cannot relay). Fire-and-forget. */
  answer(
    upstreamRequestId: string | number,
    outcome: { result: unknown } | { error: JsonRpcErrorObject },
  ): Promise<void> {
    return this.deliver(upstreamRequestId, outcome).catch(() => undefined);
  }

  /** The same, rejecting when the answer could not be delivered (the client's MRTR retry must learn that). */
  async deliver(
    upstreamRequestId: string | number,
    outcome: { result: unknown } | { error: JsonRpcErrorObject },
  ): Promise<void> {
    const session = this.current;
    if (!session) return;
    await this.pool.post(session, { jsonrpc: "2.0", id: upstreamRequestId, ...outcome });
  }

  /**
   * Stops the call: notifications/cancelled with the upstream's id if the
   * request went out, then the gateway stops reading. Only the first call counts.
   */
  cancel(reason: string): void {
    if (this.ended) return;
    const session = this.current;
    if (this.sent && session && this.id !== undefined) {
      void this.pool.send(session, {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: this.id, reason },
      });
    }
    this.end();
  }

  /** The call is over (answered, failed or cancelled): stop reading and give the session back. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    // One reason for every call: abort() without one builds a DOMException with a stack each time, 2.8 % of
    // the era bridge's CPU in its profile (bench/RESULTS.md, "Era bridge: profile"). Same name and message.
    this.controller.abort(CALL_ENDED);
    this.discard?.();
    this.lease?.release();
  }
}
