// tasks/get, tasks/update and tasks/cancel, served by the gateway for the tasks
// it owns. Unknown, expired and other callers' ids all answer the same -32602,
// so a task id reveals nothing to anyone but its creator.
import { TASKS_EXTENSION } from "../protocol/era-bridge.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import { JSONRPC_INVALID_PARAMS, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { MISSING_REQUIRED_CLIENT_CAPABILITY, type ModernRequest } from "../protocol/modern-request.js";
import type { TaskEngine } from "./engine.js";
import { detailedTask, type TaskRecord } from "./task.js";

export const TASK_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

export function missingTasksCapability(message = "Missing required client capability"): JsonRpcErrorObject {
  return {
    code: MISSING_REQUIRED_CLIENT_CAPABILITY,
    message: `${message}: declare the ${TASKS_EXTENSION} extension in clientCapabilities`,
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  };
}

export interface MethodAnswer {
  status: number;
  /** The serialized JSON-RPC response. */
  text: string;
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

function ok(id: string | number, result: JsonObject): MethodAnswer {
  return { status: 200, text: JSON.stringify({ jsonrpc: "2.0", id, result }) };
}

function fail(id: string | number, error: JsonRpcErrorObject, status = 200): MethodAnswer {
  return { status, text: JSON.stringify({ jsonrpc: "2.0", id, error }) };
}

const notFound = (verb: string): JsonRpcErrorObject => ({
  code: JSONRPC_INVALID_PARAMS,
  message: `Failed to ${verb} task: Task not found`,
});

export async function serveTaskMethod(engine: TaskEngine, req: ModernRequest, caller: string): Promise<MethodAnswer> {
  const caps = req.envelope.clientCapabilities;
  if (!(isRecord(caps.extensions) && isRecord(caps.extensions[TASKS_EXTENSION]))) {
    return fail(req.id, missingTasksCapability(), 400);
  }
  const taskId = req.params.taskId;
  if (typeof taskId !== "string" || taskId === "") {
    return fail(req.id, { code: JSONRPC_INVALID_PARAMS, message: "params.taskId must be a non-empty string" });
  }
  switch (req.method) {
    case "tasks/get": {
      const task = await engine.get(taskId, caller);
      if (!task) return fail(req.id, notFound("retrieve"));
      return { status: 200, text: `{"jsonrpc":"2.0","id":${JSON.stringify(req.id)},"result":${taskResultJson(task)}}` };
    }
    case "tasks/update": {
      const responses = req.params.inputResponses;
      if (!isRecord(responses)) {
        return fail(req.id, { code: JSONRPC_INVALID_PARAMS, message: "params.inputResponses must be an object" });
      }
      if (!(await engine.update(taskId, caller, responses))) return fail(req.id, notFound("update"));
      return ok(req.id, { resultType: "complete" });
    }
    default: {
      if (!(await engine.cancel(taskId, caller))) return fail(req.id, notFound("cancel"));
      return ok(req.id, { resultType: "complete" });
    }
  }
}
