// A task's lifecycle as a span (tracing on only): it starts when the task is
// stored, as a child of the request that created it and linked to it, records
// events for input_required, update (answers delivered) and cancel, and ends
// with the task (its terminal status), or when the task leaves this process.
// Upstream requests made for the task afterwards (its background call) run in
// its context, so the upstream's own spans join the same trace.
//
// With tracing off nothing here allocates: start() returns at once and the map
// stays empty.
import {
  activeSpanContext,
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingOn,
  type Attributes,
  type Span,
} from "../telemetry/trace.js";
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  ATTR_TASK_ID,
  ATTR_TASK_STATUS,
  ATTR_TASK_TTL_MS,
  GEN_AI_OPERATION_EXECUTE_TOOL,
} from "../telemetry/attributes.js";
import { TERMINAL, type TaskEvent, type TaskRecord } from "./task.js";
import { taskRef } from "./task-id.js";

export class TaskSpans {
  private readonly spans = new Map<string, Span>();

  /** Starts the task's span in the active context (the creating request's). */
  start(task: TaskRecord, tool: string | undefined): void {
    if (!tracingOn()) return;
    const attributes: Attributes = {
      // A task id is no credential, but traces travel further than answers: the same piece of its random part as
      // the audit trail and /status show (a plain prefix would be the upstream's name for a named upstream's task).
      [ATTR_TASK_ID]: taskRef(task.taskId),
      [ATTR_TASK_STATUS]: task.status,
      [ATTR_MCP_METHOD_NAME]: "tools/call",
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_EXECUTE_TOOL,
      [ATTR_TASK_TTL_MS]: task.ttlMs,
      ...(tool !== undefined && { [ATTR_GEN_AI_TOOL_NAME]: tool }),
    };
    const creator = activeSpanContext();
    const span = tracer().startSpan(
      tool === undefined ? "task" : `task ${tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes,
        ...(creator && { links: [{ context: creator, attributes: { "mcp.task.link": "created_by" } }] }),
      },
      context.active(),
    );
    this.spans.set(task.taskId, span);
  }

  /** Records one applied change: events for input, answers and cancel; the end at a terminal status. */
  changed(taskId: string, event: TaskEvent, next: TaskRecord): void {
    const span = this.spans.get(taskId);
    if (!span) return;
    switch (event.type) {
      case "input":
        span.addEvent("input_required", { "mcp.task.input.keys": 1 });
        break;
      case "inputs":
        span.addEvent("input_required", { "mcp.task.input.keys": Object.keys(event.requests).length });
        break;
      case "answered":
        span.addEvent("update", { "mcp.task.input.keys": event.keys.length });
        break;
      case "cancel":
        span.addEvent("cancel");
        break;
      default:
        break;
    }
    if (!TERMINAL.has(next.status)) {
      span.setAttribute(ATTR_TASK_STATUS, next.status);
      return;
    }
    span.setAttribute(ATTR_TASK_STATUS, next.status);
    if (next.status === "failed")
      span.setStatus({ code: SpanStatusCode.ERROR, message: next.statusMessage ?? "failed" });
    this.end(taskId);
  }

  /** The task left this process unfinished (evicted, lost its lease, handed on, shut down). */
  left(taskId: string, why: string): void {
    const span = this.spans.get(taskId);
    if (!span) return;
    span.addEvent("left", { reason: why });
    this.end(taskId);
  }

  private end(taskId: string): void {
    this.spans.get(taskId)?.end();
    this.spans.delete(taskId);
  }

  /** Runs `fn` in the task's context (its background upstream calls), or as it is without a span. */
  run<T>(taskId: string | undefined, fn: () => T): T {
    const span = taskId === undefined ? undefined : this.spans.get(taskId);
    return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
  }

  endAll(why: string): void {
    for (const taskId of [...this.spans.keys()]) this.left(taskId, why);
  }
}
