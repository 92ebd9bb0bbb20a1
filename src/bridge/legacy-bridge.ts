// Serves modern (2026-07-28) requests over a legacy upstream: sessions from the
// pool, server/discover synthesized from initialize, calls driven by
// legacy-call.ts, MRTR rounds parked in the exchange store behind a signed
// requestState, and subscriptions/listen mapped by legacy-listen.ts.
import type { Logger } from "../log/logger.js";
import {
  discoverFromInitialize,
  legacyCapabilities,
  legacyParams,
  MRTR_METHODS,
  modernError,
  type CacheHints,
} from "../protocol/era-bridge.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { JSONRPC_INTERNAL_ERROR, JSONRPC_INVALID_PARAMS, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import { classifyUpstreamFailure, upstreamFailureError } from "../protocol/upstream-failure.js";
import type { UpstreamClient } from "../upstream/client.js";
import {
  isSessionLost,
  LegacySessionPool,
  UpstreamSessionError,
  type LegacySession,
  type SessionSpec,
} from "../upstream/legacy-sessions.js";
import { firstMessage, postRpc, type RpcAnswer } from "../upstream/rpc.js";
import { jsonResponse } from "../protocol/json-response.js";
import { headerValue } from "../protocol/headers.js";
import { ClientLeg } from "./client-leg.js";
import { ExchangeStore, type ExchangeLimits } from "./exchanges.js";
import {
  answerUpstream,
  cancelUpstream,
  sendToUpstream,
  drive,
  LegSink,
  type BridgeContext,
  type CallSink,
  type LegOptions,
  type UpstreamCall,
} from "./legacy-call.js";
import { isTasksDeclared, PromotingSink, taskRefusal } from "./task-sinks.js";
import type { TaskEngine, TaskRuntime } from "../tasks/engine.js";
import type { TaskPolicy } from "../policy/policy.js";
import { LegacyListens } from "./legacy-listen.js";
import { newExchangeId, paramsDigest, RequestStateCodec } from "./request-state.js";

/** The task engine and policy, when tasks are enabled. */
export interface TaskSupport {
  engine: TaskEngine;
  policy: TaskPolicy;
}

interface Failure {
  error: JsonRpcErrorObject;
  status: number;
  headers: Record<string, string>;
}

/** The upstream call behind a sink, once it exists (a task may be cancelled before it does). */
interface CallHolder {
  call?: UpstreamCall;
  cancelled?: string;
  /** While the upstream POST awaits its response headers: abort it and tell the upstream, with its id. */
  inFlight?: ((reason: string) => void) | undefined;
}

export interface LegacyBridgeOptions {
  tasks: TaskSupport | undefined;
  /** The gateway's own serverInfo, for answers that involve no upstream. */
  gatewayInfo: JsonObject;
  upstream: UpstreamClient;
  pool: LegacySessionPool;
  hints: CacheHints;
  exchanges: ExchangeLimits;
  keepAliveMs: number;
  advertiseTasks: () => boolean;
  now: () => number;
  log: Logger;
}

/** What the bridge needs to know about the HTTP request besides the JSON-RPC message. */
export interface CallerContext {
  /** The caller's identity digest (binds MRTR state and, later, tasks). */
  caller: string;
  /** End-to-end headers to forward to the upstream (credentials etc.). */
  credentialHeaders: string[];
  signal: AbortSignal;
}

interface Parked {
  call: UpstreamCall;
  caller: string;
}

export class LegacyBridge {
  private readonly ctx: BridgeContext;
  private readonly codec: RequestStateCodec;
  private readonly parked: ExchangeStore<Parked>;
  readonly listens: LegacyListens;

  constructor(private readonly opts: LegacyBridgeOptions) {
    this.ctx = { upstream: opts.upstream, hints: opts.hints };
    this.codec = new RequestStateCodec(opts.now);
    this.parked = new ExchangeStore<Parked>(
      opts.exchanges,
      (p) => {
        cancelUpstream(this.ctx, p.call, "input request abandoned");
        this.release(p.call.session);
      },
      opts.now,
    );
    this.listens = new LegacyListens(opts.upstream, opts.pool, opts.keepAliveMs, opts.log, opts.tasks?.engine, opts.gatewayInfo);
  }

