// Serves modern (2026-07-28) requests over a legacy upstream: the routing.
// server/discover is synthesized from the pooled session's initialize,
// subscriptions/listen goes to listen.ts, and every other request becomes a
// LegacyCall (bridge-to-legacy/legacy-call.ts) read by drive.ts into a sink: a plain
// client leg, a leg that may become a task, or a task from the start. MRTR
// rounds are parked and resumed by mrtr.ts.
import type { Logger } from "../log/logger.js";
import { discoverFromInitialize, legacyParams, MRTR_METHODS, type CacheHints } from "../protocol/era-translate.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { HeaderLookup, ModernRequest } from "../protocol/modern-request.js";
import { internalError, type Fault } from "../protocol/errors.js";
import { checkParamHeaders } from "../protocol/param-headers.js";
import type { UpstreamClient } from "../upstream/client.js";
import { LegacySessionPool, type SessionSpec } from "./legacy-sessions.js";
import { LegacyCall, type ResumeTicket } from "./legacy-call.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { TaskResumer, TaskRuntime } from "../tasks/task-runtime.js";
import { toolName, type PromotionPlan } from "../tasks/promotion.js";
import type { CallTiming } from "../tasks/latency-history.js";
import { jsonResponse, faultResponse } from "../web/json-response.js";
import { ClientLeg } from "../calls/client-leg.js";
import type { Caller } from "../calls/caller.js";
import { LegSink, type CallSink, type LegOptions } from "../calls/call-sink.js";
import { PromotingSink, startTask, TaskSink } from "../calls/task-sinks.js";
import { timed } from "../calls/timed-sink.js";
import { drive, NO_GATHERING, type InputGathering } from "./drive.js";
import { MAX_TOOL_PAGES, ToolSchemas, type ToolSchemaLimits } from "./tool-schemas.js";
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
  /** Which input requests the upstream sends together become one round (eraBridge.inputGatherMs, maxInputRequestsPerRound). */
  gather?: InputGathering | undefined;
  /** What is kept of the upstream's tool schemas for Mcp-Param-* validation; default: nothing, no validation. */
  toolSchemas?: ToolSchemaLimits | undefined;
  /** Deadline for the gateway's own tools/list (upstream.controlTimeoutMs). */
  controlTimeoutMs?: number | undefined;
}

/** A sink that sees the result on its way (tools/list pages, for the tool schemas). */
function observeResult(sink: CallSink, seen: (result: JsonObject) => void): CallSink {
  return {
    get clientCapabilities() {
      return sink.clientCapabilities;
    },
    onGone: (listener) => sink.onGone(listener),
    progress: (params) => sink.progress(params),
    log: (params) => sink.log(params),
    inputRequired: (pending) => sink.inputRequired(pending),
    result: (result) => {
      seen(result);
      sink.result(result);
    },
    error: (error, status, headers) => sink.error(error, status, headers),
  };
}

export class LegacyBridge {
  private readonly mrtr: Mrtr;
  private readonly gather: InputGathering;
  private readonly tools: ToolSchemas;

  constructor(private readonly opts: LegacyBridgeOptions) {
    this.mrtr = new Mrtr(opts.exchanges, opts.now, opts.replicaId, opts.requestStateKey);
    this.gather = opts.gather ?? NO_GATHERING;
    this.tools = new ToolSchemas(opts.toolSchemas ?? { ttlMs: 0, maxBytes: 0 }, opts.now);
  }

  get pendingExchanges(): number {
    return this.mrtr.size;
  }

  /** What to answer when reaching the upstream failed (logged: the operator wants to know). */
  private faultOf(req: ModernRequest, err: unknown): Fault {
    const fault = legacyCallFault(err, this.opts.upstream.name);
    const data = isRecord(fault.error.data) ? fault.error.data : {};
    this.opts.log.warn("upstream request failed", {
      method: req.method,
      reason: String(data.reason),
      cause: String(data.cause ?? ""),
    });
    return fault;
  }

  /** For an MRTR retry: the other replica holding its parked call, if any. */
  retryRunner(req: ModernRequest, caller: string): string | undefined {
    return req.params.requestState !== undefined && MRTR_METHODS.has(req.method)
      ? this.mrtr.runnerOf(req, caller)
      : undefined;
  }

  async discover(req: ModernRequest, caller: Caller): Promise<Response> {
    try {
      const session = await this.opts.pool.acquire(sessionSpec(req, caller), caller.signal);
      return jsonResponse(200, {
        jsonrpc: "2.0",
        id: req.id,
        result: discoverFromInitialize(session.init, this.opts.hints, true),
      });
    } catch (err) {
      return faultResponse(req.id, this.faultOf(req, err));
    }
  }

