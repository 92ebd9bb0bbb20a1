// Where task state lives. The engine talks only to this interface, so a shared
// store (for several gateway processes) can replace the in-memory one without
// touching the engine. Methods are async for that reason; the memory store
// answers synchronously inside.
import type { TaskRecord } from "../tasks/task.js";

export type EvictionReason = "expired" | "evicted";

export interface TaskStore {
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** Creates or replaces. A task keeps the TTL it was created with. */
  put(task: TaskRecord): Promise<void>;
  delete(taskId: string): Promise<void>;
  /** Called when the store drops a task on its own (TTL or byte budget). */
  onEvict(listener: (task: TaskRecord, reason: EvictionReason) => void): void;
  readonly size: number;
  /** Bytes accounted against the budget. */
  readonly bytes: number;
  close(): Promise<void>;
}
