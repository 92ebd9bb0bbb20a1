// In-memory TaskStore (one process): a Map of entries, their TTLs and the byte
// budgets, kept here.
//
// - An entry keeps only what a poll needs: owner, status, the tasks/get JSON (as
//   bytes, off the V8 heap) and its size. The record is parsed from the JSON only when someone reads `record`,
//   so a finished task costs its bytes and nothing more.
// - A task expires at its record's ttlMs counted from creation, on the injected
//   clock; updates and reads never extend it. An expired task is dropped when it
//   is next read, or by one sweep over the store every PURGE_EVERY_MS, not by a
//   timer of its own: lru-cache's ttlAutopurge kept a setTimeout per entry, 217 B
//   of a finished 1 KB task's ~2 KB (bench/RESULTS.md, "Finished tasks: RSS").
// - Byte budgets (see task-store.ts, "Fair use"): the entries' sizes (taskBytes)
//   stay within maxBytes, and one owner's within maxBytesPerCaller. Room is made
//   by evicting finished tasks only, least recently used first (finishing, and a
//   get of a finished task, are uses): the owner's own for its quota, anyone's for
//   the global budget (that order is kept in lists through the entries, lru-order.ts). Unfinished tasks are never evicted: a create that cannot be
//   given room is refused (store_full, max_bytes_per_caller), an update "full".
//   Each unfinished task keeps FINISH_RESERVE_BYTES of room for its outcome.
// - Unfinished tasks are counted overall and per owner for the create limits; a
//   task stops counting when an update makes it terminal, or when it expires.
// - onEvict listeners hear of the tasks dropped on the store's own (expired, or
//   evicted to make room), never of a replacement; they are called from a
//   microtask, so a listener may use the store again.
import { LruEnds, LruOrder, type LruLinks } from "./lru-order.js";
import { SpareBytes } from "./spare-bytes.js";
import { FINISH_RESERVE_BYTES, taskBytes } from "./task-bytes.js";
import {
  storedFromJson,
  TERMINAL,
  type CreateLimits,
  type CreateOutcome,
  type CreateRefusal,
  type EvictedTask,
  type EvictionReason,
  type StoreStats,
  type StoredBytes,
  type StoredTask,
  type TaskStatus,
  type TaskStore,
  type UpdateOutcome,
} from "./task-store.js";

export { ENTRY_OVERHEAD_BYTES, FINISH_RESERVE_BYTES, taskBytes } from "./task-bytes.js";

/** What the store holds per task: immutable but for its places in the LRU order, and no parsed record. */
interface Entry extends StoredBytes, LruLinks<Entry> {
  /** The key it is stored under: an entry met in the LRU order is dropped by it. */
  readonly taskId: string;
  readonly owner: string;
  readonly status: TaskStatus;
  /**
   * The tasks/get JSON as UTF-8 bytes outside the V8 heap. Kept as a string, 100,000 finished 1 KB results
   * left V8 holding 355 MiB of heap pages for 113 MiB of live objects (the strings scattered over pages
   * that the creation's garbage had grown); as bytes, the heap holds only small objects, and the bytes go to
   * the next entry of about their size when this one goes (spare-bytes.ts).
   */
  readonly bytes: Buffer;
  /** taskBytes of this version. */
  readonly size: number;
  /** Clock reading after which the task is gone: its creation + ttlMs, kept by every later version. */
  readonly expiresAt: number;
}

/**
 * `owner`: the owner's one string (see Share.owner), not the copy the task came with. Every entry has the same
 * fields, links included, so V8 gives them one shape and the reads that meet them stay monomorphic.
 */
function entryOf(
  taskId: string,
  bytes: Buffer,
  status: TaskStatus,
  owner: string,
  size: number,
  expiresAt: number,
): Entry {
  return {
    taskId,
    owner,
    status,
    bytes,
    size,
    expiresAt,
    older: undefined,
    newer: undefined,
    ownerOlder: undefined,
    ownerNewer: undefined,
  };
}

