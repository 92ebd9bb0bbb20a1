// Tasks in front of a modern (2026-07-28) upstream that does not serve the
// Tasks extension itself. The call goes upstream as the client sent it, minus
// the extension in clientCapabilities (the upstream must not answer with a task
// of its own) and with a gateway-chosen id and progress token. It races the
// threshold like a legacy call; once it is a task:
//   - progress folds into statusMessage;
//   - an `input_required` answer (the upstream's MRTR) becomes the task's
//     inputRequests (keys prefixed per round, so they stay unique for the task's
//     life), and when tasks/update has answered them all, the gateway retries the
//     upstream request with inputResponses and requestState itself.
// Before promotion, the upstream's own input_required reaches the client as is.
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { META, type ModernRequest } from "../protocol/modern-request.js";
import {
  internalError,
  modernErrorStatus,
  upstreamErrorOf,
  upstreamFault,
  upstreamNoAnswer,
} from "../protocol/errors.js";
import { TASKS_EXTENSION, withoutTasksExtension } from "../protocol/tasks-extension.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { TaskRuntime } from "../tasks/task-runtime.js";
import { toolName, type PromotionPlan } from "../tasks/promotion.js";
import type { UpstreamClient } from "../upstream/client.js";
import { postRpc } from "../upstream/rpc.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import type { Caller } from "../calls/caller.js";
import { ClientLeg } from "../calls/client-leg.js";
import { LegSink, type CallSink } from "../calls/call-sink.js";
import { PromotingSink, startTask } from "../calls/task-sinks.js";
import { timed } from "../calls/timed-sink.js";

export interface ModernTaskOptions {
  upstream: UpstreamClient;
  engine: TaskEngine;
  keepAliveMs: number;
  log: Logger;
}

/** Params for the upstream: the tasks extension removed from the declared capabilities, our progress token. */
function upstreamParams(params: JsonObject, progressToken: string, extra: JsonObject): JsonObject {
  const meta = isRecord(params._meta) ? { ...params._meta } : {};
  const caps = meta[META.clientCapabilities];
  if (isRecord(caps)) meta[META.clientCapabilities] = withoutTasksExtension(caps);
  meta.progressToken = progressToken;
  // The legacy `task` parameter means nothing on the modern surface.
  const { inputResponses: _ir, requestState: _rs, task: _task, ...rest } = params;
  return { ...rest, ...extra, _meta: meta };
}

export class ModernTaskFront {
  private seq = 0;

  constructor(private readonly opts: ModernTaskOptions) {}

  /** The upstream's discover answer, with the Tasks extension the gateway now serves in front of it. */
  async discover(req: ModernRequest, headers: string[], signal: AbortSignal): Promise<Response> {
    let answer: Awaited<ReturnType<typeof postRpc>>;
    try {
      answer = await postRpc(
        this.opts.upstream,
        headers,
        { jsonrpc: "2.0", id: req.id, method: req.method, params: req.params },
        signal,
      );
    } catch (err) {
      return faultResponse(req.id, upstreamFault(err, this.opts.upstream.name));
    }
    let message: unknown;
    for await (const m of answer.messages) {
      if (isRecord(m) && m.id === req.id) {
        message = m;
        break;
      }
    }
    answer.discard();
    if (isRecord(message) && isRecord(message.result)) {
      const caps = isRecord(message.result.capabilities) ? message.result.capabilities : {};
      const extensions = isRecord(caps.extensions) ? caps.extensions : {};
      message = {
        ...message,
        result: { ...message.result, capabilities: { ...caps, extensions: { ...extensions, [TASKS_EXTENSION]: {} } } },
      };
    }
    return message
      ? jsonResponse(answer.status, message)
      : faultResponse(req.id, upstreamNoAnswer(this.opts.upstream.name, req.method));
  }

