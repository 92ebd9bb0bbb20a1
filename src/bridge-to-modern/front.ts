// Legacy (≤ 2025-11-25) sessions served by the gateway itself, in front of a
// modern-only (2026-07-28) upstream that refuses initialize. The session lives
// here (its Mcp-Session-Id is the gateway's, bound to the caller): what the
// client declared at initialize and set with logging/setLevel, its resource
// subscriptions, and its GET stream. Every request goes upstream as its own
// stateless 2026-07-28 request (wire.ts):
//   - progress and log notifications come back on the request's stream;
//   - an `input_required` answer (MRTR) becomes server-to-client requests on
//     the request's stream; the client's responses (POSTed on the session) are
//     the inputResponses of the retry, which carries the upstream's requestState;
//   - the GET stream is a subscriptions/listen upstream (list changes the
//     upstream offers, and the URIs resources/subscribe named), reopened when
//     the subscriptions change.
import type { HeldSessions } from "../protocol/held-sessions.js";
import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject, JsonRpcId } from "../protocol/jsonrpc.js";
import { LOG_LEVELS, MODERN_VERSION, type LogLevelName } from "../protocol/modern-request.js";
import {
  invalidParams,
  sessionNotFound,
  streamConflict,
  tooManyInputRounds,
  UNSUPPORTED_PROTOCOL_VERSION,
  upstreamErrorOf,
  upstreamFault,
  upstreamNoAnswer,
  type Fault,
} from "../protocol/errors.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import type { UpstreamClient } from "../upstream/client.js";
import { firstMessage, postRpc, type RpcAnswer } from "../upstream/rpc.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import type { Caller } from "../calls/caller.js";
import { ClientLeg } from "../calls/client-leg.js";
import { SseStream } from "../calls/sse-stream.js";
import {
  initializeFromDiscover,
  legacyNotification,
  legacyResult,
  listenFilter,
  modernCapabilities,
  modernHeaders,
  modernParams,
  negotiatedVersion,
  type Envelope,
} from "./wire.js";

export interface LegacyFrontOptions {
  upstream: UpstreamClient;
  keepAliveMs: number;
  /** How long the gateway waits for the client's answer to a server-to-client request. */
  inputTimeoutMs: number;
  /** A session unused this long is forgotten (not while its GET stream is open). */
  idleMs: number;
  /** Sessions held at most; at capacity a new one replaces the least recently used. */
  maxSessions: number;
  /** The clock idleness is measured on. */
  now: () => number;
  log: Logger;
  /** Registers a long-lived stream (the GET stream) for graceful shutdown; returns its release. */
  track?: ((stop: () => void) => () => void) | undefined;
  /** Known from the start (upstream.era "modern"): no legacy request ever goes upstream. */
  modernOnly?: boolean | undefined;
  /** Records each session as this process's (issue 23: another replica forwards its requests here). */
  held?: HeldSessions | undefined;
  /** Pause before a listen the upstream ended is opened again; doubled per listen that failed in a row. Default 1 s. */
  relistenDelayMs?: number | undefined;
}

interface FrontSession {
  readonly id: string;
  readonly caller: string;
  readonly protocolVersion: string;
  readonly serverCapabilities: JsonObject;
  readonly envelope: Envelope;
  readonly subscriptions: Set<string>;
  /** Server-to-client requests awaiting the client's response, by the gateway's id. */
  readonly awaiting: Map<string, (message: JsonObject) => void>;
  /** The client's requests in progress, by its id (notifications/cancelled aborts them). */
  readonly running: Map<JsonRpcId, AbortController>;
  get: GetStream | undefined;
  seq: number;
}

interface GetStream {
  write(message: unknown): void;
  /** The listen upstream in progress; aborted to reopen it with other subscriptions, or to end. */
  listen: AbortController | undefined;
  /** Listens in a row that ended without being acknowledged (the pause before the next one grows with them). */
  failures: number;
  close(): void;
}

/** A bound on MRTR rounds for one request: an upstream that keeps asking ends with an error. */
const MAX_ROUNDS = 16;
/** Pause before a listen the upstream ended is opened again (doubled per failed listen in a row, up to the max). */
const RELISTEN_DELAY_MS = 1_000;
const MAX_RELISTEN_DELAY_MS = 60_000;
const ACCEPTED = (): Response => new Response(null, { status: 202 });

