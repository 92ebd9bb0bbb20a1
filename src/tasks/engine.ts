// The task engine: creates tasks (stored before anyone hears of them), applies
// every change through the state machine, binds each task to its creator, keeps
// the runtime half of unfinished tasks (how to answer or cancel the upstream
// call), enforces the limits, and pushes changes to watchers.
import { randomBytes } from "node:crypto";
import type { Logger } from "../log/logger.js";
import type { JsonObject } from "../protocol/json.js";
import type { TaskStore } from "../store/task-store.js";
import { detailedTask, TERMINAL, transition, type TaskEvent, type TaskRecord } from "./task.js";

/** How the engine reaches the upstream call behind an unfinished task. */
export interface TaskRuntime {
  /** Delivers the client's answer for an input request key to the upstream. */
  answer(key: string, value: unknown): Promise<void>;
  /** Stops the upstream call (notifications/cancelled with the upstream id, stop reading). */
  cancel(reason: string): void;
}

export interface TaskLimits {
  maxTasks: number;
  maxTasksPerCaller: number;
  maxResultBytes: number;
}

export type CreateOutcome = { ok: true; task: TaskRecord } | { ok: false; reason: string };

/** 128 random bits from the CSPRNG, base64url: unguessable and URL/header safe. */
export function newTaskId(): string {
  return randomBytes(16).toString("base64url");
}

