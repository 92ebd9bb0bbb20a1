// In-memory TaskStore (one process) on lru-cache.
//
// - An entry keeps only what a poll needs: owner, status and the tasks/get JSON.
//   The record is parsed from the JSON only when someone reads `record`, so a
//   finished task costs its bytes and nothing more.
// - A task expires at its record's ttlMs counted from creation, on the injected
//   clock; updates and reads never extend it (noUpdateTTL, no updateAgeOnGet).
// - The entries' sizes (see taskBytes) stay within maxBytes: least recently used
//   tasks (a get or an update is a use) are evicted first. A task larger than the
//   whole budget is refused (create: store_full; update: gone, and it is dropped).
// - Unfinished tasks are counted overall and per owner for the create limits; a
//   task stops counting when an update makes it terminal, or when it expires or is
//   evicted.
// - onEvict listeners hear of the tasks lru-cache drops on its own (expired or
//   evicted), never of a replacement; they are called from a microtask, so a
//   listener may use the store again.
import { LRUCache } from "lru-cache";
import { taskBytes } from "./task-bytes.js";
import {
  storedFromJson,
  TERMINAL,
  type CreateLimits,
  type CreateOutcome,
  type EvictionReason,
  type StoreStats,
  type StoredTask,
  type TaskRecord,
  type TaskStatus,
  type TaskStore,
  type UpdateOutcome,
} from "./task-store.js";

export { ENTRY_OVERHEAD_BYTES, taskBytes } from "./task-bytes.js";

/** What the cache holds per task: immutable, and no parsed record. */
interface Entry {
  readonly owner: string;
  readonly status: TaskStatus;
  readonly json: string;
}

type EvictListener = (task: TaskRecord, reason: EvictionReason) => void;

const unfinished = (status: TaskStatus): boolean => !TERMINAL.has(status);

/** How often, at most, a refused create looks for unfinished tasks that expired untouched. */
const SWEEP_EVERY_MS = 1_000;

export class MemoryTaskStore implements TaskStore {
  private readonly cache: LRUCache<string, Entry>;
  private readonly listeners: EvictListener[] = [];
  /** Unfinished task ids by owner; their total is `unfinishedCount`. */
  private readonly unfinishedByOwner = new Map<string, Set<string>>();
  private unfinishedCount = 0;
  /** Clock reading of the last sweep for expired unfinished tasks (see `sweepExpired`). */
  private sweptAt = Number.NaN;

