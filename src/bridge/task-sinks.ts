// Sinks that turn an upstream call into a task.
//   TaskSink: the call belongs to a task. Progress becomes statusMessage, logs
//     are dropped (not delivered for tasks), input requests become the task's
//     inputRequests, and the outcome settles the task.
//   PromotingSink: the call starts as a plain client leg and races a threshold;
//     if the threshold wins, a task is created (stored first), the client gets
//     the CreateTaskResult, and the rest of the call goes to a TaskSink.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { JSONRPC_INTERNAL_ERROR, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { TaskEngine } from "../tasks/engine.js";
import { jsonResponse } from "../protocol/json-response.js";
import type { TaskPolicy } from "../policy/policy.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import { missingTasksCapability } from "../tasks/methods.js";
import { detailedTask, progressMessage, type TaskRecord } from "../tasks/task.js";
import type { ClientLeg } from "./client-leg.js";
import type { CallSink, UpstreamCall } from "./legacy-call.js";

export class TaskSink implements CallSink {
  private readonly announced = new Set<string>();

  constructor(
    private readonly engine: TaskEngine,
    readonly taskId: string,
    readonly clientCapabilities: JsonObject,
  ) {}

  onGone(): void {
    // A task outlives the HTTP request that created it.
  }

  progress(params: JsonObject): void {
    void this.engine.apply(this.taskId, { type: "progress", message: progressMessage(params) });
  }

  log(): void {
    // notifications/message is not delivered for tasks (tasks extension).
  }

  inputRequired(call: UpstreamCall): "continue" {
    for (const [key, p] of call.pending) {
      if (this.announced.has(key)) continue;
      this.announced.add(key);
      void this.engine.apply(this.taskId, { type: "input", key, request: p.request });
    }
    return "continue";
  }

  result(result: JsonObject): void {
    // isError: true is still a completed tool call; failed is only for JSON-RPC errors.
    void this.engine.apply(this.taskId, { type: "complete", result });
  }

  error(error: JsonRpcErrorObject): void {
    void this.engine.apply(this.taskId, { type: "fail", error, message: `The call failed: ${error.message}` });
  }
}

/** The flat CreateTaskResult: the task's fields beside resultType "task". */
export function createTaskResult(task: TaskRecord): JsonObject {
  const { result: _r, error: _e, inputRequests: _i, ...fields } = detailedTask(task);
  return { resultType: "task", ...fields };
}

export interface Promotion {
  /** Creates the task (in the store) and returns it, or a reason it was refused. */
  create: () => Promise<{ ok: true; task: TaskRecord } | { ok: false; reason: string }>;
  thresholdMs: number;
  /** "always"/"required": promote at once, and a refusal is an error; "auto": a refusal just keeps the call plain. */
  eager: boolean;
  engine: TaskEngine;
}

export class PromotingSink implements CallSink {
  private target: CallSink;
  private timer: NodeJS.Timeout | undefined;
  private queue: Array<(sink: CallSink) => void> | undefined;
  private settled = false;
  /** The client side; dropped once the call is a task, which may outlive the request by hours. */
  private client: { leg: ClientLeg; sink: CallSink } | undefined;
  readonly clientCapabilities: JsonObject;

  constructor(
    leg: ClientLeg,
    legSink: CallSink,
    private readonly promotion: Promotion,
  ) {
    this.client = { leg, sink: legSink };
    this.clientCapabilities = legSink.clientCapabilities;
    this.target = legSink;
    if (promotion.eager) void this.promote();
    else {
      this.timer = setTimeout(() => void this.promote(), promotion.thresholdMs);
      this.timer.unref();
    }
  }

  /** The task this call became, if it was promoted. */
  get taskId(): string | undefined {
    return this.target instanceof TaskSink ? this.target.taskId : undefined;
  }

  /** Resolves once a promotion in progress (if any) has finished. */
  get promotionSettled(): Promise<void> {
    return this.inProgress ?? Promise.resolve();
  }

  private inProgress: Promise<void> | undefined;

  private promote(): Promise<void> {
    this.inProgress ??= this.doPromote();
    return this.inProgress;
  }

  private get onLeg(): boolean {
    return this.client !== undefined && this.target === this.client.sink;
  }

  private async doPromote(): Promise<void> {
    const client = this.client;
    if (this.settled || !client || client.leg.closed || this.queue) return;
    // Messages arriving while the task is being stored wait, then go to whichever sink won.
    this.queue = [];
    let created: Awaited<ReturnType<Promotion["create"]>>;
    try {
      created = await this.promotion.create();
    } catch (err) {
      created = { ok: false, reason: `the task store failed (${(err as Error).message})` };
    }
    const queued = this.queue;
    this.queue = undefined;
    if (created.ok) {
      client.leg.result(createTaskResult(created.task));
      this.target = new TaskSink(this.promotion.engine, created.task.taskId, this.clientCapabilities);
      this.client = undefined;
    } else if (this.promotion.eager) {
      client.leg.error({ code: JSONRPC_INTERNAL_ERROR, message: `Cannot create a task: ${created.reason}`, data: { reason: "task_limit" } });
    }
    for (const fn of queued) fn(this.target);
  }

  private route(fn: (sink: CallSink) => void): void {
    if (this.queue) this.queue.push(fn);
    else fn(this.target);
  }

  private settle(): void {
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
  }

  onGone(listener: () => void): void {
    // A task has no client to lose.
    this.client?.sink.onGone(listener);
  }

  progress(params: JsonObject): void {
    this.route((s) => s.progress(params));
  }

  log(params: JsonObject): void {
    this.route((s) => s.log(params));
  }

  inputRequired(call: UpstreamCall): "park" | "continue" {
    // Before promotion, input follows the MRTR path; afterwards it belongs to the task.
    if (this.queue) {
      this.route((s) => void s.inputRequired(call));
      return "continue";
    }
    if (this.onLeg) this.settle();
    return this.target.inputRequired(call);
  }

  result(result: JsonObject): void {
    if (this.onLeg && !this.queue) this.settle();
    this.route((s) => s.result(result));
  }

  error(error: JsonRpcErrorObject, status: number): void {
    if (this.onLeg && !this.queue) this.settle();
    this.route((s) => s.error(error, status));
  }
}

/**
 * The answer for a tools/call that can only run as a task but cannot: `required` without the extension
 * declared (-32021), or `always`/`required` past the task limits. Undefined when the call may proceed.
 */
export function taskRefusal(
  tasks: { engine: TaskEngine; policy: TaskPolicy },
  req: ModernRequest,
  caller: string,
): Response | undefined {
  const name = typeof req.params.name === "string" ? req.params.name : "";
  const { mode } = tasks.policy.decide(name);
  const respond = (status: number, error: JsonRpcErrorObject): Response => jsonResponse(status, { jsonrpc: "2.0", id: req.id, error });
  if (mode === "required" && !isTasksDeclared(req.envelope.clientCapabilities)) {
    return respond(400, missingTasksCapability(`Tool ${name} runs only as a task`));
  }
  if ((mode === "always" || mode === "required") && isTasksDeclared(req.envelope.clientCapabilities)) {
    const refused = tasks.engine.refusal(caller);
    if (refused) return respond(200, { code: JSONRPC_INTERNAL_ERROR, message: `Cannot create a task: ${refused}`, data: { reason: "task_limit" } });
  }
  return undefined;
}

export function isTasksDeclared(caps: JsonObject): boolean {
  return isRecord(caps.extensions) && isRecord(caps.extensions["io.modelcontextprotocol/tasks"]);
}
