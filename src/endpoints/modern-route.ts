// The modern (2026-07-28) surface: validation errors are answered here; valid
// requests go to a modern upstream as they are (pass-through, still streaming)
// or to the era bridge when the upstream is legacy.
import type { LegacyBridge } from "../bridge-to-legacy/bridge.js";
import type { LegacyListens } from "../bridge-to-legacy/listen.js";
import type { ModernTaskFront } from "../modern-upstream/task-front.js";
import type { Logger } from "../log/logger.js";
import { isRecord } from "../protocol/json.js";
import { answerTooLarge, runnerUnreachable, storeUnavailable, upstreamFault } from "../protocol/errors.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { AnswerTooLargeError, editResponse } from "../web/edit-response.js";
import type { Classification, ModernNotification, ModernRequest, Rejection } from "../protocol/modern-request.js";
import { upstreamRequestHeaders } from "../protocol/headers.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import type { TaskEngine } from "../tasks/engine.js";
import { serveTaskMethod, type TaskMethodAnswer } from "../tasks/methods.js";
import { planPromotion } from "../tasks/promotion.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import { faultResponse, jsonResponse, resultTextResponse } from "../web/json-response.js";
import type { Callers } from "../policy/sets/identity.js";
import type { Exchange } from "../server/exchange.js";
import { callerOf, identify } from "../server/identify.js";
import type { InFlight } from "../http/inflight.js";
import type { ReplicaForwarder } from "../replicas/forward.js";
import type { PolicySet } from "../policy/sets/policy-set.js";
import { MAX_EDITED_ANSWER_BYTES } from "../http/proxy.js";

export interface ModernRouteDeps {
  /** Who is calling (shared by every route, with its digest cache). */
  callers: Callers;
  upstream: UpstreamClient;
  era: UpstreamEra;
  bridge: LegacyBridge;
  listens: LegacyListens;
  engine: TaskEngine;
  modernTasks: ModernTaskFront;
  log: Logger;
  /** `edit`: rewrite the answer (tools/list under access rules). */
  passThrough: (ex: Exchange, edit?: ResultEdit) => Promise<Response>;
  inflight: InFlight;
  /** Sends task control and MRTR retries to the replica that runs the call. */
  forwarder: ReplicaForwarder;
  /** Bounds on a forwarded request's answer: task control, and an MRTR retry (the upstream call's own answer). */
  forwardTimeouts: { control: number; retry: number };
  /** Adaptive promotion's latency history (tasks.adaptive), handed to planPromotion. */
  history?: LatencyHistory | undefined;
}

/**
 * Registers a bridged answer as in flight until its body has been fully read (or
 * cancelled), so graceful shutdown waits for it like for a proxied call.
 */