/** One owner's share: its bytes, and its tasks by kind. */
interface Share {
  /** The owner, one string for all its entries: each create brings its own copy of the 43-character digest. */
  readonly owner: string;
  /** Bytes of all its tasks. */
  bytes: number;
  /** Bytes of its unfinished tasks. */
  unfinishedBytes: number;
  unfinished: Set<string>;
  /** Its finished tasks, least recently used first (the owner's list of the store's LruOrder). */
  readonly finished: LruEnds<Entry>;
}

type EvictListener = (task: EvictedTask, reason: EvictionReason) => void;

const unfinished = (status: TaskStatus): boolean => !TERMINAL.has(status);

/** How often, at most, a refused create looks for unfinished tasks that expired untouched. */
const SWEEP_EVERY_MS = 1_000;

/**
 * How often (real time) one pass drops every expired task that nobody read: an expired working task's upstream
 * call is cancelled within this, and a pass over 100,000 entries is a few milliseconds.
 */
const PURGE_EVERY_MS = 5_000;

export interface MemoryTaskStoreOptions {
  /** Most bytes one owner's tasks may take (tasks.maxBytesPerCaller). Default: maxBytes (no quota beyond the budget). */
  maxBytesPerCaller?: number | undefined;
}

export class MemoryTaskStore implements TaskStore {
  /** Every task by id. */
  private readonly entries = new Map<string, Entry>();
  /** The bytes of entries that left, for the next ones (see spare-bytes.ts). */
  private readonly spare = new SpareBytes();
  private readonly purgeTimer: NodeJS.Timeout;
  private readonly listeners: EvictListener[] = [];
  private readonly maxBytesPerCaller: number;
  private readonly shares = new Map<string, Share>();
  /** Every finished task, least recently used first, overall and per owner. */
  private readonly finished = new LruOrder<Entry>();
  private bytes = 0;
  private unfinishedBytes = 0;
  private unfinishedCount = 0;
  /** Clock reading of the last sweep for expired unfinished tasks (see `sweepExpired`). */
  private sweptAt = Number.NaN;

  constructor(
    private readonly maxBytes: number,
    private readonly now: () => number,
    options: MemoryTaskStoreOptions = {},
  ) {
    this.maxBytesPerCaller = Math.min(options.maxBytesPerCaller ?? maxBytes, maxBytes);
    // One timer for the store; it does not keep the process alive.
    this.purgeTimer = setInterval(() => this.purgeExpired(), PURGE_EVERY_MS).unref();
  }

  create(task: StoredTask, limits: CreateLimits): Promise<CreateOutcome> {
    const size = taskBytes(task);
    if (size > this.maxBytes) return Promise.resolve({ ok: false, refusal: "store_full" });
    if (size > this.maxBytesPerCaller) return Promise.resolve({ ok: false, refusal: "max_bytes_per_caller" });
    const { taskId, ttlMs } = task.record;
    // A stale entry under this id is dropped (and reported) here; a live one is a caller bug.
    if (this.live(taskId) !== undefined) return Promise.reject(new Error(`task ${taskId} is already stored`));
    const counted = unfinished(task.status);
    const refusal = this.admit(task.owner, size, counted, limits);
    if (refusal !== undefined) return Promise.resolve({ ok: false, refusal });
    this.makeRoom(task.owner, size);
    // A TTL of 0 never expires (as lru-cache, which held the entries before, had it).
    const expiresAt = ttlMs > 0 ? this.now() + ttlMs : Number.POSITIVE_INFINITY;
    const entry = entryOf(taskId, this.spare.take(task.json), task.status, this.ownerOf(task), size, expiresAt);
    this.entries.set(taskId, entry);
    this.count(taskId, entry);
    return Promise.resolve({ ok: true });
  }

  get(taskId: string): Promise<StoredTask | undefined> {
    const entry = this.getBytesNow(taskId);
    return Promise.resolve(entry && storedFromJson(entry.owner, entry.status, entry.bytes.toString("utf8")));
  }

  /** The entry itself: a poll sends its bytes as they are (endpoints/task-poll.ts), without a promise or a decode. */
  getBytesNow(taskId: string): StoredBytes | undefined {
    const entry = this.live(taskId);
    if (entry && !unfinished(entry.status)) this.touch(entry);
    return entry;
  }

