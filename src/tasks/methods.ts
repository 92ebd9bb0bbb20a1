// tasks/get, tasks/update and tasks/cancel, served by the gateway for the tasks
// it owns. Unknown, expired and other callers' ids all answer the same -32602,
// so a task id reveals nothing to anyone but its creator. Answers are returned
// as data (a result's JSON text, or a Fault); http/ turns them into Responses.
import { taskUpstream } from "./task-id.js";
import { isRecord } from "../protocol/json.js";
import { invalidParams, runnerUnreachable, taskNotFound, type Fault } from "../protocol/errors.js";
import { isTasksDeclared, missingTasksCapability } from "../protocol/tasks-extension.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import type { ControlOutcome, TaskEngine } from "./engine.js";
import type { StoredBytes } from "../store/task-store.js";

/**
 * A served task method: the `result` member already serialized, an error, or
 * "run by another replica" (the caller forwards the request there).
 */
export type TaskMethodAnswer = { resultJson: string } | { fault: Fault } | { forward: string };

const ACK = JSON.stringify({ resultType: "complete" });

/**
 * A tasks/get the lean path can answer with the found task's stored tasks/get JSON as bytes: at once when the
 * store is in this process's memory, else a promise of the store's read. Undefined for anything else, which
 * serveTaskMethod answers (a missing capability, a bad id, another upstream's or caller's task, an unknown
 * one, a task whose lease lapsed). The checks are serveTaskMethod's, in its order.
 */
export function taskGetBytes(
  engine: TaskEngine,
  req: ModernRequest,
  caller: string,
  upstream: string,
): StoredBytes | undefined | Promise<StoredBytes | undefined> {
  if (req.method !== "tasks/get" || !isTasksDeclared(req.envelope.clientCapabilities)) return undefined;
  const taskId = req.params.taskId;
  if (typeof taskId !== "string" || taskId === "" || taskUpstream(taskId) !== upstream) return undefined;
  return engine.pollBytes(taskId, caller);
}

/**
 * Answers a tasks/* request for the gateway's own tasks. With `unknown: "defer"`
 * an id this caller has no task under yields undefined instead of -32602, so
 * the caller can hand it to an upstream that serves tasks of its own.
 */
export function serveTaskMethod(
  engine: TaskEngine,
  req: ModernRequest,
  caller: string,
  unknown: "answer",
  upstream: string,
): Promise<TaskMethodAnswer>;
export function serveTaskMethod(
  engine: TaskEngine,
  req: ModernRequest,
  caller: string,
  unknown: "defer",
  upstream: string,
): Promise<TaskMethodAnswer | undefined>;
export async function serveTaskMethod(
  engine: TaskEngine,
  req: ModernRequest,
  caller: string,
  unknown: "answer" | "defer",
  upstream: string,
): Promise<TaskMethodAnswer | undefined> {
  if (!isTasksDeclared(req.envelope.clientCapabilities)) return { fault: missingTasksCapability() };
  const taskId = req.params.taskId;
  if (typeof taskId !== "string" || taskId === "")
    return { fault: invalidParams("params.taskId must be a non-empty string") };
  const unknownTask = (verb: string): TaskMethodAnswer | undefined =>
    unknown === "defer" ? undefined : { fault: taskNotFound(verb) };
  const control = (outcome: ControlOutcome, verb: string): TaskMethodAnswer | undefined => {
    switch (outcome.kind) {
      case "done":
        return { resultJson: ACK };
      case "elsewhere":
        return { forward: outcome.runner };
      case "moving":
        return { fault: runnerUnreachable("it is being handed to another gateway instance; retry shortly") };
      case "unknown":
        return unknownTask(verb);
    }
  };
  // Served only on the route of the upstream that runs it: on any other, a task is as unknown as a made-up id.
  if (taskUpstream(taskId) !== upstream)
    return unknownTask(req.method === "tasks/get" ? "retrieve" : req.method === "tasks/update" ? "update" : "cancel");
  switch (req.method) {
    case "tasks/get": {
      // The stored bytes are the answer: a poll serializes nothing.
      const task = await engine.get(taskId, caller);
      return task ? { resultJson: task.json } : unknownTask("retrieve");
    }
    case "tasks/update": {
      const responses = req.params.inputResponses;
      if (!isRecord(responses)) return { fault: invalidParams("params.inputResponses must be an object") };
      return control(await engine.update(taskId, caller, responses), "update");
    }
    default:
      return control(await engine.cancel(taskId, caller), "cancel");
  }
}
