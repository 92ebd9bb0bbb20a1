// Serves modern (2026-07-28) requests over a legacy upstream: the routing.
// server/discover is synthesized from the pooled session's initialize,
// subscriptions/listen goes to listen.ts, and every other request becomes a
// LegacyCall (upstream/legacy-call.ts) read by drive.ts into a sink: a plain
// client leg, a leg that may become a task, or a task from the start. MRTR
// rounds are parked and resumed by mrtr.ts.
import type { Logger } from "../log/logger.js";
import { discoverFromInitialize, legacyParams, MRTR_METHODS, type CacheHints } from "../protocol/era-translate.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import { internalError, type Fault } from "../protocol/errors.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { LegacySessionPool } from "../upstream/legacy-sessions.js";
import { LegacyCall, type ResumeTicket } from "../upstream/legacy-call.js";
import type { TaskEngine, TaskResumer, TaskRuntime } from "../tasks/engine.js";
import type { PromotionPlan } from "../tasks/promotion.js";
import { jsonResponse, faultResponse } from "../web/json-response.js";
import { ClientLeg } from "../calls/client-leg.js";
import type { CallerContext } from "../calls/caller.js";
import { LegSink, type CallSink, type LegOptions } from "../calls/call-sink.js";
import { PromotingSink, startTask, TaskSink } from "../calls/task-sinks.js";
import { drive } from "./drive.js";
import { Mrtr } from "./mrtr.js";
import { sessionSpec } from "./session-spec.js";
import { legacyCallFault } from "./call-fault.js";
import type { ParkLimits } from "./parked-calls.js";

export interface LegacyBridgeOptions {
  engine: TaskEngine;
  upstream: UpstreamClient;
  pool: LegacySessionPool;
  hints: CacheHints;
  exchanges: ParkLimits;
  keepAliveMs: number;
  now: () => number;
  log: Logger;
  /** This replica's id (in MRTR state, so a retry finds the replica holding the call). */
  replicaId: string;
  /** The requestState signing key, shared by replicas; default: drawn at start. */
  requestStateKey?: Buffer | undefined;
}

export class LegacyBridge {
  private readonly mrtr: Mrtr;

  constructor(private readonly opts: LegacyBridgeOptions) {
    this.mrtr = new Mrtr(opts.exchanges, opts.now, opts.replicaId, opts.requestStateKey);
  }

  get pendingExchanges(): number {
    return this.mrtr.size;
  }

  /** What to answer when reaching the upstream failed (logged: the operator wants to know). */
  private faultOf(req: ModernRequest, err: unknown): Fault {
    const fault = legacyCallFault(err, this.opts.upstream.displayUrl);
    const data = isRecord(fault.error.data) ? fault.error.data : {};
    this.opts.log.warn("upstream request failed", { method: req.method, reason: String(data.reason), cause: String(data.cause ?? "") });
    return fault;
  }

  /** For an MRTR retry: the other replica holding its parked call, if any. */
  retryRunner(req: ModernRequest, caller: string): string | undefined {
    return req.params.requestState !== undefined && MRTR_METHODS.has(req.method) ? this.mrtr.runnerOf(req, caller) : undefined;
  }

  async discover(req: ModernRequest, caller: CallerContext): Promise<Response> {
    try {
      const session = await this.opts.pool.acquire(sessionSpec(req, caller), caller.signal);
      return jsonResponse(200, { jsonrpc: "2.0", id: req.id, result: discoverFromInitialize(session.init, this.opts.hints, true) });
    } catch (err) {
      return faultResponse(req.id, this.faultOf(req, err));
    }
  }

  /** A request that goes upstream as a call: tools/call (maybe a task), lists, reads, prompts, completions. */
  handle(req: ModernRequest, caller: CallerContext, plan: PromotionPlan): Promise<Response> {
    const leg = new ClientLeg(req.id, req.envelope.progressToken, caller.signal, this.opts.keepAliveMs);
    const legOpts: LegOptions = { logLevel: req.envelope.logLevel, clientCapabilities: req.envelope.clientCapabilities };
    const work = req.params.requestState !== undefined && MRTR_METHODS.has(req.method)
      ? this.resume(req, caller, leg, legOpts, plan)
      : this.start(req, caller, leg, legOpts, plan);
    // Nothing thrown while a call runs may escape as an unhandled rejection: it becomes the answer.
    work.catch((err: unknown) => {
      this.opts.log.error("bridged call failed", { method: req.method, cause: (err as Error).message });
      const fault = internalError(req.method);
      leg.error(fault.error, fault.status);
    });
    return leg.response;
  }