  get pendingExchanges(): number {
    return this.parked.size;
  }

  private spec(req: ModernRequest, caller: CallerContext): SessionSpec {
    return {
      credentialHeaders: caller.credentialHeaders,
      capabilities: legacyCapabilities(req.envelope.clientCapabilities),
      clientInfo: req.envelope.clientInfo,
    };
  }

  private release(session: LegacySession): void {
    session.active = Math.max(0, session.active - 1);
  }

  async handle(req: ModernRequest, caller: CallerContext): Promise<Response> {
    try {
      if (req.method === "server/discover") return await this.discover(req, caller);
      if (req.method === "subscriptions/listen") {
        return await this.listens.open(req, caller, this.spec(req, caller));
      }
      // Calls that can only run as tasks are refused before anything goes upstream.
      const refusal = this.opts.tasks && req.method === "tools/call" ? taskRefusal(this.opts.tasks, req, caller.caller) : undefined;
      if (refusal) return refusal;
      const leg = new ClientLeg(req.id, req.envelope.progressToken, caller.signal, this.opts.keepAliveMs);
      const legOpts: LegOptions = { logLevel: req.envelope.logLevel, clientCapabilities: req.envelope.clientCapabilities };
      const work =
        req.params.requestState !== undefined && MRTR_METHODS.has(req.method)
          ? this.resume(req, caller, leg, legOpts)
          : this.start(req, caller, leg, legOpts);
      // Nothing thrown while a call runs may escape as an unhandled rejection: it becomes the answer.
      work.catch((err: unknown) => {
        this.opts.log.error("bridged call failed", { method: req.method, cause: (err as Error).message });
        leg.error({ code: JSONRPC_INTERNAL_ERROR, message: `The gateway failed to serve ${req.method}: ${(err as Error).message}` });
      });
      return await leg.response;
    } catch (err) {
      return this.failure(req, err);
    }
  }

  /** What to answer when reaching the upstream failed: the JSON-RPC error, its HTTP status, and headers to relay. */
  private failureOf(req: ModernRequest, err: unknown): Failure {
    if (err instanceof UpstreamSessionError) {
      const error: JsonRpcErrorObject = isRecord(err.body) && isRecord(err.body.error)
        ? modernError(err.body.error as unknown as JsonRpcErrorObject)
        : { code: JSONRPC_INTERNAL_ERROR, message: `Upstream MCP server ${this.opts.upstream.displayUrl}: ${err.message}`, data: { reason: "upstream_session" } };
      // 401/403 keep their status and challenge: the client's OAuth flow starts from them, as on a direct connection.
      if (err.status === 401 || err.status === 403) {
        return { error, status: err.status, headers: err.wwwAuthenticate ? { "www-authenticate": err.wwwAuthenticate } : {} };
      }
      return { error, status: err.status >= 500 ? 502 : 200, headers: {} };
    }
    const failure = classifyUpstreamFailure(err);
    this.opts.log.warn("upstream request failed", { method: req.method, reason: failure.reason, cause: failure.cause });
    return { error: upstreamFailureError(failure, this.opts.upstream.displayUrl), status: failure.status, headers: {} };
  }

  private failure(req: ModernRequest, err: unknown): Response {
    const f = this.failureOf(req, err);
    return jsonResponse(f.status, { jsonrpc: "2.0", id: req.id, error: f.error }, f.headers);
  }

  private async discover(req: ModernRequest, caller: CallerContext): Promise<Response> {
    const session = await this.opts.pool.acquire(this.spec(req, caller), caller.signal);
    const result = discoverFromInitialize(session.init, this.opts.hints, this.opts.advertiseTasks());
    return jsonResponse(200, { jsonrpc: "2.0", id: req.id, result });
  }