  constructor(
    private readonly maxBytes: number,
    private readonly now: () => number,
  ) {
    this.cache = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      ttlAutopurge: true,
      // A task's TTL counts from its creation, not from its last update.
      noUpdateTTL: true,
      perf: { now },
      // Read the (injected) clock on every check instead of a value cached for a tick.
      ttlResolution: 0,
      dispose: (entry, taskId, reason) => {
        // A replacement comes from update(), which does its own counting.
        if (reason === "set") return;
        this.uncount(taskId, entry);
        if (reason === "evict" || reason === "expire") this.notify(entry, reason === "evict" ? "evicted" : "expired");
      },
    });
  }

  create(task: StoredTask, limits: CreateLimits): Promise<CreateOutcome> {
    const size = taskBytes(task);
    if (size > this.maxBytes) return Promise.resolve({ ok: false, refusal: "store_full" });
    const { taskId, ttlMs } = task.record;
    // A stale entry under this id is dropped (and reported) here; a live one is a caller bug.
    if (this.cache.get(taskId) !== undefined) return Promise.reject(new Error(`task ${taskId} is already stored`));
    if (unfinished(task.status)) {
      const refusal = this.overLimit(task.owner, limits);
      if (refusal !== undefined) return Promise.resolve({ ok: false, refusal });
    }
    const entry: Entry = { owner: task.owner, status: task.status, json: task.json };
    this.cache.set(taskId, entry, { ttl: ttlMs, size });
    this.count(taskId, entry);
    return Promise.resolve({ ok: true });
  }

  get(taskId: string): Promise<StoredTask | undefined> {
    const entry = this.cache.get(taskId);
    return Promise.resolve(entry && storedFromJson(entry.owner, entry.status, entry.json));
  }

  update(task: StoredTask): Promise<UpdateOutcome> {
    const taskId = task.record.taskId;
    // A get is a use (LRU order), and drops the entry if it has expired.
    const old = this.cache.get(taskId);
    if (old === undefined) return Promise.resolve("gone");
    if (TERMINAL.has(old.status)) return Promise.resolve("final");
    const size = taskBytes(task);
    if (size > this.maxBytes) {
      // Too large to keep: the task leaves the store (dispose uncounts it).
      this.cache.delete(taskId);
      return Promise.resolve("gone");
    }
    const entry: Entry = { owner: task.owner, status: task.status, json: task.json };
    // noUpdateTTL: the entry keeps the TTL it was created with.
    this.cache.set(taskId, entry, { size });
    this.uncount(taskId, old);
    this.count(taskId, entry);
    return Promise.resolve("ok");
  }

  onEvict(listener: EvictListener): void {
    this.listeners.push(listener);
  }

  /**
   * The entries lru-cache holds. On a real clock its autopurge timers drop expired
   * tasks about when they expire; on a clock moved by hand, an expired task leaves
   * when it is next touched (or when a create meets a limit, for unfinished ones).
   */
  stats(): Promise<StoreStats> {
    return Promise.resolve({ stored: this.cache.size, bytes: this.cache.calculatedSize, unfinished: this.unfinishedCount });
  }

  /** Always ready: it is this process's memory. */
  ping(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.cache.clear();
    return Promise.resolve();
  }

  private overLimit(owner: string, limits: CreateLimits): "max_tasks" | "max_tasks_per_caller" | undefined {
    const check = (): "max_tasks" | "max_tasks_per_caller" | undefined => {
      if (this.unfinishedCount >= limits.maxTasks) return "max_tasks";
      if ((this.unfinishedByOwner.get(owner)?.size ?? 0) >= limits.maxTasksPerCaller) return "max_tasks_per_caller";
      return undefined;
    };
    const refusal = check();
    if (refusal === undefined || !this.sweepExpired()) return refusal;
    return check();
  }

  /**
   * At a limit, unfinished tasks that expired without being touched must not hold
   * their slots: look at the unfinished ones only (at most maxTasks of them), at
   * most once a second, so a caller hammering at its limit cannot make every
   * create scan the store. Returns whether anything was dropped.
   */
  private sweepExpired(): boolean {
    const now = this.now();
    if (now - this.sweptAt < SWEEP_EVERY_MS) return false;
    this.sweptAt = now;
    const before = this.unfinishedCount;
    const ids: string[] = [];
    for (const set of this.unfinishedByOwner.values()) ids.push(...set);
    for (const id of ids) {
      // has() does not count as a use; an expired entry is then dropped (and reported) by get().
      if (!this.cache.has(id)) this.cache.get(id);
    }
    return this.unfinishedCount < before;
  }

  private count(taskId: string, entry: Entry): void {
    if (!unfinished(entry.status)) return;
    let ids = this.unfinishedByOwner.get(entry.owner);
    if (!ids) this.unfinishedByOwner.set(entry.owner, (ids = new Set()));
    if (!ids.has(taskId)) {
      ids.add(taskId);
      this.unfinishedCount++;
    }
  }

  private uncount(taskId: string, entry: Entry): void {
    if (!unfinished(entry.status)) return;
    const ids = this.unfinishedByOwner.get(entry.owner);
    if (!ids?.delete(taskId)) return;
    this.unfinishedCount--;
    if (ids.size === 0) this.unfinishedByOwner.delete(entry.owner);
  }

  private notify(entry: Entry, reason: EvictionReason): void {
    if (this.listeners.length === 0) return;
    // Out of lru-cache's own call stack, so a listener may use the store again.
    queueMicrotask(() => {
      const record = storedFromJson(entry.owner, entry.status, entry.json).record;
      for (const listener of this.listeners) listener(record, reason);
    });
  }
}