  /**
   * A request that goes upstream as a call: tools/call (maybe a task), lists,
   * reads, prompts, completions. `headers`: the client's request headers, for
   * the Mcp-Param-* check of a tools/call.
   */
  handle(req: ModernRequest, caller: Caller, plan: PromotionPlan, headers?: HeaderLookup): Promise<Response> {
    const leg = new ClientLeg(req.id, req.envelope.progressToken, caller.signal, this.opts.keepAliveMs);
    const legOpts: LegOptions = {
      logLevel: req.envelope.logLevel,
      clientCapabilities: req.envelope.clientCapabilities,
    };
    const work = (async () => {
      if (headers && req.method === "tools/call" && this.tools.enabled) {
        const refused = await this.checkParamHeaders(req, caller, headers);
        if (refused) {
          leg.error(refused.error, refused.status);
          return;
        }
      }
      await (req.params.requestState !== undefined && MRTR_METHODS.has(req.method)
        ? this.resume(req, caller, leg, legOpts, plan)
        : this.start(req, caller, leg, legOpts, plan));
    })();
    // Nothing thrown while a call runs may escape as an unhandled rejection: it becomes the answer.
    work.catch((err: unknown) => {
      this.opts.log.error("bridged call failed", { method: req.method, cause: (err as Error).message });
      const fault = internalError(req.method);
      leg.error(fault.error, fault.status);
    });
    return leg.response;
  }

  /**
   * Mcp-Param-* headers against the tool's x-mcp-header annotations (SEP-2243),
   * learnt from the tools/list answers bridged for this caller's upstream view,
   * or asked for when the tool was not listed. A tool the upstream does not list
   * has nothing to check (the upstream answers the call); an upstream that cannot
   * be asked leaves it to the call itself, which then fails the same way.
   */
  private async checkParamHeaders(
    req: ModernRequest,
    caller: Caller,
    headers: HeaderLookup,
  ): Promise<Fault | undefined> {
    const spec = sessionSpec(req, caller);
    const view = LegacySessionPool.keyOf(spec);
    const tool = toolName(req);
    let annotations = this.tools.lookup(view, tool);
    if (annotations === "unknown") {
      try {
        annotations = this.tools.lookup(this.tools.replace(view, await this.listTools(spec, caller.signal)), tool);
      } catch (err) {
        this.opts.log.warn("could not list the upstream's tools for Mcp-Param-* validation", {
          cause: (err as Error).message,
        });
        return undefined;
      }
    }
    return typeof annotations === "string" ? undefined : checkParamHeaders(annotations, req.params.arguments, headers);
  }

  /**
   * Every tool the upstream lists for this caller (pinned definitions, docs/pinning.md), on a pooled session
   * opened with the caller's credentials and no declared capabilities.
   */
  async listToolsAs(caller: Pick<Caller, "credentialHeaders" | "partition">, signal: AbortSignal): Promise<unknown[]> {
    const spec: SessionSpec = {
      credentialHeaders: caller.credentialHeaders,
      capabilities: {},
      clientInfo: undefined,
      partition: caller.partition,
    };
    const pages = await this.listTools(spec, signal);
    return pages.flatMap((page) => (isRecord(page) && Array.isArray(page.tools) ? (page.tools as unknown[]) : []));
  }

