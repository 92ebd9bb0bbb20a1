// What a stored task costs against a store's byte budget. Both stores charge the
// same, so a budget means the same thing whichever store holds the tasks.
import type { StoredTask } from "./task-store.js";

/** Per-entry bookkeeping beyond the JSON (id, status, map or hash entry) so tiny tasks are not free. */
export const ENTRY_OVERHEAD_BYTES = 256;

/**
 * The bytes a stored task is charged: its tasks/get JSON (what a poll sends, and
 * what dominates memory), its owner, and a fixed overhead. Bytes, not UTF-16 units.
 */
export function taskBytes(task: Pick<StoredTask, "owner" | "json">): number {
  return Buffer.byteLength(task.json) + Buffer.byteLength(task.owner) + ENTRY_OVERHEAD_BYTES;
}