/** -32022 naming 2026-07-28 among the supported versions: the same request may be sent again. */
function isVersionRefusal(message: unknown): boolean {
  if (!isRecord(message) || !isRecord(message.error) || message.error.code !== UNSUPPORTED_PROTOCOL_VERSION)
    return false;
  const data = message.error.data;
  return isRecord(data) && Array.isArray(data.supported) && data.supported.includes(MODERN_VERSION);
}

/** What the upstream hears of a caller on the session's own requests: its credentials and its trace context. */
type UpstreamVoice = Pick<Caller, "credentialHeaders" | "traceHeaders">;

export class LegacyFront {
  /**
   * Least recently used first out at maxSessions; a use (session()) makes a session the most recent and
   * starts its idle time again. One whose GET stream is open has no idle time (ttl 0) until the stream ends.
   */
  private made: LRUCache<string, FrontSession> | undefined;
  /** Configured (upstream.era "modern"), or learned when the upstream first refuses a legacy initialize. */
  modernOnly: boolean;

  constructor(private readonly opts: LegacyFrontOptions) {
    this.modernOnly = opts.modernOnly ?? false;
  }

  /**
   * Made at the first session: lru-cache allocates all `max` slots at once, and an upstream no legacy client
   * opens a gateway-held session with (most of many configured ones) should not pay for them.
   */
  private get sessions(): LRUCache<string, FrontSession> {
    const { opts } = this;
    return (this.made ??= new LRUCache<string, FrontSession>({
      max: opts.maxSessions,
      ttl: opts.idleMs,
      updateAgeOnGet: true,
      perf: { now: opts.now },
      // Read the (injected) clock on every check instead of a value cached for a tick.
      ttlResolution: 0,
      // However a session leaves (capacity, idleness, DELETE, shutdown), what it holds ends. Called once it has
      // left (disposeAfter, not dispose), so ending its GET stream finds it gone and does not put it back.
      disposeAfter: (s) => this.end(s),
    }));
  }

  get size(): number {
    return this.made?.size ?? 0;
  }

  /** The session a request names, if it is the gateway's (a session of this process). */
  owns(sessionId: string | undefined): boolean {
    return sessionId !== undefined && this.made?.has(sessionId) === true;
  }

  /** The caller's session, as a use of it; another caller presenting the id finds nothing and uses nothing. */
  private session(sessionId: string, caller: string): FrontSession | undefined {
    const s = this.made?.peek(sessionId);
    if (!s || s.caller !== caller) return undefined;
    // Most recently used now: at capacity the idlest session goes, not the oldest.
    this.sessions.get(sessionId);
    return s;
  }

  /**
   * A session's idle time counts only while nothing of it is open: while a request is in progress or its GET
   * stream is open it has none (ttl 0), and once the last of them ends it starts from then. A session that
   * already left the table (it is ending) is not put back.
   */
  private idleFromNow(s: FrontSession): void {
    if (this.sessions.peek(s.id) !== s) return;
    this.sessions.set(s.id, s, s.running.size > 0 || s.get !== undefined ? { ttl: 0 } : {});
  }

  /** A session that left the table: its GET stream and its requests in progress end with it. */
  private end(s: FrontSession): void {
    this.opts.held?.release(s.id);
    s.get?.close();
    for (const c of s.running.values()) c.abort();
  }

  /**
   * One stateless modern request upstream for the session. An upstream that
   * refuses the version (-32022) while naming 2026-07-28 among the supported
   * ones is asked once more (SEP-2575: a client retries with a supported version).
   */
  private send(
    s: FrontSession,
    who: UpstreamVoice,
    method: string,
    params: JsonObject,
    signal: AbortSignal,
    extra?: JsonObject,
  ): { id: string; answer: Promise<RpcAnswer> } {
    s.seq += 1;
    const id = `gw-front-${s.seq}`;
    const body = { jsonrpc: "2.0", id, method, params: modernParams(params, s.envelope, extra) };
    const headers = modernHeaders(
      method,
      params,
      who.traceHeaders.length ? [...who.credentialHeaders, ...who.traceHeaders] : who.credentialHeaders,
    );
    const attempt = async (retry: boolean): Promise<RpcAnswer> => {
      const answer = await postRpc(this.opts.upstream, headers, body, signal);
      if (answer.status !== 400) return answer;
      const first = await firstMessage(answer);
      answer.discard();
      if (retry && isVersionRefusal(first)) return attempt(false);
      // The refusal is the answer: replayed for whoever reads it.
      return {
        ...answer,
        messages: (async function* () {
          if (first !== undefined)
            yield isRecord(first) && (first.id === undefined || first.id === null) ? { ...first, id } : first;
        })(),
      };
    };
    return { id, answer: attempt(true) };
  }

