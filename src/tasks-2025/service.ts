// Tasks for 2025-11-25 clients (SDK 1.x experimental tasks) in front of an
// upstream that does not serve tasks itself. The same engine, store, policy and
// caller binding as the 2026-07-28 tasks; only the wire differs (wire.ts).
//   - a task-augmented tools/call is sent upstream by the gateway on the
//     client's own session (client-session.ts: without params.task, under the
//     gateway's id), read by drive() into a TaskSink, and answered at once with
//     a CreateTaskResult;
//   - tasks/get, tasks/list and tasks/cancel are answered from the store;
//   - tasks/result blocks until the task is terminal, on an SSE stream that
//     carries notifications/tasks/status and the task's input requests (as
//     server-to-client requests with the related-task _meta); the client's
//     answers to those come back as JSON-RPC responses (answer()).
import type { HeldSessions } from "../protocol/held-sessions.js";
import { taskUpstream } from "../tasks/task-id.js";
import type { Logger } from "../log/logger.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject, JsonRpcId } from "../protocol/jsonrpc.js";
import { legacyParams, type CacheHints } from "../protocol/era-translate.js";
import {
  clientErrorOf,
  invalidParams,
  runnerUnreachable,
  shuttingDown,
  storeUnavailable,
  taskAlreadyTerminal,
  taskCallFailed,
  taskCancelledNoResult,
  taskErrorOf,
  taskLimit,
  taskNotFound,
  type Fault,
} from "../protocol/errors.js";
import type { Decision } from "../policy/policy.js";
import type { ControlOutcome, CreateOutcome, TaskEngine } from "../tasks/engine.js";
import type { TaskRuntime } from "../tasks/task-runtime.js";
import { detailedTask, TERMINAL, type TaskStatus } from "../tasks/task.js";
import type { UpstreamClient } from "../upstream/client.js";
import { LegacyCall } from "../bridge-to-legacy/legacy-call.js";
import { faultResponse, jsonResponse } from "../web/json-response.js";
import type { Caller } from "../calls/caller.js";
import { ClientLeg } from "../calls/client-leg.js";
import { TaskSink } from "../calls/task-sinks.js";
import { timed } from "../calls/timed-sink.js";
import type { CallTiming, LatencyHistory } from "../tasks/latency-history.js";
import { historyKey } from "../tasks/promotion.js";
import type { CallSink } from "../calls/call-sink.js";
import { drive } from "../bridge-to-legacy/drive.js";
import { legacyCallFault } from "../bridge-to-legacy/call-fault.js";
import { ClientSessions, type ClientSessionSpec } from "./client-session.js";
import { TaskSessions, type SessionLimits, type TaskSession } from "./sessions.js";
import {
  legacyCreateTaskResult,
  legacyTask,
  legacyTaskResult,
  parseDetailed,
  parseRelayId,
  relayRequest,
  statusNotification,
  type LegacyTask,
} from "./wire.js";

export interface LegacyTasksOptions {
  engine: TaskEngine;
  upstream: UpstreamClient;
  /** Deadline for the gateway's own short messages on the client's session (cancellations, answers). */
  controlTimeoutMs: number;
  /** A tasks/result that waits turns into an event stream with keep-alives after this long (0: never). */
  keepAliveMs: number;
  now: () => number;
  log: Logger;
  limits?: Partial<SessionLimits> | undefined;
  /** Adaptive promotion's latency history: a task-augmented call is timed too (its answer is a sample). */
  history?: LatencyHistory | undefined;
  /** Registers a long wait (tasks/result) for graceful shutdown; returns its release. */
  track?: ((stop: () => void) => () => void) | undefined;
  /** Records each task session as this process's (issue 23: another replica forwards its requests here). */
  held?: HeldSessions | undefined;
}

/** A 2025-11-25 answer to an input request, handed through the engine to the task's call. */
class RelayedOutcome {
  constructor(readonly outcome: { result: unknown } | { error: JsonRpcErrorObject }) {}
}

/** tools/call results carry no cache hints; drive() needs some. */
const NO_HINTS: CacheHints = { ttlMs: 0, cacheScope: "private" };
const LIST_PAGE = 50;
const DEFAULT_LIMITS: SessionLimits = { maxSessions: 10_000, maxTasksPerSession: 1_000 };