  /** Sends the call upstream on a pooled session, re-initializing once if the upstream forgot the session. */
  private async send(
    req: ModernRequest,
    caller: CallerContext,
    holder: CallHolder,
  ): Promise<{ call: UpstreamCall; answer: RpcAnswer }> {
    for (let attempt = 0; ; attempt++) {
      const session = await this.opts.pool.acquire(this.spec(req, caller), caller.signal);
      // Busy from now on: an idle sweep or eviction must not DELETE a session with a call going out.
      session.active += 1;
      const upstreamId = session.nextId();
      const upstreamProgressToken = `${upstreamId}-progress`;
      const controller = new AbortController();
      // Until the upstream answers, a client that leaves cancels the call; afterwards drive() watches the sink.
      const onGone = (): void => {
        controller.abort();
        void sendToUpstream(this.ctx, session, {
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: upstreamId, reason: "client disconnected" },
        });
      };
      caller.signal.addEventListener("abort", onGone, { once: true });
      // A task may be cancelled (or evicted) while the upstream has not answered yet: a JSON-answering
      // upstream sends headers only when the call ends, so the cancel must not wait for them.
      holder.inFlight = (reason) => {
        controller.abort();
        void sendToUpstream(this.ctx, session, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: upstreamId, reason } });
      };
      if (holder.cancelled !== undefined) holder.inFlight(holder.cancelled);
      let answer: RpcAnswer;
      try {
        answer = await postRpc(
          this.opts.upstream,
          session.headers(),
          { jsonrpc: "2.0", id: upstreamId, method: req.method, params: legacyParams(req.params, upstreamProgressToken) },
          controller.signal,
        );
      } catch (err) {
        this.release(session);
        throw err;
      } finally {
        caller.signal.removeEventListener("abort", onGone);
        holder.inFlight = undefined;
      }
      if (answer.status === 401 || answer.status === 403) {
        const body = await firstMessage(answer);
        this.release(session);
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
          this.release(session);
          this.opts.pool.invalidate(session);
          continue;
        }
        // Not a lost session: replay the error body as the call's answer.
        const messages = (async function* () {
          // An error body without an id (or with id null) is this call's answer.
          yield isRecord(body) && (body.id === undefined || body.id === null) ? { ...body, id: upstreamId } : body;
        })();
        return { call: this.callOf(session, req.method, upstreamId, upstreamProgressToken, messages, () => controller.abort()), answer };
      }
      return {
        call: this.callOf(session, req.method, upstreamId, upstreamProgressToken, answer.messages, () => {
          controller.abort();
          answer.discard();
        }),
        answer,
      };
    }
  }

  /** The session was marked busy by send(); the call releases it when it ends. */
  private callOf(
    session: LegacySession,
    method: string,
    upstreamId: string,
    upstreamProgressToken: string,
    messages: AsyncIterator<unknown>,
    abort: () => void,
  ): UpstreamCall {
    return { session, method, upstreamId, upstreamProgressToken, messages, abort, pending: new Map(), keySeq: 0 };
  }

  private async start(req: ModernRequest, caller: CallerContext, leg: ClientLeg, legOpts: LegOptions): Promise<void> {
    // The sink exists before the upstream answers, so an `always` task is created (and answered) at once.
    const holder: CallHolder = {};
    const sink = this.sinkFor(req, caller, leg, legOpts, holder);
    let sent: { call: UpstreamCall; answer: RpcAnswer };
    try {
      sent = await this.send(req, caller, holder);
    } catch (err) {
      const f = this.failureOf(req, err);
      // A challenge goes to the client with its header (if no task has answered it yet); the sink then
      // settles the same way (a promoted task ends failed).
      if (Object.keys(f.headers).length > 0) leg.error(f.error, f.status, f.headers);
      sink.error(f.error, f.status);
      return;
    }
    await this.run(sent.call, sink, holder);
  }

  private async run(call: UpstreamCall, sink: CallSink, holder: CallHolder): Promise<void> {
    holder.call = call;
    if (holder.cancelled) {
      cancelUpstream(this.ctx, call, holder.cancelled);
      this.release(call.session);
      return;
    }
    const outcome = await drive(this.ctx, call, sink);
    if (outcome.kind !== "input_required") this.release(call.session);
  }

  /** A plain leg, or one that may become a task (tools/call from a client declaring the extension). */
  private sinkFor(req: ModernRequest, caller: CallerContext, leg: ClientLeg, legOpts: LegOptions, holder: CallHolder): CallSink {
    const legSink = new LegSink(leg, legOpts, (c, l) => this.park(req, caller, c, l));
    const tasks = this.opts.tasks;
    if (!tasks || req.method !== "tools/call" || !isTasksDeclared(req.envelope.clientCapabilities)) return legSink;
    const decision = tasks.policy.decide(typeof req.params.name === "string" ? req.params.name : "");
    if (decision.mode === "never") return legSink;
    const runtime: TaskRuntime = {
      answer: async (key, value) => {
        const call = holder.call;
        const pending = call?.pending.get(key);
        if (!call || !pending) return;
        call.pending.delete(key);
        await answerUpstream(this.ctx, call.session, pending.upstreamRequestId, { result: value });
      },
      cancel: (reason) => {
        holder.cancelled = reason;
        if (holder.call) cancelUpstream(this.ctx, holder.call, reason);
        else holder.inFlight?.(reason);
      },
    };
    return new PromotingSink(leg, legSink, {
      engine: tasks.engine,
      thresholdMs: decision.thresholdMs,
      eager: decision.mode === "always" || decision.mode === "required",
      create: () => tasks.engine.create(caller.caller, decision.ttlMs, decision.pollIntervalMs, runtime),
    });
  }

  private park(req: ModernRequest, caller: CallerContext, call: UpstreamCall, leg: ClientLeg): void {
    const exchangeId = newExchangeId();
    if (!this.parked.park(exchangeId, caller.caller, { call, caller: caller.caller })) {
      cancelUpstream(this.ctx, call, "too many pending input requests");
      this.release(call.session);
      leg.error({
        code: JSONRPC_INTERNAL_ERROR,
        message: `Too many pending input requests for this caller (limit ${this.opts.exchanges.maxPerCaller})`,
        data: { reason: "too_many_pending_inputs" },
      });
      return;
    }
    let digest: string;
    try {
      digest = paramsDigest(req.method, req.params);
    } catch {
      this.parked.claim(exchangeId, caller.caller);
      cancelUpstream(this.ctx, call, "arguments too deeply nested");
      this.release(call.session);
      leg.error({ code: JSONRPC_INVALID_PARAMS, message: "The call's arguments are nested too deeply for an input round trip" });
      return;
    }
    const requestState = this.codec.seal({ x: exchangeId, p: caller.caller, m: req.method, d: digest }, this.opts.exchanges.ttlMs);
    const inputRequests: JsonObject = {};
    for (const [key, p] of call.pending) inputRequests[key] = p.request;
    leg.result({ resultType: "input_required", inputRequests, requestState });
  }

  private async resume(req: ModernRequest, caller: CallerContext, leg: ClientLeg, legOpts: LegOptions): Promise<void> {
    const opened = this.codec.open(req.params.requestState, {
      p: caller.caller,
      m: req.method,
      d: () => paramsDigest(req.method, req.params),
    });
    const parked = opened.ok ? this.parked.claim(opened.claims.x, caller.caller) : undefined;
    if (!parked) {
      leg.error({
        code: JSONRPC_INVALID_PARAMS,
        message: "Invalid or expired requestState",
        data: { reason: "invalid_request_state", detail: opened.ok ? "unknown_or_used" : opened.reason },
      });
      return;
    }
    const { call } = parked;
    const responses = isRecord(req.params.inputResponses) ? req.params.inputResponses : {};
    const answers: Array<Promise<void>> = [];
    for (const [key, p] of [...call.pending]) {
      if (!(key in responses)) continue;
      call.pending.delete(key);
      answers.push(
        postRpc(
          this.opts.upstream,
          call.session.headers(),
          { jsonrpc: "2.0", id: p.upstreamRequestId, result: responses[key] },
          AbortSignal.timeout(10_000),
        ).then((a) => a.discard()),
      );
    }
    try {
      await Promise.all(answers);
    } catch (err) {
      cancelUpstream(this.ctx, call, "could not deliver input responses");
      this.release(call.session);
      const f = this.failureOf(req, err);
      leg.error(f.error, f.status, f.headers);
      return;
    }
    // Unanswered keys (unknown ones are ignored): ask again for what is still missing.
    if (call.pending.size > 0) {
      this.park(req, caller, call, leg);
      return;
    }
    const holder: CallHolder = {};
    await this.run(call, this.sinkFor(req, caller, leg, legOpts, holder), holder);
  }

  close(): void {
    this.parked.clear();
    this.listens.close();
  }
}