  /** initialize: the upstream's server/discover, as a new session of the gateway's. */
  async initialize(id: JsonRpcId, params: JsonObject, who: Caller): Promise<Response> {
    // Sessions idle too long are forgotten here, as a new one comes (nothing else looks at them meanwhile).
    this.sessions.purgeStale();
    const envelope: Envelope = {
      clientInfo: isRecord(params.clientInfo) ? params.clientInfo : { name: "unknown", version: "0" },
      capabilities: modernCapabilities(params.capabilities),
      logLevel: undefined,
    };
    const probe = {
      id: "",
      caller: who.caller,
      protocolVersion: "",
      serverCapabilities: {},
      envelope,
      subscriptions: new Set<string>(),
      awaiting: new Map(),
      running: new Map(),
      get: undefined,
      seq: 0,
    };
    const outcome = await this.once(probe, who, "server/discover", {}, who.signal);
    if ("fault" in outcome) return faultResponse(id, outcome.fault);
    if ("error" in outcome) return jsonResponse(200, { jsonrpc: "2.0", id, error: outcome.error });
    const protocolVersion = negotiatedVersion(params.protocolVersion);
    const result = initializeFromDiscover(outcome.result, protocolVersion);
    const session: FrontSession = {
      ...probe,
      id: randomBytes(16).toString("base64url"),
      protocolVersion,
      serverCapabilities: isRecord(result.capabilities) ? result.capabilities : {},
    };
    this.sessions.set(session.id, session);
    // Recorded before the client learns the id: its next request may reach any replica.
    await this.opts.held?.claim(session.id);
    return jsonResponse(200, { jsonrpc: "2.0", id, result }, { "mcp-session-id": session.id });
  }

  /** One request whose answer is read whole (discover): its result, its error, or why there is none. */
  private async once(
    s: FrontSession,
    who: Caller,
    method: string,
    params: JsonObject,
    signal: AbortSignal,
  ): Promise<{ result: JsonObject } | { error: JsonRpcErrorObject } | { fault: Fault }> {
    let answer: RpcAnswer;
    const sent = this.send(s, who, method, params, signal);
    try {
      answer = await sent.answer;
    } catch (err) {
      return { fault: upstreamFault(err, this.opts.upstream.name) };
    }
    try {
      for await (const m of answer.messages) {
        if (!isRecord(m) || m.id !== sent.id) continue;
        if (isRecord(m.result)) return { result: m.result };
        if (isRecord(m.error)) return { error: m.error as unknown as JsonRpcErrorObject };
      }
    } catch (err) {
      return { fault: upstreamFault(err, this.opts.upstream.name) };
    } finally {
      answer.discard();
    }
    return { fault: upstreamNoAnswer(this.opts.upstream.name, method) };
  }

  /**
   * A message POSTed on a gateway session: a request, a notification, or the
   * client's response to a server-to-client request. `edit`: the access rules'
   * tools/list filter.
   */
  async post(sessionId: string, message: JsonObject, who: Caller, edit: ResultEdit | undefined): Promise<Response> {
    const id = (message.id ?? null) as JsonRpcId;
    const s = this.session(sessionId, who.caller);
    if (!s) return faultResponse(id, sessionNotFound());
    const method = typeof message.method === "string" ? message.method : undefined;
    const params = isRecord(message.params) ? message.params : {};
    if (method === undefined) {
      // The client's response to one of the gateway's requests (an MRTR input).
      if (typeof message.id === "string") s.awaiting.get(message.id)?.(message);
      return ACCEPTED();
    }
    if (!("id" in message)) {
      if (method === "notifications/cancelled") s.running.get((params.requestId ?? null) as JsonRpcId)?.abort();
      return ACCEPTED();
    }
    switch (method) {
      case "ping":
        return jsonResponse(200, { jsonrpc: "2.0", id, result: {} });
      case "logging/setLevel": {
        const level = params.level;
        if (typeof level !== "string" || !(LOG_LEVELS as readonly string[]).includes(level))
          return faultResponse(id, invalidParams("params.level must be a log level"));
        s.envelope.logLevel = level as LogLevelName;
        return jsonResponse(200, { jsonrpc: "2.0", id, result: {} });
      }
      case "resources/subscribe":
      case "resources/unsubscribe": {
        if (typeof params.uri !== "string") return faultResponse(id, invalidParams("params.uri must be a string"));
        if (method === "resources/subscribe") s.subscriptions.add(params.uri);
        else s.subscriptions.delete(params.uri);
        // The GET stream's listen follows the subscriptions.
        if (s.get) this.relisten(s, who);
        return jsonResponse(200, { jsonrpc: "2.0", id, result: {} });
      }
      default:
        return this.call(s, id, method, params, who, edit);
    }
  }

