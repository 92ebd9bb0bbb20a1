// Sinks that turn an upstream call into a task.
//   TaskSink: the call belongs to a task. Progress becomes statusMessage, logs
//     are dropped (not delivered for tasks), input requests become the task's
//     inputRequests, and the outcome settles the task.
//   PromotingSink: the call starts as a plain client leg and races a threshold;
//     if the threshold wins, a task is created (stored first), the client gets
//     the CreateTaskResult, and the rest of the call goes to a TaskSink.
// startTask: for `always`/`required`, and for a tool the latency history knows to be
//   slow (adaptive promotion, "at once"), the task exists before the call goes upstream.
import type { JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { shuttingDown, storeUnavailable, taskLimit, type Fault } from "../protocol/errors.js";
import type { CreateOutcome, TaskEngine } from "../tasks/engine.js";
import { createTaskResult, progressMessage, type TaskEvent } from "../tasks/task.js";
import type { PendingInput } from "../protocol/input-requests.js";
import type { ClientLeg } from "./client-leg.js";
import type { CallSink, InputVerdict } from "./call-sink.js";

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

  /** A change the store could not take is lost to the task (the engine logged it; a final one is retried there). */
  private record(event: TaskEvent): void {
    this.engine.apply(this.taskId, event).catch(() => undefined);
  }

  progress(params: JsonObject): void {
    this.record({ type: "progress", message: progressMessage(params) });
  }

  log(): void {
    // notifications/message is not delivered for tasks (tasks extension).
  }

  inputRequired(pending: ReadonlyMap<string, PendingInput>): InputVerdict {
    // The requests gathered into one round (bridge-to-legacy/drive.ts) reach the task in one change.
    const requests: Record<string, JsonObject> = {};
    for (const [key, p] of pending) {
      if (this.announced.has(key)) continue;
      this.announced.add(key);
      requests[key] = p.request;
    }
    if (Object.keys(requests).length > 0) this.record({ type: "inputs", requests });
    return "continue";
  }

  result(result: JsonObject): void {
    // isError: true is still a completed tool call; failed is only for JSON-RPC errors.
    this.record({ type: "complete", result });
  }

  error(error: JsonRpcErrorObject): void {
    this.record({ type: "fail", error, message: `The call failed: ${error.message}` });
  }
}

export interface Promotion {
  /** Creates the task (in the store) and returns it, or a reason it was refused. */
  create: () => Promise<CreateOutcome>;
  thresholdMs: number;
  engine: TaskEngine;
  /** Told when the call became a task (the client has its CreateTaskResult). */
  onPromoted?: (() => void) | undefined;
}

/**
 * `always`/`required`: the task is created before the call goes upstream, so a
 * call refused by the limits never reaches it. Answers the leg with the
 * CreateTaskResult and returns the sink for the call, or the fault to answer.
 */
export async function startTask(
  leg: ClientLeg,
  clientCapabilities: JsonObject,
  engine: TaskEngine,
  create: () => Promise<CreateOutcome>,
): Promise<{ sink: TaskSink } | { fault: Fault }> {
  let created: CreateOutcome;
  try {
    created = await create();
  } catch {
    // The store's own error handler logged why.
    return { fault: storeUnavailable() };
  }
  if (!created.ok) return { fault: created.draining ? shuttingDown() : taskLimit(created.reason) };
  leg.result(createTaskResult(created.task));
  return { sink: new TaskSink(engine, created.task.taskId, clientCapabilities) };
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
    this.timer = setTimeout(() => void this.promote(), promotion.thresholdMs);
    this.timer.unref();
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
    let created: CreateOutcome;
    try {
      created = await this.promotion.create();
    } catch (err) {
      created = { ok: false, reason: `the task store failed (${(err as Error).message})` };
    }
    const queued = this.queue;
    this.queue = undefined;
    if (created.ok && client.leg.closed) {
      // The client left while the task was being stored (its call is already cancelled): nobody will ever
      // know this id, so it must not sit in the store as working, holding the caller's quota.
      void this.promotion.engine
        .apply(created.task.taskId, { type: "cancel", message: "The client left before the task was created" })
        .catch(() => undefined);
    } else if (created.ok) {
      client.leg.result(createTaskResult(created.task));
      this.target = new TaskSink(this.promotion.engine, created.task.taskId, this.clientCapabilities);
      this.client = undefined;
      this.promotion.engine.metrics.promotion("promoted");
      this.promotion.onPromoted?.();
    } else {
      this.promotion.engine.metrics.promotion("refused");
    }
    // Refused (a limit, or a store that failed): the call simply stays plain.
    for (const fn of queued) fn(this.target);
  }

  private route(fn: (sink: CallSink) => void): void {
    if (this.queue) this.queue.push(fn);
    else fn(this.target);
  }

  private settle(): void {
    // The call was decided before its threshold (counted once: the first answer, error or input request).
    if (!this.settled && !this.inProgress) this.promotion.engine.metrics.promotion("in_time");
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

  inputRequired(pending: ReadonlyMap<string, PendingInput>): InputVerdict | Promise<InputVerdict> {
    // Before promotion, input follows the MRTR path; afterwards it belongs to the task. While the task is
    // being stored, the reader waits for the outcome: a refused promotion parks the call for the client's
    // retry, and a reader that went on meanwhile would be a second one once that retry resumes the call.
    // (Everything queued before this request is delivered first: the promotion flushes its queue.)
    if (this.queue) return this.promotionSettled.then(() => this.inputRequired(pending));
    if (this.onLeg) this.settle();
    return this.target.inputRequired(pending);
  }

  result(result: JsonObject): void {
    if (this.onLeg && !this.queue) this.settle();
    this.route((s) => s.result(result));
  }

  error(error: JsonRpcErrorObject, status: number, headers?: Record<string, string>): void {
    if (this.onLeg && !this.queue) this.settle();
    this.route((s) => s.error(error, status, headers));
  }
}
