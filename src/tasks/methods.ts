// tasks/get, tasks/update and tasks/cancel, served by the gateway for the tasks
// it owns. Unknown, expired and other callers' ids all answer the same -32602,
// so a task id reveals nothing to anyone but its creator.
import { TASKS_EXTENSION } from "../protocol/era-bridge.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { JSONRPC_INVALID_PARAMS, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { MISSING_REQUIRED_CLIENT_CAPABILITY, type ModernRequest } from "../protocol/modern-request.js";
import type { TaskEngine } from "./engine.js";
import { detailedTask, type TaskRecord } from "./task.js";
import { jsonResponse, jsonTextResponse } from "../protocol/json-response.js";

export const TASK_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

export function missingTasksCapability(message = "Missing required client capability"): JsonRpcErrorObject {
  return {
    code: MISSING_REQUIRED_CLIENT_CAPABILITY,
    message: `${message}: declare the ${TASKS_EXTENSION} extension in clientCapabilities`,
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  };
}

/**
 * A task's tasks/get result, serialized once per record: records never change
 * (every transition makes a new one), and pollers ask for the same finished
 * task again and again, so the JSON (result included) is built only once.
 */
const serialized = new WeakMap<TaskRecord, string>();

function taskResultJson(task: TaskRecord): string {
  let json = serialized.get(task);
  if (json === undefined) {
    json = JSON.stringify({ resultType: "complete", ...detailedTask(task) });
    serialized.set(task, json);
  }
  return json;
}

function ok(id: string | number, result: JsonObject): Response {
  return jsonResponse(200, { jsonrpc: "2.0", id, result });
}

function fail(id: string | number, error: JsonRpcErrorObject, status = 200): Response {
  return jsonResponse(status, { jsonrpc: "2.0", id, error });
}

const notFound = (verb: string): JsonRpcErrorObject => ({
  code: JSONRPC_INVALID_PARAMS,
  message: `Failed to ${verb} task: Task not found`,
});

/**
 * Answers a tasks/* request for the gateway's own tasks. With `unknown: "defer"`
 * an id this caller has no task under yields undefined instead of -32602, so
 * the caller can hand it to an upstream that serves tasks of its own.
 */
export function serveTaskMethod(engine: TaskEngine, req: ModernRequest, caller: string, unknown: "answer"): Promise<Response>;
export function serveTaskMethod(engine: TaskEngine, req: ModernRequest, caller: string, unknown: "defer"): Promise<Response | undefined>;
export async function serveTaskMethod(
  engine: TaskEngine,
  req: ModernRequest,
  caller: string,
  unknown: "answer" | "defer",
): Promise<Response | undefined> {
  const caps = req.envelope.clientCapabilities;
  if (!(isRecord(caps.extensions) && isRecord(caps.extensions[TASKS_EXTENSION]))) {
    return fail(req.id, missingTasksCapability(), 400);
  }
  const taskId = req.params.taskId;
  if (typeof taskId !== "string" || taskId === "") {
    return fail(req.id, { code: JSONRPC_INVALID_PARAMS, message: "params.taskId must be a non-empty string" });
  }
  const unknownTask = (verb: string): Response | undefined => (unknown === "defer" ? undefined : fail(req.id, notFound(verb)));
  switch (req.method) {
    case "tasks/get": {
      const task = await engine.get(taskId, caller);
      if (!task) return unknownTask("retrieve");
      return jsonTextResponse(200, `{"jsonrpc":"2.0","id":${JSON.stringify(req.id)},"result":${taskResultJson(task)}}`);
    }
    case "tasks/update": {
      const responses = req.params.inputResponses;
      if (!isRecord(responses)) {
        return fail(req.id, { code: JSONRPC_INVALID_PARAMS, message: "params.inputResponses must be an object" });
      }
      if (!(await engine.update(taskId, caller, responses))) return unknownTask("update");
      return ok(req.id, { resultType: "complete" });
    }
    default: {
      if (!(await engine.cancel(taskId, caller))) return unknownTask("cancel");
      return ok(req.id, { resultType: "complete" });
    }
  }
}