  private async start(req: ModernRequest, caller: CallerContext, leg: ClientLeg, legOpts: LegOptions, plan: PromotionPlan): Promise<void> {
    const call = new LegacyCall(this.opts.upstream, this.opts.pool, sessionSpec(req, caller), req.method);
    const sink = await this.sinkFor(req, caller, leg, legOpts, plan, call);
    if (!sink) return;
    // A client that leaves before its answer cancels the call (a task's sink has no client to lose).
    sink.onGone(() => call.cancel("client disconnected"));
    try {
      await call.send((token) => legacyParams(req.params, token));
    } catch (err) {
      const fault = this.faultOf(req, err);
      // A challenge goes to the client with its header (if no task has answered it yet); a promoted task ends failed.
      sink.error(fault.error, fault.status, fault.headers);
      return;
    }
    await drive(this.opts.upstream.displayUrl, this.opts.hints, call, sink);
  }

  /** The sink for a call, per the promotion plan; undefined when the leg was already answered (a refusal). */
  private async sinkFor(
    req: ModernRequest,
    caller: CallerContext,
    leg: ClientLeg,
    legOpts: LegOptions,
    plan: PromotionPlan,
    call: LegacyCall,
  ): Promise<CallSink | undefined> {
    const legSink = new LegSink(leg, legOpts, (l) => this.mrtr.park(req, caller.caller, call, l));
    if (plan.kind !== "task") return legSink;
    const { decision } = plan;
    const runtime = this.runtimeOf(call, legOpts.clientCapabilities);
    const create = () => this.opts.engine.create(caller.caller, decision.ttlMs, decision.pollIntervalMs, runtime);
    if (!plan.eager) return new PromotingSink(leg, legSink, { engine: this.opts.engine, thresholdMs: decision.thresholdMs, create });
    const started = await startTask(leg, legOpts.clientCapabilities, this.opts.engine, create);
    if ("fault" in started) {
      leg.error(started.fault.error, started.fault.status, started.fault.headers);
      return undefined;
    }
    return started.sink;
  }

  /** How a task reaches its call: answers to input requests, cancel, and detach for a handoff. */
  private runtimeOf(call: LegacyCall, clientCapabilities: JsonObject): TaskRuntime {
    return {
      answer: async (key, value) => {
        const pending = call.pending.get(key);
        if (!pending) return;
        call.pending.delete(key);
        await call.answer(pending.upstreamRequestId, { result: value });
      },
      cancel: (reason) => call.cancel(reason),
      detach: () => {
        const ticket = call.detach();
        return ticket && { ...ticket, clientCapabilities };
      },
    };
  }

  /** Picks up a task call another gateway instance handed on (TaskResumer). */
  readonly resumeTask: TaskResumer = async (taskId, ticket) => {
    const t = ticket as ResumeTicket & { clientCapabilities: JsonObject };
    const call = await LegacyCall.resume(this.opts.upstream, this.opts.pool, t, this.opts.now());
    const sink = new TaskSink(this.opts.engine, taskId, t.clientCapabilities);
    return {
      runtime: this.runtimeOf(call, t.clientCapabilities),
      start: () => {
        // Input the old instance read but may not have recorded: announcing a key again changes nothing.
        if (call.pending.size > 0) sink.inputRequired(call.pending);
        void drive(this.opts.upstream.displayUrl, this.opts.hints, call, sink).catch((err: unknown) =>
          this.opts.log.error("resumed task call failed", { cause: (err as Error).message }),
        );
      },
    };
  };

  private async resume(req: ModernRequest, caller: CallerContext, leg: ClientLeg, legOpts: LegOptions, plan: PromotionPlan): Promise<void> {
    const resumed = await this.mrtr.resume(req, caller.caller);
    if ("fault" in resumed) {
      leg.error(resumed.fault.error, resumed.fault.status);
      return;
    }
    if ("failed" in resumed) {
      const fault = this.faultOf(req, resumed.error);
      leg.error(fault.error, fault.status, fault.headers);
      return;
    }
    const { call } = resumed;
    // Keys still unanswered (unknown ones are ignored): ask again for what is missing.
    if (call.pending.size > 0) {
      this.mrtr.park(req, caller.caller, call, leg);
      return;
    }
    // The retry is a call of its own: it may become a task too (always: a task from here on).
    const sink = await this.sinkFor(req, caller, leg, legOpts, plan, call);
    if (!sink) {
      call.cancel("task refused");
      return;
    }
    sink.onGone(() => call.cancel("client disconnected"));
    await drive(this.opts.upstream.displayUrl, this.opts.hints, call, sink);
  }

  close(): void {
    this.mrtr.clear();
  }
}
