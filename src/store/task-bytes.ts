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

/**
 * Room each unfinished task keeps in the byte budgets (tasks.storeBytes and the
 * caller's tasks.maxBytesPerCaller) on top of its own bytes, so that its outcome
 * can always be recorded: when its result does not fit, the task is ended failed
 * with a short error instead, and that failure is at most this much larger than
 * the unfinished version it replaces. A create is admitted only while every
 * unfinished task, the new one included, has this room.
 */
export const FINISH_RESERVE_BYTES = 1024;
