// The 2025-11-25 experimental tasks on the wire (spec/mcp-2025-11-25-tasks.md),
// translated from what the engine stores: the 2026-07-28 DetailedTask JSON.
// Pure: no I/O.
//   - Task: `ttl` and `pollInterval` (the modern `ttlMs`, `pollIntervalMs`);
//     a tool result with isError: true is `failed` here (it is `completed` in 2026-07-28).
//   - CreateTaskResult: `{ task: Task }`.
//   - tasks/result: the call's own result, with the related-task `_meta`.
//   - input requests inside a task go to the client as server-to-client
//     requests with the related-task `_meta`, under an id the gateway chose.
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { META } from "../protocol/modern-request.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import type { TaskMode } from "../policy/policy.js";

const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** The task methods of 2025-11-25. */
export const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set([
  "tasks/get",
  "tasks/result",
  "tasks/list",
  "tasks/cancel",
]);

type LegacyTaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** The 2025-11-25 `Task`. */
export interface LegacyTask {
  taskId: string;
  status: LegacyTaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
}

/** A DetailedTask (or the stored tasks/get JSON, with its resultType) as an object; undefined if it is not one. */
export function parseDetailed(json: string): JsonObject | undefined {
  try {
    const parsed: unknown = JSON.parse(json);
    return isRecord(parsed) && typeof parsed.taskId === "string" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function isToolError(result: unknown): boolean {
  return isRecord(result) && result.isError === true;
}

/** The status a 2025-11-25 client sees: a tool result with isError is a failed task there. */
function legacyStatus(detailed: JsonObject): LegacyTaskStatus {
  const status = detailed.status as LegacyTaskStatus;
  return status === "completed" && isToolError(detailed.result) ? "failed" : status;
}

export function legacyTask(detailed: JsonObject): LegacyTask {
  const ttl = typeof detailed.ttlMs === "number" ? detailed.ttlMs : null;
  return {
    taskId: detailed.taskId as string,
    status: legacyStatus(detailed),
    ...(typeof detailed.statusMessage === "string" && { statusMessage: detailed.statusMessage }),
    createdAt: detailed.createdAt as string,
    lastUpdatedAt: detailed.lastUpdatedAt as string,
    ttl,
    ...(typeof detailed.pollIntervalMs === "number" && { pollInterval: detailed.pollIntervalMs }),
  };
}

/** The server capability the gateway adds to a relayed initialize result. */
function tasksCapability(): JsonObject {
  return { list: {}, cancel: {}, requests: { tools: { call: {} } } };
}

/** Whether an initialize result (or its request's params) declares the tasks capability. */
export function declaresTasks(holder: unknown): boolean {
  return isRecord(holder) && isRecord(holder.capabilities) && isRecord(holder.capabilities.tasks);
}

/** initialize: the tasks capability added (only used when the upstream declares none). */
export function withTasksCapability(result: JsonObject): JsonObject {
  const capabilities = isRecord(result.capabilities) ? result.capabilities : {};
  return { ...result, capabilities: { ...capabilities, tasks: tasksCapability() } };
}

/** The tools/list taskSupport a policy mode gives: required → required, never → forbidden, else optional. */
function taskSupportOf(mode: TaskMode): "required" | "optional" | "forbidden" {
  return mode === "required" ? "required" : mode === "never" ? "forbidden" : "optional";
}

/** tools/list: each tool's execution.taskSupport set from the policy. */
export function taskSupportEdit(modeOf: (tool: string) => TaskMode): ResultEdit {
  return (result) => {
    if (!Array.isArray(result.tools)) return result;
    const tools = result.tools.map((t: unknown) => {
      if (!isRecord(t) || typeof t.name !== "string") return t;
      const execution = isRecord(t.execution) ? t.execution : {};
      return { ...t, execution: { ...execution, taskSupport: taskSupportOf(modeOf(t.name)) } };
    });
    return { ...result, tools };
  };
}

/** The CreateTaskResult answering a task-augmented request. */
export function legacyCreateTaskResult(detailed: JsonObject): JsonObject {
  return { task: legacyTask(detailed) };
}

/**
 * The call's result as the tool returned it: the modern stamps the bridge put
 * on it (resultType, the upstream's serverInfo) taken off, the related-task
 * `_meta` put on (tasks/result MUST carry it).
 */
export function legacyTaskResult(result: unknown, taskId: string): JsonObject {
  const base: JsonObject = isRecord(result) ? { ...result } : {};
  delete base.resultType;
  const meta: JsonObject = isRecord(base._meta) ? { ...base._meta } : {};
  delete meta[META.serverInfo];
  meta[RELATED_TASK] = { taskId };
  base._meta = meta;
  return base;
}

export function statusNotification(task: LegacyTask): JsonObject {
  return { jsonrpc: "2.0", method: "notifications/tasks/status", params: { ...task } };
}

const RELAY_PREFIX = "gw-task-input:";

/** The id of an input request relayed to the client: the task and the key, so its answer finds its way back. */
export function relayId(taskId: string, key: string): string {
  return `${RELAY_PREFIX}${taskId}:${key}`;
}

export function parseRelayId(id: JsonRpcId | undefined): { taskId: string; key: string } | undefined {
  if (typeof id !== "string" || !id.startsWith(RELAY_PREFIX)) return undefined;
  const rest = id.slice(RELAY_PREFIX.length);
  const colon = rest.indexOf(":");
  if (colon <= 0 || colon === rest.length - 1) return undefined;
  return { taskId: rest.slice(0, colon), key: rest.slice(colon + 1) };
}

/** An input request of a task (the modern `{ method, params }`) as a server-to-client request. */
export function relayRequest(taskId: string, key: string, request: JsonObject): JsonObject {
  const params = isRecord(request.params) ? request.params : {};
  const meta = isRecord(params._meta) ? params._meta : {};
  return {
    jsonrpc: "2.0",
    id: relayId(taskId, key),
    method: request.method,
    params: { ...params, _meta: { ...meta, [RELATED_TASK]: { taskId } } },
  };
}