  update(task: StoredTask): Promise<UpdateOutcome> {
    const taskId = task.record.taskId;
    // Drops the entry if it has expired.
    const old = this.live(taskId);
    if (old === undefined) return Promise.resolve("gone");
    if (TERMINAL.has(old.status)) return Promise.resolve("final");
    const size = taskBytes(task);
    if (!this.fits(old, size, unfinished(task.status))) return Promise.resolve("full");
    this.makeRoom(old.owner, size - old.size);
    // The new version keeps the expiry the task was created with.
    const entry = entryOf(taskId, this.spare.take(task.json), task.status, this.ownerOf(task), size, old.expiresAt);
    this.entries.set(taskId, entry);
    this.uncount(taskId, old);
    this.count(taskId, entry);
    this.spare.give(old.bytes);
    return Promise.resolve("ok");
  }

  onEvict(listener: EvictListener): void {
    this.listeners.push(listener);
  }

  /**
   * The entries held. An expired task leaves when it is next read, when the
   * periodic purge passes (within PURGE_EVERY_MS of real time), or when a create
   * meets a limit (unfinished ones); until then it is still counted here.
   */
  stats(): Promise<StoreStats> {
    return Promise.resolve({ stored: this.entries.size, bytes: this.bytes, unfinished: this.unfinishedCount });
  }

  /** Always ready: it is this process's memory. */
  ping(): Promise<void> {
    return Promise.resolve();
  }

  /** Empties the store without reporting anything, and stops its purge timer. */
  close(): Promise<void> {
    clearInterval(this.purgeTimer);
    for (const [taskId, entry] of this.entries) this.uncount(taskId, entry);
    this.entries.clear();
    this.spare.clear();
    return Promise.resolve();
  }

  /** The task's entry unless it has expired; an expired one is dropped and reported here. */
  private live(taskId: string): Entry | undefined {
    const entry = this.entries.get(taskId);
    if (entry === undefined || this.now() <= entry.expiresAt) return entry;
    this.drop(taskId, entry, "expired");
    return undefined;
  }

  /** Drops every expired task (on the injected clock) and reports each. */
  private purgeExpired(): void {
    const now = this.now();
    for (const [taskId, entry] of this.entries) if (now > entry.expiresAt) this.drop(taskId, entry, "expired");
  }

  private drop(taskId: string, entry: Entry, reason: EvictionReason): void {
    this.entries.delete(taskId);
    this.uncount(taskId, entry);
    this.notify(taskId, entry, reason);
    this.spare.give(entry.bytes);
  }

  private share(owner: string): Share | undefined {
    return this.shares.get(owner);
  }

  /** The string its entries already hold for the task's owner, if it has any. */
  private ownerOf(task: Pick<StoredTask, "owner">): string {
    return this.share(task.owner)?.owner ?? task.owner;
  }

  /** Why a new task of `size` bytes cannot be admitted, if it cannot (nothing is evicted here). */
  private admit(owner: string, size: number, counted: boolean, limits: CreateLimits): CreateRefusal | undefined {
    const check = (): CreateRefusal | undefined => {
      const mine = this.share(owner);
      if (!counted) {
        // A finished task needs room beside the unfinished ones only: every finished one may go.
        if (this.unfinishedBytes + size > this.maxBytes) return "store_full";
        if ((mine?.unfinishedBytes ?? 0) + size > this.maxBytesPerCaller) return "max_bytes_per_caller";
        return undefined;
      }
      if (this.unfinishedCount >= limits.maxTasks) return "max_tasks";
      const mineCount = mine?.unfinished.size ?? 0;
      if (mineCount >= limits.maxTasksPerCaller) return "max_tasks_per_caller";
      // Every unfinished task, the new one included, keeps its reserve.
      if (this.unfinishedBytes + FINISH_RESERVE_BYTES * (this.unfinishedCount + 1) + size > this.maxBytes)
        return "store_full";
      if ((mine?.unfinishedBytes ?? 0) + FINISH_RESERVE_BYTES * (mineCount + 1) + size > this.maxBytesPerCaller)
        return "max_bytes_per_caller";
      return undefined;
    };
    const refusal = check();
    if (refusal === undefined || !this.sweepExpired()) return refusal;
    return check();
  }

