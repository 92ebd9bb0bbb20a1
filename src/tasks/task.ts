// The task record and its one state machine. Every transition goes through
// `transition`: terminal states never change, and every change stamps
// lastUpdatedAt. Pure: time comes in as an argument.
import type { JsonObject } from "../protocol/json.js";
import { taskErrorOf } from "../protocol/errors.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { CreateTaskResult, DetailedTask } from "../protocol/tasks-extension.js";
import { TERMINAL, type TaskRecord } from "../store/task-store.js";

export { TERMINAL, type TaskRecord, type TaskStatus } from "../store/task-store.js";

export type TaskEvent =
  | { type: "progress"; message: string }
  | { type: "input"; key: string; request: JsonObject }
  /** Several input requests the upstream sent together: one change, so a poll sees all of them at once. */
  | { type: "inputs"; requests: Readonly<Record<string, JsonObject>> }
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
    case "input":
    case "inputs": {
      const added = event.type === "input" ? { [event.key]: event.request } : event.requests;
      if (Object.keys(added).length === 0) return task;
      const inputRequests = { ...task.inputRequests, ...added };
      return {
        ...task,
        status: "input_required",
        inputRequests,
        statusMessage: "Waiting for input from the client",
        lastUpdatedAt: stamp,
      };
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
      return {
        ...task,
        status: "completed",
        inputRequests: {},
        result: event.result,
        statusMessage: undefined,
        lastUpdatedAt: stamp,
      };
    case "fail":
      return {
        ...task,
        status: "failed",
        inputRequests: {},
        error: event.error,
        statusMessage: event.message,
        lastUpdatedAt: stamp,
      };
    case "cancel":
      return { ...task, status: "cancelled", inputRequests: {}, statusMessage: event.message, lastUpdatedAt: stamp };
  }
}

/** The wire DetailedTask (tasks/get, notifications/tasks): status-specific fields inlined. */
export function detailedTask(task: TaskRecord): DetailedTask {
  const base = {
    taskId: task.taskId,
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
    ...(task.statusMessage !== undefined && { statusMessage: task.statusMessage }),
  };
  switch (task.status) {
    case "input_required":
      return { ...base, status: task.status, inputRequests: task.inputRequests };
    case "completed":
      // The state machine always sets these two; the fallbacks only keep the type honest.
      return { ...base, status: task.status, result: task.result ?? {} };
    case "failed":
      return {
        ...base,
        status: task.status,
        error: taskErrorOf(task.error),
      };
    default:
      return { ...base, status: task.status };
  }
}

/** The tasks/get result for a record, serialized once: what the store keeps beside it. */
export function taskResultJson(task: TaskRecord): string {
  return JSON.stringify({ resultType: "complete", ...detailedTask(task) });
}

/** The flat CreateTaskResult: the task's fields beside resultType "task". */
export function createTaskResult(task: TaskRecord): CreateTaskResult {
  const { taskId, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs, statusMessage } = task;
  const status = task.status === "input_required" ? "input_required" : "working";
  return {
    resultType: "task",
    taskId,
    status,
    createdAt,
    lastUpdatedAt,
    ttlMs,
    pollIntervalMs,
    ...(statusMessage !== undefined && { statusMessage }),
  };
}

/** Progress folded into a status message: "step 3/10: copying files". */
export function progressMessage(params: JsonObject): string {
  const progress = typeof params.progress === "number" ? params.progress : undefined;
  const total = typeof params.total === "number" ? params.total : undefined;
  const step =
    progress === undefined ? "working" : total === undefined ? `progress ${progress}` : `progress ${progress}/${total}`;
  return typeof params.message === "string" && params.message !== "" ? `${step}: ${params.message}` : step;
}