  /** A request upstream, MRTR rounds included; progress, logs and input requests go out on its stream. */
  private call(
    s: FrontSession,
    id: JsonRpcId,
    method: string,
    params: JsonObject,
    who: Caller,
    edit: ResultEdit | undefined,
  ): Promise<Response> {
    const meta = isRecord(params._meta) ? params._meta : {};
    const progressToken =
      typeof meta.progressToken === "string" || typeof meta.progressToken === "number" ? meta.progressToken : undefined;
    const leg = new ClientLeg(id ?? "", progressToken, who.signal, this.opts.keepAliveMs);
    const abort = new AbortController();
    leg.onClose(() => abort.abort());
    s.running.set(id, abort);
    this.idleFromNow(s);
    void this.rounds(s, leg, method, params, who, abort.signal, edit)
      .catch((err: unknown) => {
        if (!abort.signal.aborted)
          this.opts.log.warn("upstream request failed", { method, cause: (err as Error).message });
        const fault = upstreamFault(err, this.opts.upstream.name);
        leg.error(fault.error, fault.status);
      })
      .finally(() => {
        if (s.running.get(id) === abort) s.running.delete(id);
        this.idleFromNow(s);
      });
    return leg.response;
  }

  private async rounds(
    s: FrontSession,
    leg: ClientLeg,
    method: string,
    params: JsonObject,
    who: Caller,
    signal: AbortSignal,
    edit: ResultEdit | undefined,
  ): Promise<void> {
    let extra: JsonObject | undefined;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const sent = this.send(s, who, method, params, signal, extra);
      const answer = await sent.answer;
      let response: JsonObject | undefined;
      try {
        for await (const m of answer.messages) {
          if (!isRecord(m)) continue;
          if (m.id === sent.id && ("result" in m || "error" in m)) {
            response = m;
            break;
          }
          if (m.method === "notifications/progress" && leg.progressToken !== undefined && isRecord(m.params)) {
            leg.notify({ jsonrpc: "2.0", method: m.method, params: { ...m.params, progressToken: leg.progressToken } });
          } else if (m.method === "notifications/message") leg.notify(m);
        }
      } finally {
        answer.discard();
      }
      if (!response) {
        if (signal.aborted) return;
        const fault = upstreamNoAnswer(this.opts.upstream.name, method);
        leg.error(fault.error, fault.status);
        return;
      }
      if (!isRecord(response.result)) {
        leg.error(upstreamErrorOf(response.error));
        return;
      }
      const result = response.result;
      if (result.resultType !== "input_required") {
        const legacy = legacyResult(result);
        leg.result(edit ? edit(legacy) : legacy);
        return;
      }
      const inputs = isRecord(result.inputRequests) ? result.inputRequests : {};
      const inputResponses: JsonObject = {};
      const asked = Object.entries(inputs).map(async ([key, request]) => {
        if (!isRecord(request) || typeof request.method !== "string") return;
        inputResponses[key] = await this.ask(s, leg, request, signal);
      });
      await Promise.all(asked);
      extra = { inputResponses, ...(typeof result.requestState === "string" && { requestState: result.requestState }) };
    }
    const fault = tooManyInputRounds(MAX_ROUNDS);
    leg.error(fault.error, fault.status);
  }

  /** One input request as a server-to-client request on the call's stream; resolves with the client's result. */
  private ask(s: FrontSession, leg: ClientLeg, request: JsonObject, signal: AbortSignal): Promise<unknown> {
    s.seq += 1;
    const id = `gw-input-${s.seq}`;
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        s.awaiting.delete(id);
        signal.removeEventListener("abort", onAbort);
      };
      const onAbort = (): void => {
        done();
        reject(new Error("the request ended before the client answered"));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error("the client did not answer an input request in time"));
      }, this.opts.inputTimeoutMs);
      timer.unref();
      signal.addEventListener("abort", onAbort, { once: true });
      s.awaiting.set(id, (message) => {
        done();
        if ("result" in message) resolve(message.result);
        else
          reject(
            new Error(
              `the client refused an input request: ${isRecord(message.error) ? String(message.error.message) : "error"}`,
            ),
          );
      });
      leg.notify({
        jsonrpc: "2.0",
        id,
        method: request.method,
        ...(isRecord(request.params) && { params: request.params }),
      });
    });
  }

  /** GET on a gateway session: the standalone stream, fed by a subscriptions/listen upstream. */
  openGet(sessionId: string, who: Caller): Response {
    const s = this.session(sessionId, who.caller);
    if (!s) return faultResponse(null, sessionNotFound());
    // One standalone stream per session, as the SDK servers keep it.
    if (s.get) return faultResponse(null, streamConflict());
    // A client that cancels the body, or whose stream refuses a write, has gone: the stream ends.
    const stream = new SseStream(() => get.close());
    let release: (() => void) | undefined;
    let closed = false;
    const get: GetStream = {
      write: (message) => {
        if (!closed) stream.send(message);
      },
      listen: undefined,
      failures: 0,
      close: () => {
        if (closed) return;
        closed = true;
        get.listen?.abort();
        if (s.get === get) {
          s.get = undefined;
          this.idleFromNow(s);
        }
        release?.();
        stream.end();
      },
    };
    s.get = get;
    this.idleFromNow(s);
    who.signal.addEventListener("abort", () => get.close(), { once: true });
    stream.keepAliveEvery(this.opts.keepAliveMs);
    release = this.opts.track?.(() => get.close());
    this.relisten(s, who);
    return stream.response;
  }

  /**
   * (Re)opens the session's listen upstream with its current filter; nothing to listen for, no listen. What the
   * listen and its retries keep of the caller is only what the upstream hears, not the request's headers and
   * claims, since they live as long as the GET stream.
   */
  private relisten(s: FrontSession, caller: UpstreamVoice): void {
    const get = s.get;
    if (!get) return;
    const who: UpstreamVoice = { credentialHeaders: caller.credentialHeaders, traceHeaders: caller.traceHeaders };
    get.listen?.abort();
    get.listen = undefined;
    const notifications = listenFilter(s.serverCapabilities, s.subscriptions);
    if (Object.keys(notifications).length === 0) return;
    const abort = new AbortController();
    get.listen = abort;
    let acknowledged = false;
    void (async () => {
      const sent = this.send(s, who, "subscriptions/listen", { notifications }, abort.signal);
      const answer = await sent.answer;
      try {
        for await (const m of answer.messages) {
          if (!isRecord(m) || typeof m.method !== "string" || "id" in m) continue;
          if (m.method === "notifications/subscriptions/acknowledged") {
            acknowledged = true;
            get.failures = 0;
            continue;
          }
          get.write(legacyNotification(m));
        }
      } finally {
        answer.discard();
      }
    })()
      .catch((err: unknown) => {
        if (!abort.signal.aborted) this.opts.log.warn("upstream listen failed", { cause: (err as Error).message });
      })
      .finally(() => {
        // The upstream ended the listen (a restart, its own shutdown) while the GET stream is open: listen again, shortly.
        if (abort.signal.aborted || s.get !== get || get.listen !== abort) return;
        // An upstream that keeps refusing or failing the listen is asked less and less often, not once a second forever.
        if (!acknowledged) get.failures += 1;
        const base = this.opts.relistenDelayMs ?? RELISTEN_DELAY_MS;
        const delay = Math.min(base * 2 ** Math.max(0, get.failures - 1), Math.max(base, MAX_RELISTEN_DELAY_MS));
        const again = setTimeout(() => {
          if (s.get === get && get.listen === abort) this.relisten(s, who);
        }, delay);
        again.unref();
      });
  }

  /** DELETE on a gateway session: it ends. */
  close(sessionId: string, caller: string): Response {
    const s = this.session(sessionId, caller);
    if (!s) return faultResponse(null, sessionNotFound());
    this.sessions.delete(s.id);
    return new Response(null, { status: 200 });
  }

  /** Shutdown: every session ends. */
  closeAll(): void {
    this.made?.clear();
  }
}