async function trackUntilDone(
  work: Promise<Response>,
  inflight: InFlight,
  longLived: boolean,
  stop: () => void,
): Promise<Response> {
  // Stopping counts as done: the call is cut (its upstream cancelled), whatever its answer would have been.
  const release: () => void = inflight.add({
    longLived,
    stop: () => {
      stop();
      release();
    },
  });
  let res: Response;
  try {
    res = await work;
  } catch (err) {
    release();
    throw err;
  }
  // A JSON answer is complete in memory and written at once; wrapping it would also cost node-server's
  // fast path for string bodies. Only event streams are followed to their end.
  // Content type first: reading `body` of @hono/node-server's lightweight Response builds the real one with a
  // ReadableStream (1.5 % of the era bridge's CPU in its profile), which a JSON answer never needs.
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream") || !res.body) {
    release();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

function isTaskOnlyListen(req: ModernRequest): boolean {
  const n = req.params.notifications;
  return isRecord(n) && n.taskIds !== undefined && Object.keys(n).every((k) => k === "taskIds");
}

/** A served task method, or undefined (deferred); a store that fails is a clear 503, not a crash. */
async function taskAnswer(
  work: Promise<TaskMethodAnswer | undefined>,
  log: Logger,
): Promise<TaskMethodAnswer | undefined> {
  try {
    return await work;
  } catch (err) {
    log.warn("task store failed", { cause: (err as Error).message });
    return { fault: storeUnavailable() };
  }
}

export function createModernRoute(deps: ModernRouteDeps) {
  const { bridge, listens, log } = deps;

  const { callers } = deps;

  /** The answer with the caller's denied tools taken out; a page too large to read whole is a clear 502. */
  const filtered = async (work: Promise<Response>, id: ModernRequest["id"], edit: ResultEdit): Promise<Response> => {
    try {
      return await editResponse(await work, id, edit, MAX_EDITED_ANSWER_BYTES);
    } catch (err) {
      if (err instanceof AnswerTooLargeError) return faultResponse(id, answerTooLarge(err.limit));
      throw err;
    }
  };

  const reject = (r: Rejection): Response => jsonResponse(r.status, { jsonrpc: "2.0", id: r.id, error: r.error });

  const notification = (ex: Exchange, n: ModernNotification): Response => {
    // The only client notification on modern HTTP: the 2.x client ends a listen with notifications/cancelled.
    if (n.method === "notifications/cancelled" && isRecord(n.params)) {
      listens.cancel(callerOf(callers, ex), n.params.requestId);
    }
    return new Response(null, { status: 202 });
  };

  const request = async (ex: Exchange, req: ModernRequest, set: PolicySet): Promise<Response> => {
    // Answers the gateway produces itself (the bridges) count as in flight for graceful shutdown; the
    // shutdown's stop ends them like a client that left, which cancels their upstream calls.
    const stopper = ex.controller();
    const signal = stopper.signal;
    // Only credential headers identify the caller and travel on pooled sessions (no hop-by-hop among them).
    const who = identify(callers, ex, signal);
    const { caller, claims } = who;
    // Access was decided by the pipeline's access step: a denied call never gets here, a tools/list is filtered.
    const listEdit = ex.answerEdit;
    // A request another replica forwarded here (verified on the internal listener) is answered here, never forwarded again.
    const forwarded = ex.forwarded !== undefined;
    const respond = (answer: TaskMethodAnswer): Response | Promise<Response> => {
      if ("fault" in answer) return faultResponse(req.id, answer.fault);
      if ("resultJson" in answer) return resultTextResponse(req.id, answer.resultJson);
      if (forwarded) return faultResponse(req.id, runnerUnreachable("it moved while the request was forwarded"));
      return deps.forwarder.forward(ex, req.id, answer.forward, deps.forwardTimeouts.control);
    };
    // The gateway's own tasks are answered at once, whatever the upstream speaks (no era probe, one lookup).
    if (TASK_METHODS.has(req.method)) {
      const own = await taskAnswer(serveTaskMethod(deps.engine, req, caller, "defer", deps.upstream.name), log);
      if (own) return respond(own);
    }
    const tracked = (work: Promise<Response>): Promise<Response> =>
      trackUntilDone(work, deps.inflight, req.method === "subscriptions/listen", () => stopper.abort());
    let era;
    try {
      era = await deps.era.get(who.credentialHeaders, signal);
    } catch (err) {
      const fault = upstreamFault(err, deps.upstream.name);
      log.warn("upstream era probe failed", { reason: fault.failure.reason, cause: fault.failure.cause });
      return faultResponse(req.id, fault);
    }
    const upstreamTasks = era === "modern" && deps.era.upstreamServesTasks;
    if (TASK_METHODS.has(req.method) && !upstreamTasks) {
      // Nobody upstream serves tasks: an id the gateway does not know is unknown.
      return respond(
        (await taskAnswer(serveTaskMethod(deps.engine, req, caller, "answer", deps.upstream.name), log)) ?? {
          fault: storeUnavailable(),
        },
      );
    }
    // An upstream that serves tasks itself gets every call as it is.
    if (upstreamTasks) return deps.passThrough(ex, listEdit);
    // Task or not: decided once, here, for both upstream eras.
    const plan = planPromotion(req, set.tasks, claims, { history: deps.history, upstream: deps.upstream.name });
    if (plan.kind === "refuse") return faultResponse(req.id, plan.fault);
    if (era === "modern") {
      const headers = upstreamRequestHeaders(who.upstreamHeaders, {
        clientIp: ex.clientAddress(),
        proto: "http",
        host: ex.header("host"),
      });
      if (req.method === "server/discover") return deps.modernTasks.discover(req, headers, signal);
      // A listen for task ids alone is about the gateway's own tasks; the upstream has none to report.
      if (req.method === "subscriptions/listen" && isTaskOnlyListen(req)) return tracked(listens.open(req, who));
      if (plan.kind === "task") return tracked(deps.modernTasks.handle(req, headers, who, signal, plan));
      return deps.passThrough(ex, listEdit);
    }
    if (req.method === "server/discover") return bridge.discover(req, who);
    if (req.method === "subscriptions/listen") return tracked(listens.open(req, who));
    // An MRTR retry belongs to the replica holding the parked upstream call.
    const runner = forwarded ? undefined : bridge.retryRunner(req, caller);
    if (runner !== undefined) return deps.forwarder.forward(ex, req.id, runner, deps.forwardTimeouts.retry);
    if (listEdit) return filtered(tracked(bridge.handle(req, who, plan)), req.id, listEdit);
    // The client's headers, for the Mcp-Param-* check (SEP-2243) of a tools/call.
    return tracked(bridge.handle(req, who, plan, (name) => ex.header(name)));
  };

  /**
   * A classified 2026-07-28 POST, under the policy the pipeline read once at its start (even if a reload swaps
   * it meanwhile: the one its token was checked under).
   */
  return (ex: Exchange, cls: Extract<Classification, { era: "modern" }>): Promise<Response> | Response => {
    if ("reject" in cls) return reject(cls.reject);
    if (cls.message.kind === "notification") return notification(ex, cls.message);
    if (!ex.set) throw new Error("a modern request reached its route without a policy");
    return request(ex, cls.message, ex.set);
  };
}
