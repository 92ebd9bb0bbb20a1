// Where task state lives, and what a task is as data. The engine (tasks/) talks
// only to this interface, so the in-memory store (one process) and the Redis
// store (replicas sharing tasks) are interchangeable. The record type lives here,
// beside the interface, so that store/ depends on nothing above it.
import type { JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";

export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

export interface TaskRecord {
  taskId: string;
  /** Caller identity digest of the creating request. */
  owner: string;
  status: TaskStatus;
  statusMessage?: string | undefined;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** Outstanding server→client requests, by key (unique for the task's life). */
  inputRequests: Record<string, JsonObject>;
  result?: JsonObject | undefined;
  error?: JsonRpcErrorObject | undefined;
}

/**
 * A task as stored. `json` is the `result` member of a tasks/get answer (the
 * DetailedTask with `resultType: "complete"`), serialized once per change, so a
 * poll sends stored bytes and never re-serializes a (possibly large) result.
 * `owner` and `status` are kept beside it so that serving a poll parses nothing;
 * `record` may be parsed from `json` lazily, on first use.
 */
export interface StoredTask {
  readonly owner: string;
  readonly status: TaskStatus;
  readonly json: string;
  readonly record: TaskRecord;
  /**
   * For an unfinished task in a shared store: the replica holding its lease, or
   * null when the lease lapsed (the task's replica is gone). Undefined where the
   * store has no leases (one process runs everything).
   */
  readonly runner?: string | null | undefined;
}

/** The stored form of a record whose tasks/get JSON is `json`. */
export function storedTask(record: TaskRecord, json: string): StoredTask {
  return { owner: record.owner, status: record.status, json, record };
}

/** A stored task rebuilt from its bytes; the record is parsed only if someone asks for it. */
export function storedFromJson(owner: string, status: TaskStatus, json: string, runner?: string | null): StoredTask {
  let record: TaskRecord | undefined;
  return {
    owner,
    status,
    json,
    runner,
    get record(): TaskRecord {
      if (!record) {
        const { resultType: _rt, ...fields } = JSON.parse(json) as Omit<TaskRecord, "owner"> & { resultType?: string };
        record = { ...fields, owner, inputRequests: fields.inputRequests ?? {} };
      }
      return record;
    },
  };
}

/**
 * A stored task as its bytes: what a poll needs and nothing parsed. `bytes` is its tasks/get JSON (the
 * StoredTask's `json`) in UTF-8, the store's own copy: readers must not change it.
 */
export interface StoredBytes {
  readonly owner: string;
  readonly status: TaskStatus;
  readonly bytes: Buffer;
  /** As StoredTask.runner: the lease holder of an unfinished task in a shared store, null once it lapsed. */
  readonly runner?: string | null | undefined;
}

/** Limits on unfinished tasks, counted over every process that shares the store. */
export interface CreateLimits {
  maxTasks: number;
  maxTasksPerCaller: number;
}

/**
 * Why a create was refused: a count limit, the global byte budget (unfinished
 * tasks fill tasks.storeBytes once every finished one is evicted), or the
 * caller's own byte quota (its unfinished tasks fill tasks.maxBytesPerCaller).
 */
export type CreateRefusal = "max_tasks" | "max_tasks_per_caller" | "store_full" | "max_bytes_per_caller";

export type CreateOutcome = { ok: true } | { ok: false; refusal: CreateRefusal };

/**
 * "ok": written. "final": the stored task is already terminal and stays as it is
 * (a terminal task never changes). "gone": expired (an unfinished task is never
 * evicted). "full": not written, and the stored version stays: evicting finished
 * tasks cannot make room for this version within the byte budget or the
 * caller's quota (the engine then records a short failure, which always fits:
 * see FINISH_RESERVE_BYTES).
 */
export type UpdateOutcome = "ok" | "final" | "gone" | "full";

export type EvictionReason = "expired" | "evicted";

/** What onEvict hears of a task the store dropped on its own. */
export type EvictedTask = Pick<TaskRecord, "taskId" | "owner" | "status">;

export interface StoreStats {
  /** Tasks held (any status). */
  stored: number;
  /** Bytes accounted against the budget. */
  bytes: number;
  /** Working or input_required tasks. */
  unfinished: number;
}

/**
 * Fair use of the byte budget, the same in every store:
 * - Every stored task is charged taskBytes; all of them count against
 *   tasks.storeBytes, and all of one caller's (owner's) against its quota,
 *   tasks.maxBytesPerCaller (unfinished and finished alike).
 * - Only finished tasks are ever evicted, least recently used first (finishing
 *   and a get are uses). When a caller's quota needs room, only that caller's own
 *   finished tasks go; when the global budget needs room, anyone's do.
 * - An unfinished task is never evicted. A create (or an unfinished task that
 *   grows) that finished tasks cannot make room for is refused (store_full,
 *   max_bytes_per_caller; for an update, "full").
 * - Each unfinished task keeps FINISH_RESERVE_BYTES of room, so its outcome can
 *   always be recorded: a result that cannot fit ends the task failed instead.
 */
export interface TaskStore {
  /**
   * Stores a new unfinished task if the limits allow it. The TTL (the record's
   * ttlMs) counts from now, the task's creation, and is never extended.
   */
  create(task: StoredTask, limits: CreateLimits): Promise<CreateOutcome>;
  get(taskId: string): Promise<StoredTask | undefined>;
  /**
   * get() at once, as stored bytes, for a store in this process's memory (a get of a finished task is a use,
   * as in get). Absent where a read waits for another process (Redis): callers then use get(). The memory
   * store has no leases, so what it returns needs no lapsed-lease check. The bytes are the store's own and may
   * hold another task's answer once the store is next called: copy them before that (the poll path does).
   */
  getBytesNow?(taskId: string): StoredBytes | undefined;
  /**
   * get() as stored bytes, for a store whose read waits for another process (Redis): the tasks/get JSON as the
   * store returned it, never decoded, so a poll writes it as it is. The bytes are the caller's own.
   */
  getBytes?(taskId: string): Promise<StoredBytes | undefined>;
  /** Replaces a stored task that is not terminal yet; see UpdateOutcome. */
  update(task: StoredTask): Promise<UpdateOutcome>;
  /**
   * Called when the store drops a task on its own, where the store can tell:
   * "expired" (TTL), or "evicted" (a finished task, to make room within the byte
   * budget or its caller's quota; unfinished tasks are never evicted).
   */
  onEvict(listener: (task: EvictedTask, reason: EvictionReason) => void): void;
  stats(): Promise<StoreStats>;
  /** Resolves when the store answers (readiness); rejects with the reason when it does not. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