const ACCEPTED = (): Response => new Response(null, { status: 202 });

export class LegacyTasks {
  readonly sessions: TaskSessions;

  constructor(private readonly opts: LegacyTasksOptions) {
    this.sessions = new TaskSessions({ ...DEFAULT_LIMITS, ...opts.limits }, opts.held);
  }

  private get engine(): TaskEngine {
    return this.opts.engine;
  }

  /**
   * A task-augmented tools/call: the task is created (stored first, under the
   * limits), the client gets its CreateTaskResult, and the call goes upstream
   * on the client's own session (`session`: the one the call came on).
   */
  async callAsTask(
    id: JsonRpcId,
    params: JsonObject,
    who: Caller,
    session: Pick<ClientSessionSpec, "sessionId" | "protocolVersion">,
    state: TaskSession,
    decision: Decision,
    tool: string,
  ): Promise<Response> {
    const task = isRecord(params.task) ? params.task : {};
    // The receiver may shorten the requested ttl; the policy's is the ceiling.
    const requested =
      typeof task.ttl === "number" && Number.isFinite(task.ttl) && task.ttl > 0 ? Math.floor(task.ttl) : undefined;
    const ttlMs = Math.min(requested ?? decision.ttlMs, decision.ttlMs);
    const { upstream } = this.opts;
    const sessions = new ClientSessions(
      upstream,
      {
        sessionId: session.sessionId,
        protocolVersion: session.protocolVersion,
        credentialHeaders: who.credentialHeaders,
      },
      this.opts.controlTimeoutMs,
      this.opts.now(),
    );
    const call = new LegacyCall(
      upstream,
      sessions,
      { credentialHeaders: who.credentialHeaders, capabilities: {}, clientInfo: undefined },
      "tools/call",
      who.traceHeaders,
    );
    // A 2025-11-25 client chooses a task itself (params.task), but the call's answer is still a sample of the
    // tool's latency, and the history gives the task its poll hint, as for a 2026-07-28 client (issue 26).
    // Under auto the tool's state (at once or not) is kept current too, for stats and the other clients.
    const history = decision.adaptive ? this.opts.history : undefined;
    const key = historyKey(tool, upstream.name);
    if (decision.mode === "auto") history?.atOnce(key, decision.thresholdMs);
    const timing = history?.begin(key, decision, false);
    const runtime: TaskRuntime = {
      answer: async (key, value) => {
        const pending = call.pending.get(key);
        if (!pending) return;
        call.pending.delete(key);
        // From a 2025-11-25 client: its response as it was; from a 2026-07-28 tasks/update: the result.
        await call.answer(
          pending.upstreamRequestId,
          value instanceof RelayedOutcome ? value.outcome : { result: value },
        );
      },
      cancel: (reason) => {
        // Cancelled or evicted: the call is cut (a sample only if it already ran past the threshold).
        timing?.cancelled();
        call.cancel(reason);
      },
    };
    let created: CreateOutcome;
    try {
      created = await this.engine.create(
        who.caller,
        ttlMs,
        timing?.pollIntervalMs() ?? decision.pollIntervalMs,
        runtime,
        {
          tool,
          subject: who.subject,
          caller: who.caller,
          mode: decision.mode,
          upstream: this.opts.upstream.name,
        },
      );
    } catch {
      // The store's own error handler logged why.
      return faultResponse(id, storeUnavailable());
    }
    if (!created.ok) return faultResponse(id, created.draining ? shuttingDown() : taskLimit(created.reason));
    const taskId = created.task.taskId;
    this.sessions.addTask(state, taskId);
    timing?.promoted("eager");
    const sink = timed(new TaskSink(this.engine, taskId, state.capabilities), timing);
    // The call is the task's background call: in the task's trace context (tracing on).
    void this.engine
      .inTaskContext(taskId, () => this.run(call, params, sink, timing))
      .catch((err: unknown) => {
        this.opts.log.error("task call failed", { cause: (err as Error).message });
        sink.error(taskCallFailed(), 500);
      });
    return jsonResponse(200, {
      jsonrpc: "2.0",
      id,
      result: legacyCreateTaskResult(detailedTask(created.task) as unknown as JsonObject),
    });
  }

