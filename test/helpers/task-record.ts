// Task records as the engine stores them, for store and lease tests.
import type { TaskRecord } from "../../src/store/task-store.js";

/** A working task by "alice", created (and last updated) at `at`; `overrides` replace any field. */
export function taskRecord(taskId: string, at: number | Date, overrides: Partial<TaskRecord> = {}): TaskRecord {
  const stamp = new Date(at).toISOString();
  return {
    taskId,
    owner: "alice",
    status: "working",
    createdAt: stamp,
    lastUpdatedAt: stamp,
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    inputRequests: {},
    ...overrides,
  };
}