  /** A tools/call whose plan is "task": it runs in front of the upstream and may become (or start as) a task. */
  /** `who`: the caller's identity digest, and how audit lines name it. */
  handle(
    req: ModernRequest,
    headers: string[],
    who: Pick<Caller, "caller" | "subject">,
    signal: AbortSignal,
    plan: Extract<PromotionPlan, { kind: "task" }>,
  ): Promise<Response> {
    // Only these two are kept: closures below live as long as the call (hours, for a task), and a route's
    // caller holds the request's headers and signal.
    const { caller, subject } = who;
    const { decision, timing } = plan;
    const leg = new ClientLeg(req.id, req.envelope.progressToken, signal, this.opts.keepAliveMs);
    let current: AbortController | undefined;
    let cancelled = false;
    // Answers for the current round's keys; the round is retried once all are in.
    let waiting: { keys: Map<string, string>; answers: JsonObject; resolve: () => void } | undefined;
    const runtime: TaskRuntime = {
      answer: (key, value) => {
        if (!waiting) return Promise.resolve();
        const upstreamKey = waiting.keys.get(key);
        if (upstreamKey === undefined) return Promise.resolve();
        waiting.answers[upstreamKey] = value;
        waiting.keys.delete(key);
        if (waiting.keys.size === 0) waiting.resolve();
        return Promise.resolve();
      },
      cancel: () => {
        timing?.cancelled();
        // Closing the request stream is cancellation on modern Streamable HTTP.
        cancelled = true;
        current?.abort();
        waiting?.resolve();
      },
    };
    // Before promotion the upstream's answers are already modern and pass as they are; an input_required
    // result is an answer like any other (the client retries), so nothing is ever parked here.
    const legSink = new LegSink(
      leg,
      { logLevel: req.envelope.logLevel, clientCapabilities: req.envelope.clientCapabilities },
      () => undefined,
    );
    // The poll hint is taken when the task is created: at once, or at the threshold (adaptive promotion).
    const create = () =>
      this.opts.engine.create(caller, decision.ttlMs, timing?.pollIntervalMs() ?? decision.pollIntervalMs, runtime, {
        caller,
        subject,
        tool: toolName(req),
        mode: decision.mode,
        upstream: this.opts.upstream.name,
      });
    leg.onClose(() => {
      // The client left before its answer (never after a task handle: the leg was answered).
      timing?.cancelled();
      current?.abort();
    });

    let sink:
      (CallSink & { readonly taskId?: string | undefined; readonly promotionSettled?: Promise<void> }) | undefined;
    const run = async (): Promise<void> => {
      // always/required: the task exists before the call goes upstream.
      const started = plan.eager
        ? await startTask(leg, req.envelope.clientCapabilities, this.opts.engine, create)
        : undefined;
      if (started && "sink" in started) {
        timing?.promoted(plan.atOnce ? "atOnce" : "eager");
        sink = timed(started.sink, timing);
      } else if (started && !plan.atOnce) {
        leg.error(started.fault.error, started.fault.status, started.fault.headers);
        return;
      } else if (started) {
        // Promoted at once by the latency history: a refusal (limits, store, draining) keeps the call plain, as auto does.
        sink = timed(legSink, timing);
      } else {
        const promotion = {
          engine: this.opts.engine,
          thresholdMs: decision.thresholdMs,
          create,
          onPromoted: () => timing?.promoted("atThreshold"),
        };
        sink = timed(new PromotingSink(leg, legSink, promotion), timing);
      }
      const target = sink;
      // Round 1 is the client's own request: a retry of the upstream's MRTR keeps its answers and state.
      let extra: JsonObject = {
        ...(req.params.inputResponses !== undefined && { inputResponses: req.params.inputResponses }),
        ...(req.params.requestState !== undefined && { requestState: req.params.requestState }),
      };
      for (let round = 1; !cancelled; round++) {
        const id = `gw-m-${++this.seq}`;
        const token = `${id}-progress`;
        current = new AbortController();
        // Timed from the first round's request: the plan came before the task was stored.
        timing?.sent();
        let final: JsonObject | undefined;
        try {
          const signal = current.signal;
          // Once the call is a task, its requests (a retry after input, or the first one of an eager task) are the task's.
          const answer = await this.opts.engine.inTaskContext(target.taskId, () =>
            postRpc(
              this.opts.upstream,
              headers,
              { jsonrpc: "2.0", id, method: req.method, params: upstreamParams(req.params, token, extra) },
              signal,
            ),
          );
          for await (const m of answer.messages) {
            if (!isRecord(m)) continue;
            if (m.id === id && ("result" in m || "error" in m)) {
              final = m;
              break;
            }
            const params = isRecord(m.params) ? m.params : {};
            if (m.method === "notifications/progress" && params.progressToken === token) target.progress(params);
            else if (m.method === "notifications/message") target.log(params);
          }
          answer.discard();
        } catch (err) {
          if (cancelled || (leg.closed && target.taskId === undefined)) return;
          const fault = upstreamFault(err, this.opts.upstream.name);
          target.error(fault.error, fault.status);
          return;
        }
        if (!final) {
          const fault = upstreamNoAnswer(this.opts.upstream.name, req.method);
          target.error(fault.error, fault.status);
          return;
        }
        if ("error" in final) {
          // The status a modern server gives this error (-32020/-32021/-32022: 400, -32601: 404), as on the bridge.
          const error = upstreamErrorOf(final.error);
          target.error(error, modernErrorStatus(error.code));
          return;
        }
        const result = isRecord(final.result) ? final.result : {};
        await target.promotionSettled;
        const taskId = target.taskId;
        if (result.resultType !== "input_required" || taskId === undefined) {
          target.result(result);
          return;
        }
        // Input inside a task: the call's time is now the client's, not the tool's.
        timing?.inputRequested(false);
        // The upstream needs input inside a task: surface it as the task's inputRequests.
        const requests = isRecord(result.inputRequests) ? result.inputRequests : {};
        const keys = new Map<string, string>();
        const answered = new Promise<void>((resolve) => (waiting = { keys, answers: {}, resolve }));
        for (const [key, request] of Object.entries(requests)) {
          const taskKey = `r${round}-${key}`;
          keys.set(taskKey, key);
          if (isRecord(request)) await this.opts.engine.apply(taskId, { type: "input", key: taskKey, request });
        }
        if (keys.size > 0) await answered;
        extra = {
          inputResponses: waiting?.answers ?? {},
          ...(typeof result.requestState === "string" && { requestState: result.requestState }),
        };
        waiting = undefined;
      }
    };
    run().catch((err: unknown) => {
      this.opts.log.error("task call in front of a modern upstream failed", { cause: (err as Error).message });
      const fault = internalError(req.method);
      // A task that exists ends failed; otherwise the client gets the error.
      if (sink) sink.error(fault.error, fault.status);
      else leg.error(fault.error, fault.status);
    });
    return leg.response;
  }
}