  private async run(call: LegacyCall, params: JsonObject, sink: CallSink, timing?: CallTiming): Promise<void> {
    const { upstream } = this.opts;
    try {
      timing?.sent();
      // legacyParams drops params.task (the upstream must not act on it) and sets the gateway's progress token.
      await call.send((token) => legacyParams(params, token));
    } catch (err) {
      const fault = legacyCallFault(err, upstream.name);
      this.opts.log.warn("upstream request failed", { method: "tools/call", cause: fault.error.message });
      sink.error(fault.error, fault.status);
      return;
    }
    await drive(upstream.name, NO_HINTS, call, sink);
  }

  /**
   * tasks/get, tasks/result, tasks/list, tasks/cancel. Undefined: not the
   * gateway's to answer (no task of this caller's under that id on a session the
   * gateway does not serve tasks on: the upstream's own tasks pass through).
   */
  async serve(
    method: string,
    id: JsonRpcId,
    params: JsonObject,
    who: Caller,
    state: TaskSession | undefined,
  ): Promise<Response | undefined> {
    try {
      if (method === "tasks/list") return state ? await this.list(id, params, who, state) : undefined;
      const taskId = params.taskId;
      if (typeof taskId !== "string" || taskId === "")
        return state ? faultResponse(id, invalidParams("params.taskId must be a non-empty string")) : undefined;
      // Only this upstream's tasks are served on its route (task-id.ts).
      const stored =
        taskUpstream(taskId) === this.opts.upstream.name ? await this.engine.get(taskId, who.caller) : undefined;
      if (!stored)
        return state ? faultResponse(id, taskNotFound(method === "tasks/cancel" ? "cancel" : "retrieve")) : undefined;
      const detailed = parseDetailed(stored.json);
      if (!detailed) return faultResponse(id, taskNotFound("retrieve"));
      switch (method) {
        case "tasks/get":
          return jsonResponse(200, { jsonrpc: "2.0", id, result: legacyTask(detailed) });
        case "tasks/cancel":
          return await this.cancel(id, taskId, who, stored.status, detailed);
        default:
          return await this.result(id ?? null, taskId, who, detailed);
      }
    } catch (err) {
      this.opts.log.warn("task store failed", { cause: (err as Error).message });
      return faultResponse(id, storeUnavailable());
    }
  }

  private async cancel(
    id: JsonRpcId,
    taskId: string,
    who: Caller,
    status: TaskStatus,
    detailed: JsonObject,
  ): Promise<Response> {
    if (TERMINAL.has(status)) return faultResponse(id, taskAlreadyTerminal(legacyTask(detailed).status));
    const outcome: ControlOutcome = await this.engine.cancel(taskId, who.caller);
    const refused = controlFault(outcome);
    if (refused) return faultResponse(id, refused);
    const after = await this.engine.get(taskId, who.caller);
    const now = after && parseDetailed(after.json);
    if (!now) return faultResponse(id, taskNotFound("cancel"));
    // The task ended on its own between the check above and the cancel (which then changes nothing): terminal already.
    if (now.status !== "cancelled" && TERMINAL.has(now.status as TaskStatus))
      return faultResponse(id, taskAlreadyTerminal(legacyTask(now).status));
    return jsonResponse(200, { jsonrpc: "2.0", id, result: legacyTask(now) });
  }

  private async list(id: JsonRpcId, params: JsonObject, who: Caller, state: TaskSession): Promise<Response> {
    const ids = state.taskIds;
    let start = 0;
    if (params.cursor !== undefined) {
      const after = typeof params.cursor === "string" ? Buffer.from(params.cursor, "base64url").toString("utf8") : "";
      const at = after === "" ? -1 : ids.indexOf(after);
      if (at === -1) return faultResponse(id, invalidParams("Invalid or expired cursor"));
      start = at + 1;
    }
    const tasks: LegacyTask[] = [];
    let i = start;
    for (; i < ids.length && tasks.length < LIST_PAGE; i++) {
      const stored = await this.engine.get(ids[i] as string, who.caller);
      const detailed = stored && parseDetailed(stored.json);
      if (detailed) tasks.push(legacyTask(detailed));
    }
    const result: JsonObject = { tasks };
    if (i < ids.length) result.nextCursor = Buffer.from(ids[i - 1] as string, "utf8").toString("base64url");
    return jsonResponse(200, { jsonrpc: "2.0", id, result });
  }

