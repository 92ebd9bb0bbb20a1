// The Tasks extension (io.modelcontextprotocol/tasks) as wire knowledge: its
// name, whether a request declared it, the error for a request that did not,
// its methods, and the shapes it puts on the wire. The shapes follow the
// official @modelcontextprotocol/ext-tasks v2 types (a type test checks that
// they stay assignable); they are written out here because that package is a
// client library the gateway does not ship.
import { isRecord, type JsonObject } from "./json.js";
import { missingClientCapability, type Fault } from "./errors.js";
import type { JsonRpcErrorObject } from "./jsonrpc.js";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** The task methods a Tasks server serves (tasks/result and tasks/list are legacy-only). */
export const TASK_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

/** True when these client capabilities declare the extension (`extensions[TASKS_EXTENSION]` is an object). */
export function isTasksDeclared(clientCapabilities: JsonObject): boolean {
  const extensions = clientCapabilities.extensions;
  return isRecord(extensions) && isRecord(extensions[TASKS_EXTENSION]);
}

/** -32021 for a request that needs the extension and did not declare it (HTTP 400). */
export function missingTasksCapability(message = "Missing required client capability"): Fault {
  return missingClientCapability(`${message}: declare the ${TASKS_EXTENSION} extension in clientCapabilities`, {
    extensions: { [TASKS_EXTENSION]: {} },
  });
}

/** Capabilities without the extension: what goes to an upstream that must not answer with a task of its own. */
export function withoutTasksExtension(clientCapabilities: JsonObject): JsonObject {
  if (!isRecord(clientCapabilities.extensions)) return clientCapabilities;
  const { [TASKS_EXTENSION]: _tasks, ...extensions } = clientCapabilities.extensions;
  return { ...clientCapabilities, extensions };
}

// ── Wire shapes ─────────────────────────────────────────────────────────────

interface TaskFields {
  taskId: string;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
}

/** A task as tasks/get and notifications/tasks carry it: status-specific members inlined. */
export type DetailedTask =
  | (TaskFields & { status: "working" })
  | (TaskFields & { status: "input_required"; inputRequests: Record<string, JsonObject> })
  | (TaskFields & { status: "completed"; result: JsonObject })
  | (TaskFields & { status: "failed"; error: JsonRpcErrorObject })
  | (TaskFields & { status: "cancelled" });

/** The flat answer to a call that became a task: the task's fields beside resultType "task". */
export type CreateTaskResult = TaskFields & { resultType: "task"; status: "working" | "input_required" };
