// In-memory TaskStore on lru-cache: entries expire at their task's ttlMs, and
// the total size of the stored records (results included) stays within a byte
// budget, least recently used first. The size of a record is its JSON length,
// which is what a poll sends and what dominates memory.
import { LRUCache } from "lru-cache";
import type { TaskRecord } from "../tasks/task.js";
import type { EvictionReason, TaskStore } from "./task-store.js";

/** Per-entry bookkeeping beyond the JSON (ids, dates, map entry) so tiny tasks are not free. */
const ENTRY_OVERHEAD_BYTES = 256;

export function recordBytes(task: TaskRecord): number {
  return Buffer.byteLength(JSON.stringify(task)) + ENTRY_OVERHEAD_BYTES;
}

export class MemoryTaskStore implements TaskStore {
  private readonly cache: LRUCache<string, TaskRecord>;
  private readonly listeners: Array<(task: TaskRecord, reason: EvictionReason) => void> = [];

  constructor(maxBytes: number, now: () => number) {
    this.cache = new LRUCache<string, TaskRecord>({
      maxSize: maxBytes,
      sizeCalculation: recordBytes,
      ttlAutopurge: true,
      // A task's TTL counts from its creation, not from its last update.
      noUpdateTTL: true,
      perf: { now },
      // Read the (injected) clock on every check instead of a value cached for a tick.
      ttlResolution: 0,
      dispose: (task, _key, reason) => {
        if (reason === "evict" || reason === "expire") {
          for (const l of this.listeners) l(task, reason === "evict" ? "evicted" : "expired");
        }
      },
    });
  }

  get(taskId: string): Promise<TaskRecord | undefined> {
    return Promise.resolve(this.cache.get(taskId));
  }

  put(task: TaskRecord): Promise<void> {
    const ttl = task.ttlMs;
    this.cache.set(task.taskId, task, { ttl });
    return Promise.resolve();
  }

  delete(taskId: string): Promise<void> {
    this.cache.delete(taskId);
    return Promise.resolve();
  }

  onEvict(listener: (task: TaskRecord, reason: EvictionReason) => void): void {
    this.listeners.push(listener);
  }

  get size(): number {
    return this.cache.size;
  }

  get bytes(): number {
    return this.cache.calculatedSize;
  }

  close(): Promise<void> {
    this.cache.clear();
    return Promise.resolve();
  }
}