  /**
   * tasks/result: the call's outcome once the task is terminal. Until then an
   * event stream carries the task's status changes and its input requests.
   */
  private async result(id: string | number | null, taskId: string, who: Caller, first: JsonObject): Promise<Response> {
    const leg = new ClientLeg(id ?? "", undefined, who.signal, this.opts.keepAliveMs);
    if (TERMINAL.has(first.status as TaskStatus)) {
      finish(leg, taskId, first);
      return leg.response;
    }
    const sent = new Set<string>();
    let done = false;
    let unwatch: (() => void) | undefined;
    let release: (() => void) | undefined;
    const end = (): void => {
      done = true;
      unwatch?.();
      release?.();
    };
    const onChange = (detailed: JsonObject): void => {
      if (done) return;
      if (TERMINAL.has(detailed.status as TaskStatus)) {
        end();
        finish(leg, taskId, detailed);
        return;
      }
      leg.notify(statusNotification(legacyTask(detailed)));
      if (detailed.status !== "input_required" || !isRecord(detailed.inputRequests)) return;
      for (const [key, request] of Object.entries(detailed.inputRequests)) {
        if (sent.has(key) || !isRecord(request)) continue;
        sent.add(key);
        leg.notify(relayRequest(taskId, key, request));
      }
    };
    try {
      // Watch first, then read: a change between the two is not missed.
      unwatch = await this.engine.watch(taskId, (json) => {
        const detailed = parseDetailed(json);
        if (detailed) onChange(detailed);
      });
      // Already answered (the task ended while the watch was being set up): nothing more to hold.
      if (done) {
        unwatch();
        return leg.response;
      }
      leg.onClose(end);
      release = this.opts.track?.(() => {
        end();
        const fault = shuttingDown();
        leg.error(fault.error, fault.status, fault.headers);
      });
      const stored = await this.engine.get(taskId, who.caller);
      const now = stored ? parseDetailed(stored.json) : undefined;
      if (!now) {
        end();
        const fault = taskNotFound("retrieve");
        leg.error(fault.error, fault.status);
      } else onChange(now);
    } catch (err) {
      // The store failed: the wait ends here (its watch, its shutdown registration, its keep-alives), answered.
      end();
      this.opts.log.warn("task store failed", { cause: (err as Error).message });
      const fault = storeUnavailable();
      leg.error(fault.error, fault.status);
    }
    return leg.response;
  }

  /** A client's JSON-RPC response to an input request relayed by tasks/result; undefined if it is not one. */
  async answer(message: JsonObject, who: Caller): Promise<Response | undefined> {
    const relay = parseRelayId(message.id as JsonRpcId);
    if (!relay) return undefined;
    const outcome = "result" in message ? { result: message.result } : { error: clientErrorOf(message.error) };
    try {
      const done = await this.engine.update(relay.taskId, who.caller, { [relay.key]: new RelayedOutcome(outcome) });
      if (done.kind === "elsewhere" || done.kind === "moving")
        this.opts.log.warn("an input response for a task another gateway instance runs was dropped");
    } catch (err) {
      this.opts.log.warn("task store failed", { cause: (err as Error).message });
    }
    // The answer to a response: accepted, as the transport says (unknown or answered keys are ignored).
    return ACCEPTED();
  }
}

function controlFault(outcome: ControlOutcome): Fault | undefined {
  switch (outcome.kind) {
    case "done":
      return undefined;
    case "unknown":
      return taskNotFound("cancel");
    case "moving":
      return runnerUnreachable("it is being handed to another gateway instance; retry shortly");
    case "elsewhere":
      // 2025-11-25 sessions are served by the replica the client's requests reach; the task runs on another.
      return runnerUnreachable("it runs on another gateway instance");
  }
}

/** The terminal answer of tasks/result: exactly what the call returned (its result or its error). */
function finish(leg: ClientLeg, taskId: string, detailed: JsonObject): void {
  if (detailed.status === "completed") {
    leg.result(legacyTaskResult(detailed.result, taskId));
    return;
  }
  if (detailed.status === "failed") {
    leg.error(taskErrorOf(detailed.error));
    return;
  }
  const fault = taskCancelledNoResult();
  leg.error(fault.error, fault.status);
}