  /** Whether a new version (`size`) of the unfinished task `old` can be given room. */
  private fits(old: Entry, size: number, staysUnfinished: boolean): boolean {
    if (size > this.maxBytes || size > this.maxBytesPerCaller) return false;
    const mine = this.share(old.owner);
    const mineUnfinished = mine?.unfinishedBytes ?? 0;
    if (!staysUnfinished) {
      // Its finished version needs room beside the other unfinished tasks.
      return (
        this.unfinishedBytes - old.size + size <= this.maxBytes &&
        mineUnfinished - old.size + size <= this.maxBytesPerCaller
      );
    }
    const grow = size - old.size;
    if (grow <= 0) return true;
    return (
      this.unfinishedBytes + grow + FINISH_RESERVE_BYTES * this.unfinishedCount <= this.maxBytes &&
      mineUnfinished + grow + FINISH_RESERVE_BYTES * (mine?.unfinished.size ?? 0) <= this.maxBytesPerCaller
    );
  }

  /**
   * Evicts finished tasks until `grow` more bytes of `owner`'s fit: its own least
   * recently used ones for its quota, then anyone's for the global budget. The
   * caller checked that they can (admit, fits).
   */
  private makeRoom(owner: string, grow: number): void {
    if (grow <= 0) return;
    const mine = this.share(owner);
    while (mine && mine.bytes + grow > this.maxBytesPerCaller) {
      const oldest = mine.finished.oldest;
      if (oldest === undefined) break;
      this.drop(oldest.taskId, oldest, "evicted");
    }
    while (this.bytes + grow > this.maxBytes) {
      const oldest = this.finished.all.oldest;
      if (oldest === undefined) break;
      this.drop(oldest.taskId, oldest, "evicted");
    }
  }

  /** A finished task was used: it becomes the most recently used, overall and for its owner. */
  private touch(entry: Entry): void {
    const mine = this.share(entry.owner);
    if (mine) this.finished.use(entry, mine.finished);
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
    for (const share of this.shares.values()) ids.push(...share.unfinished);
    // An expired one is dropped (and reported) by live(); reading an unfinished task is not a use.
    for (const id of ids) this.live(id);
    return this.unfinishedCount < before;
  }

  private count(taskId: string, entry: Entry): void {
    let mine = this.shares.get(entry.owner);
    if (!mine)
      this.shares.set(
        entry.owner,
        (mine = { owner: entry.owner, bytes: 0, unfinishedBytes: 0, unfinished: new Set(), finished: new LruEnds() }),
      );
    this.bytes += entry.size;
    mine.bytes += entry.size;
    if (unfinished(entry.status)) {
      mine.unfinished.add(taskId);
      mine.unfinishedBytes += entry.size;
      this.unfinishedBytes += entry.size;
      this.unfinishedCount++;
    } else {
      // Finishing is a use: the most recently used.
      this.finished.add(entry, mine.finished);
    }
  }

  private uncount(taskId: string, entry: Entry): void {
    const mine = this.shares.get(entry.owner);
    if (!mine) return;
    if (unfinished(entry.status)) {
      if (!mine.unfinished.delete(taskId)) return;
      mine.unfinishedBytes -= entry.size;
      this.unfinishedBytes -= entry.size;
      this.unfinishedCount--;
    } else {
      if (!this.finished.remove(entry, mine.finished)) return;
    }
    this.bytes -= entry.size;
    mine.bytes -= entry.size;
    if (mine.unfinished.size === 0 && mine.finished.size === 0) this.shares.delete(entry.owner);
  }

  private notify(taskId: string, entry: Entry, reason: EvictionReason): void {
    if (this.listeners.length === 0) return;
    // Out of the store's own call stack, so a listener may use the store again.
    const task: EvictedTask = { taskId, owner: entry.owner, status: entry.status };
    queueMicrotask(() => {
      for (const listener of this.listeners) listener(task, reason);
    });
  }
}
