// What a stored task costs against a store's byte budget. Both stores charge the
// same, so a budget means the same thing whichever store holds the tasks.
import type { StoredTask } from "./task-store.js";

/**
 * What a task costs beyond its JSON and owner, so a budget bounds the memory its tasks really take. Measured on the
 * memory store (`node --expose-gc --import tsx bench/investigations/store-entry-cost.ts`: 38,000 finished tasks, V8 heap used
 * plus the brk heap's resident bytes after a full GC, less what taskBytes counts without this): 596–632 B per task,
 * whatever the result's size: V8 459 B (the entry, its Buffer and ArrayBuffer objects, the id, three Map entries) and
 * about 180 B of malloc beside each Buffer's bytes (chunk header, V8's backing-store record). Since the LRU order
 * moved from two of those Maps into links in the entry (lru-order.ts), 543 B: V8 403 B per task. A finished 1 KB task
 * takes about 900 B beyond its JSON in Redis (README, "Bytes per task"), so Redis is not undercharged either.
 */
export const ENTRY_OVERHEAD_BYTES = 640;

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