  /** Every tools/list page the upstream has for this view (at most MAX_TOOL_PAGES), under the control deadline. */
  private async listTools(spec: SessionSpec, signal: AbortSignal): Promise<unknown[]> {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.opts.controlTimeoutMs ?? 10_000)]);
    const pages: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const call = new LegacyCall(this.opts.upstream, this.opts.pool, spec, "tools/list");
      const stop = (): void => call.cancel("tools/list for header validation timed out");
      deadline.addEventListener("abort", stop, { once: true });
      let answer: unknown;
      try {
        const params: JsonObject = cursor === undefined ? {} : { cursor };
        await call.send(() => params);
        if (deadline.aborted) throw deadline.reason;
        for (;;) {
          const next = await call.messages.next();
          if (next.done) throw new Error("the upstream ended tools/list without answering");
          if (isRecord(next.value) && next.value.id === call.upstreamId) {
            answer = next.value;
            break;
          }
        }
      } finally {
        deadline.removeEventListener("abort", stop);
        call.end();
      }
      if (!isRecord(answer) || !isRecord(answer.result)) throw new Error("the upstream refused tools/list");
      pages.push(answer.result);
      cursor = typeof answer.result.nextCursor === "string" ? answer.result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    return pages;
  }

  private async start(
    req: ModernRequest,
    caller: Caller,
    leg: ClientLeg,
    legOpts: LegOptions,
    plan: PromotionPlan,
  ): Promise<void> {
    // The client's traceparent goes with its call on the pooled session (the session's own requests carry none).
    const call = new LegacyCall(
      this.opts.upstream,
      this.opts.pool,
      sessionSpec(req, caller),
      req.method,
      caller.traceHeaders,
    );
    let planned = await this.sinkFor(req, caller, leg, legOpts, plan, call);
    if (!planned) return;
    // A task from the start (always/required): its call is the task's background call, in the task's trace context.
    const taskId = planned instanceof TaskSink ? planned.taskId : undefined;
    if (req.method === "tools/list" && this.tools.enabled) {
      // What a client lists is what it will call: its x-mcp-header annotations are kept for the check above.
      const view = LegacySessionPool.keyOf(sessionSpec(req, caller));
      planned = observeResult(planned, (result) => this.tools.record(view, result, req.params.cursor === undefined));
    }
    // Timed for the latency history (adaptive promotion): plain or task, every answer is a sample.
    const timing = plan.kind === "plain" || plan.kind === "task" ? plan.timing : undefined;
    const sink = timed(planned, timing);
    // A client that leaves before its answer cancels the call (a task's sink has no client to lose).
    sink.onGone(() => call.cancel("client disconnected"));
    try {
      // Timed from here: the plan came before the task was stored.
      timing?.sent();
      await this.opts.engine.inTaskContext(taskId, () => call.send((token) => legacyParams(req.params, token)));
    } catch (err) {
      const fault = this.faultOf(req, err);
      // A challenge goes to the client with its header (if no task has answered it yet); a promoted task ends failed.
      sink.error(fault.error, fault.status, fault.headers);
      return;
    }
    this.read(call, sink);
  }

  /**
   * Reads the call into its sink, on its own: the request's frames (this one, handle()'s, the route's) end
   * here instead of waiting for the answer. A call that becomes a task may run for hours, and a reader they
   * awaited would keep the whole request alive that long (its Hono context, IncomingMessage and
   * ServerResponse, the client leg, the request's signal): 11 KB of live heap per working task (issue 14,
   * bench/RESULTS.md). A failure of the reader itself is the sink's answer.
   */
  private read(call: LegacyCall, sink: CallSink): void {
    drive(this.opts.upstream.name, this.opts.hints, call, sink, this.gather).catch((err: unknown) => {
      this.opts.log.error("bridged call failed", { method: call.method, cause: (err as Error).message });
      call.cancel("the gateway failed reading the call");
      const fault = internalError(call.method);
      sink.error(fault.error, fault.status);
    });
  }

  /** The sink for a call, per the promotion plan; undefined when the leg was already answered (a refusal). */
  private async sinkFor(
    req: ModernRequest,
    caller: Caller,
    leg: ClientLeg,
    legOpts: LegOptions,
    plan: PromotionPlan,
    call: LegacyCall,
  ): Promise<CallSink | undefined> {
    // The closures below live as long as the call (hours, for a task): they keep the caller's digest, not the
    // caller itself, which holds the request's headers, claims and signal.
    const owner = caller.caller;
    const legSink = new LegSink(leg, legOpts, (l) => this.mrtr.park(req, owner, call, l));
    if (plan.kind !== "task") return legSink;
    const { decision, timing } = plan;
    const runtime = this.runtimeOf(call, legOpts.clientCapabilities, timing);
    const about = {
      tool: toolName(req),
      subject: caller.subject,
      caller: owner,
      mode: decision.mode,
      upstream: this.opts.upstream.name,
    };
    // The poll hint is taken when the task is created: at once, or at the threshold (adaptive promotion).
    const create = () =>
      this.opts.engine.create(
        owner,
        decision.ttlMs,
        timing?.pollIntervalMs() ?? decision.pollIntervalMs,
        runtime,
        about,
      );
    if (!plan.eager) {
      return new PromotingSink(leg, legSink, {
        engine: this.opts.engine,
        thresholdMs: decision.thresholdMs,
        create,
        onPromoted: () => timing?.promoted("atThreshold"),
      });
    }
    const started = await startTask(leg, legOpts.clientCapabilities, this.opts.engine, create);
    if ("fault" in started) {
      // Promoted at once by the latency history: a refusal (limits, store, draining) keeps the call plain, as auto does.
      if (plan.atOnce) return legSink;
      leg.error(started.fault.error, started.fault.status, started.fault.headers);
      return undefined;
    }
    timing?.promoted(plan.atOnce ? "atOnce" : "eager");
    return started.sink;
  }

  /** How a task reaches its call: answers to input requests, cancel, and detach for a handoff. */
  private runtimeOf(call: LegacyCall, clientCapabilities: JsonObject, timing?: CallTiming): TaskRuntime {
    return {
      answer: async (key, value) => {
        const pending = call.pending.get(key);
        if (!pending) return;
        call.pending.delete(key);
        await call.answer(pending.upstreamRequestId, { result: value });
      },
      cancel: (reason) => {
        timing?.cancelled();
        call.cancel(reason);
      },
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
        void drive(this.opts.upstream.name, this.opts.hints, call, sink, this.gather).catch((err: unknown) =>
          this.opts.log.error("resumed task call failed", { cause: (err as Error).message }),
        );
      },
    };
  };

  private async resume(
    req: ModernRequest,
    caller: Caller,
    leg: ClientLeg,
    legOpts: LegOptions,
    plan: PromotionPlan,
  ): Promise<void> {
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
    const planned = await this.sinkFor(req, caller, leg, legOpts, plan, call);
    if (!planned) {
      call.cancel("task refused");
      return;
    }
    const sink = timed(planned, plan.kind === "plain" || plan.kind === "task" ? plan.timing : undefined);
    sink.onGone(() => call.cancel("client disconnected"));
    this.read(call, sink);
  }

  close(): void {
    this.mrtr.clear();
  }
}