export class TaskEngine {
  private readonly runtimes = new Map<string, TaskRuntime>();
  private readonly unfinishedByCaller = new Map<string, number>();
  private readonly watchers = new Map<string, Set<(task: JsonObject) => void>>();
  /** Per-task promise chain: changes to one task are applied one at a time, in order. */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(
    readonly store: TaskStore,
    private readonly limits: TaskLimits,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {
    store.onEvict((task, reason) => {
      const runtime = this.runtimes.get(task.taskId);
      if (runtime) {
        // A working task that leaves the store must not leave its upstream call running.
        runtime.cancel(`task ${reason}`);
        this.finish(task);
        this.log.info("unfinished task dropped from the store", { reason });
      }
      this.watchers.delete(task.taskId);
    });
  }

  get unfinished(): number {
    return this.runtimes.size;
  }

  private finish(task: TaskRecord): void {
    if (!this.runtimes.delete(task.taskId)) return;
    const n = (this.unfinishedByCaller.get(task.owner) ?? 1) - 1;
    if (n <= 0) this.unfinishedByCaller.delete(task.owner);
    else this.unfinishedByCaller.set(task.owner, n);
  }

  /** Why a new task for this caller would be refused, or undefined if it would not. */
  refusal(owner: string): string | undefined {
    if (this.runtimes.size >= this.limits.maxTasks) return `the gateway has ${this.limits.maxTasks} unfinished tasks (tasks.maxTasks)`;
    if ((this.unfinishedByCaller.get(owner) ?? 0) >= this.limits.maxTasksPerCaller) {
      return `this caller has ${this.limits.maxTasksPerCaller} unfinished tasks (tasks.maxTasksPerCaller)`;
    }
    return undefined;
  }

  /** Creates a working task and resolves only once it is in the store. */
  async create(owner: string, ttlMs: number, pollIntervalMs: number, runtime: TaskRuntime): Promise<CreateOutcome> {
    const refused = this.refusal(owner);
    if (refused) return { ok: false, reason: refused };
    const stamp = new Date(this.now()).toISOString();
    const task: TaskRecord = {
      taskId: newTaskId(),
      owner,
      status: "working",
      createdAt: stamp,
      lastUpdatedAt: stamp,
      ttlMs,
      pollIntervalMs,
      inputRequests: {},
    };
    this.runtimes.set(task.taskId, runtime);
    this.unfinishedByCaller.set(owner, (this.unfinishedByCaller.get(owner) ?? 0) + 1);
    try {
      await this.store.put(task);
    } catch (err) {
      // Not stored means not created: give the caller's quota back.
      this.finish(task);
      throw err;
    }
    return { ok: true, task };
  }

  private serial<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(taskId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.chains.set(taskId, settled);
    void settled.then(() => {
      if (this.chains.get(taskId) === settled) this.chains.delete(taskId);
    });
    return next;
  }

  /** Applies one event; returns the new record (undefined if the task is gone). */
  apply(taskId: string, event: TaskEvent): Promise<TaskRecord | undefined> {
    return this.serial(taskId, async () => {
      const task = await this.store.get(taskId);
      if (!task) return undefined;
      let next = transition(task, event, new Date(this.now()));
      if (next === task) return task;
      next = this.bounded(next);
      await this.store.put(next);
      if ((await this.store.get(taskId)) === undefined) {
        // The store refused the record (larger than its whole budget): the task is gone, so is its call.
        this.runtimes.get(taskId)?.cancel("task record too large for the store");
        this.finish(next);
        this.watchers.delete(taskId);
        return undefined;
      }
      if (TERMINAL.has(next.status)) this.finish(next);
      this.push(next);
      return next;
    });
  }

  /** A result (or error) past maxResultBytes would break the store's budget: the task fails with a clear error instead. */
  private bounded(task: TaskRecord): TaskRecord {
    const payload = task.status === "completed" ? task.result : task.status === "failed" ? task.error : undefined;
    if (payload === undefined) return task;
    const size = Buffer.byteLength(JSON.stringify(payload));
    if (size <= this.limits.maxResultBytes) return task;
    const what = task.status === "completed" ? "result" : "error";
    const message = `The ${what} is ${size} bytes, over the gateway's tasks.maxResultBytes (${this.limits.maxResultBytes})`;
    return {
      ...task,
      status: "failed",
      result: undefined,
      error: { code: -32603, message, data: { reason: "result_too_large", bytes: size, limit: this.limits.maxResultBytes } },
      statusMessage: message,
    };
  }

  /** The task if it exists and belongs to `caller`: another caller's task looks exactly like an unknown one. */
  async get(taskId: string, caller: string): Promise<TaskRecord | undefined> {
    const task = await this.store.get(taskId);
    return task && task.owner === caller ? task : undefined;
  }

  /** Delivers input responses; unknown or already answered keys are ignored. False if the task is unknown. */
  async update(taskId: string, caller: string, responses: JsonObject): Promise<boolean> {
    const task = await this.get(taskId, caller);
    if (!task) return false;
    const runtime = this.runtimes.get(taskId);
    const keys = Object.keys(responses).filter((k) => Object.hasOwn(task.inputRequests, k));
    if (!runtime || keys.length === 0) return true;
    await this.apply(taskId, { type: "answered", keys });
    await Promise.all(keys.map((k) => runtime.answer(k, responses[k])));
    return true;
  }

  async cancel(taskId: string, caller: string): Promise<boolean> {
    const task = await this.get(taskId, caller);
    if (!task) return false;
    const runtime = this.runtimes.get(taskId);
    if (runtime && !TERMINAL.has(task.status)) {
      await this.apply(taskId, { type: "cancel", message: "Cancelled by the client" });
      runtime.cancel("cancelled by the client");
    }
    return true;
  }

  /** Pushes every later change of the task to `listener` (a full DetailedTask). */
  watch(taskId: string, listener: (task: JsonObject) => void): () => void {
    let set = this.watchers.get(taskId);
    if (!set) {
      set = new Set();
      this.watchers.set(taskId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.watchers.get(taskId) === set) this.watchers.delete(taskId);
    };
  }

  private push(task: TaskRecord): void {
    const set = this.watchers.get(task.taskId);
    if (!set) return;
    const detailed = detailedTask(task);
    for (const l of set) l(detailed);
  }

  /** Shutdown: cancel every unfinished upstream call. */
  async close(): Promise<void> {
    for (const runtime of this.runtimes.values()) runtime.cancel("gateway shutting down");
    this.runtimes.clear();
    this.unfinishedByCaller.clear();
    await this.store.close();
  }
}
