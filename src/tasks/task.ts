// The task record and its one state machine. Every transition goes through
// `transition`: terminal states never change, and every change stamps
// lastUpdatedAt. Pure: time comes in as an argument.
import type { JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";

export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

export interface TaskRecord {
  taskId: string;
  /** Caller identity digest of the creating request. */
  owner: string;
  status: TaskStatus;
  statusMessage?: string | undefined;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** Outstanding server→client requests, by key (unique for the task's life). */
  inputRequests: Record<string, JsonObject>;
  result?: JsonObject | undefined;
  error?: JsonRpcErrorObject | undefined;
}

export type TaskEvent =
  | { type: "progress"; message: string }
  | { type: "input"; key: string; request: JsonObject }
  | { type: "answered"; keys: readonly string[] }
  | { type: "complete"; result: JsonObject }
  | { type: "fail"; error: JsonRpcErrorObject; message: string }
  | { type: "cancel"; message: string };

/** Returns the next record, or the same object when the event changes nothing. */
export function transition(task: TaskRecord, event: TaskEvent, now: Date): TaskRecord {
  if (TERMINAL.has(task.status)) return task;
  const stamp = now.toISOString();
  switch (event.type) {
    case "progress":
      if (event.message === task.statusMessage) return task;
      return { ...task, statusMessage: event.message, lastUpdatedAt: stamp };
    case "input": {
      const inputRequests = { ...task.inputRequests, [event.key]: event.request };
      return { ...task, status: "input_required", inputRequests, statusMessage: "Waiting for input from the client", lastUpdatedAt: stamp };
    }
    case "answered": {
      const remaining = { ...task.inputRequests };
      let changed = false;
      for (const key of event.keys) {
        if (Object.hasOwn(remaining, key)) {
          delete remaining[key];
          changed = true;
        }
      }
      if (!changed) return task;
      const status = Object.keys(remaining).length === 0 ? "working" : "input_required";
      return {
        ...task,
        status,
        inputRequests: remaining,
        statusMessage: status === "working" ? "Input received, working" : task.statusMessage,
        lastUpdatedAt: stamp,
      };
    }
    case "complete":
      return { ...task, status: "completed", inputRequests: {}, result: event.result, statusMessage: undefined, lastUpdatedAt: stamp };
    case "fail":
      return { ...task, status: "failed", inputRequests: {}, error: event.error, statusMessage: event.message, lastUpdatedAt: stamp };
    case "cancel":
      return { ...task, status: "cancelled", inputRequests: {}, statusMessage: event.message, lastUpdatedAt: stamp };
  }
}

/** The wire DetailedTask (tasks/get, notifications/tasks): status-specific fields inlined. */
export function detailedTask(task: TaskRecord): JsonObject {
  const out: JsonObject = {
    taskId: task.taskId,
    status: task.status,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  };
  if (task.statusMessage !== undefined) out.statusMessage = task.statusMessage;
  if (task.status === "input_required") out.inputRequests = task.inputRequests;
  if (task.status === "completed" && task.result) out.result = task.result;
  if (task.status === "failed" && task.error) out.error = task.error;
  return out;
}

/** Progress folded into a status message: "step 3/10: copying files". */
export function progressMessage(params: JsonObject): string {
  const progress = typeof params.progress === "number" ? params.progress : undefined;
  const total = typeof params.total === "number" ? params.total : undefined;
  const step = progress === undefined ? "working" : total === undefined ? `progress ${progress}` : `progress ${progress}/${total}`;
  return typeof params.message === "string" && params.message !== "" ? `${step}: ${params.message}` : step;
}
