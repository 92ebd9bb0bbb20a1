// The task engine: creates tasks (stored before anyone hears of them), applies
// every change through the state machine, binds each task to its creator, keeps
// the runtime half of the unfinished tasks this process runs (how to answer or
// cancel the upstream call), and publishes changes for push.
//
// With a shared store several replicas run tasks. Each task has one writer, the
// replica running its upstream call, which holds a lease on it (renewed by lease-keeper.ts).
// A task whose lease lapsed is ended failed by the first replica that notices,
// on a read or in the sweep. tasks/update and tasks/cancel for a task another
// replica runs are not applied here: the caller forwards them to that replica.
// Drain and handoff (graceful shutdown, a rolling deploy) are handoff.ts's.
import { newTaskId, taskRef, taskUpstream } from "./task-id.js";
import type { Logger } from "../log/logger.js";
import { NO_AUDIT, type AuditLog, type AuditTask } from "../log/audit.js";
import { NO_METRICS, type GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { JsonObject } from "../protocol/json.js";
import { noRoomInStore, resultTooLarge, runnerLost, taskShutDown } from "../protocol/errors.js";
import {
  storedTask,
  type CreateRefusal,
  type StoredBytes,
  type StoredTask,
  type TaskStore,
} from "../store/task-store.js";
import type { TaskLeases } from "../store/task-leases.js";
import type { TaskEvents } from "../store/task-events.js";
import { taskResultJson, TERMINAL, transition, type TaskEvent, type TaskRecord } from "./task.js";
import { TaskSpans } from "./task-spans.js";
import { Handoffs } from "./handoff.js";
import { LeaseKeeper, type LeaseTiming } from "./lease-keeper.js";
import type { RunningTask, TaskAbout, TaskResumer, TaskRuntime } from "./task-runtime.js";

/** What an audit line says of a task: its upstream and a piece of its id (log/audit.ts says why not all of it). */
function auditTask(taskId: string): AuditTask {
  return { upstream: taskUpstream(taskId), ref: taskRef(taskId) };
}

export interface TaskLimits {
  maxTasks: number;
  maxTasksPerCaller: number;
  maxResultBytes: number;
}

export interface TaskEngineOptions {
  store: TaskStore;
  leases: TaskLeases;
  events: TaskEvents;
  /** Kept, not copied: a reload changes the limits in place, for tasks created afterwards. */
  limits: TaskLimits;
  now: () => number;
  log: Logger;
  /** Lease renewal and the sweep of lapsed leases, with shared state; without it neither runs (one process). */
  timing?: LeaseTiming | undefined;
  audit?: AuditLog | undefined;
  /** Metrics hooks; NO_METRICS when absent. */
  metrics?: GatewayMetrics | undefined;
}

export type CreateOutcome = { ok: true; task: TaskRecord } | { ok: false; reason: string; draining?: true };

/** The outcome of tasks/update or tasks/cancel: applied here, unknown to this caller, or run by another replica. */
export type ControlOutcome =
  | { kind: "done" }
  | { kind: "unknown" }
  | { kind: "elsewhere"; runner: string }
  /** Being handed between instances (a rolling deploy): the caller retries shortly. */
  | { kind: "moving" };

/** The stored tasks/get JSON is `{"resultType":"complete",…}`; the DetailedTask is the same text without that member. */
const RESULT_PREFIX = '{"resultType":"complete",';
function detailedJson(stored: string): string {
  return stored.startsWith(RESULT_PREFIX) ? `{${stored.slice(RESULT_PREFIX.length)}` : stored;
}

export class TaskEngine {
  /** Unfinished tasks this process runs: the live record (this process is its only writer) and its runtime. */
  private readonly running = new Map<string, RunningTask>();
  /** Each unfinished task's span (tracing on only). */
  private readonly spans = new TaskSpans();
  /** Per-task promise chain: changes to one task are applied one at a time, in order. */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Lease renewal and the sweep of lapsed leases (shared state). */
  private readonly keeper: LeaseKeeper;
  /** Drain and handoff (graceful shutdown with shared state). */
  private readonly handoffs: Handoffs;

  readonly store: TaskStore;
  readonly leases: TaskLeases;
  /** Metrics hooks (src/metrics/); also read by the sinks that race a threshold (calls/task-sinks.ts). */
  readonly metrics: GatewayMetrics;
  private readonly events: TaskEvents;
  private readonly limits: TaskLimits;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly timing: LeaseTiming | undefined;
  private readonly audit: AuditLog;

  constructor(opts: TaskEngineOptions) {
    this.store = opts.store;
    this.leases = opts.leases;
    this.events = opts.events;
    this.limits = opts.limits;
    this.now = opts.now;
    this.log = opts.log;
    this.timing = opts.timing;
    this.audit = opts.audit ?? NO_AUDIT;
    this.metrics = opts.metrics ?? NO_METRICS;
    this.handoffs = new Handoffs({
      store: this.store,
      leases: this.leases,
      events: this.events,
      running: this.running,
      apply: (taskId, event) => this.apply(taskId, event),
      now: this.now,
      log: this.log,
    });
    this.keeper = new LeaseKeeper({
      leases: this.leases,
      running: this.running,
      lost: (taskId) => this.drop(taskId, "task ended elsewhere"),
      endLapsed: (taskId) => this.endLapsed(taskId),
      log: this.log,
    });
    this.store.onEvict((task, reason) => {
      // A working task that leaves the store must not leave its upstream call running.
      if (this.drop(task.taskId, `task ${reason}`)) this.log.info("unfinished task dropped from the store", { reason });
    });
    if (this.timing) this.keeper.start(this.timing);
  }

  /**
   * Runs `fn` in the task's trace context (tracing on): upstream requests made for the task after it
   * exists (its background call) are children of the task's span. Without a span, just runs `fn`.
   */
  inTaskContext<T>(taskId: string | undefined, fn: () => T): T {
    return this.spans.run(taskId, fn);
  }

  /** Unfinished tasks whose upstream call runs in this process. */
  get runningHere(): number {
    return this.running.size;
  }

  private refusalText(refusal: CreateRefusal): string {
    switch (refusal) {
      case "max_tasks":
        return `the gateway has ${this.limits.maxTasks} unfinished tasks (tasks.maxTasks)`;
      case "max_tasks_per_caller":
        return `this caller has ${this.limits.maxTasksPerCaller} unfinished tasks (tasks.maxTasksPerCaller)`;
      case "store_full":
        return "the task store is full of unfinished tasks (tasks.storeBytes), with no finished task left to evict";
      case "max_bytes_per_caller":
        return "this caller's unfinished tasks fill its share of the task store (tasks.maxBytesPerCaller)";
    }
  }

  /**
   * Creates a working task and resolves only once it is in the store (with this
   * replica's lease). A store that fails rejects; a draining gateway refuses.
   */
  async create(
    owner: string,
    ttlMs: number,
    pollIntervalMs: number,
    runtime: TaskRuntime,
    about?: TaskAbout,
  ): Promise<CreateOutcome> {
    if (!this.handoffs.acceptsTasks)
      return { ok: false, reason: "this gateway instance is shutting down", draining: true };
    const stamp = new Date(this.now()).toISOString();
    const task: TaskRecord = {
      taskId: newTaskId(about?.upstream),
      owner,
      status: "working",
      createdAt: stamp,
      lastUpdatedAt: stamp,
      ttlMs,
      pollIntervalMs,
      inputRequests: {},
    };
    const created = await this.store.create(storedTask(task, taskResultJson(task)), this.limits);
    if (!created.ok) return { ok: false, reason: this.refusalText(created.refusal) };
    this.running.set(task.taskId, { record: task, runtime, about });
    this.spans.start(task, about?.tool);
    if (about) this.audit.taskCreated(about, auditTask(task.taskId), about.tool);
    this.metrics.taskCreated(about?.mode ?? "unknown", about?.tool, taskUpstream(task.taskId));
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

  /** The runtime leaves with its task: its upstream call is cancelled unless it ended by itself. True if it was here. */
  private drop(taskId: string, cancelReason: string | undefined): boolean {
    const run = this.running.get(taskId);
    if (!run) return false;
    this.running.delete(taskId);
    this.spans.left(taskId, cancelReason ?? "ended");
    if (cancelReason !== undefined) run.runtime.cancel(cancelReason);
    return true;
  }

  /**
   * Applies one event to a task this process runs; returns the new record
   * (undefined if the task is gone or not run here). A store that fails is
   * logged and the change is not applied: the caller's sink must not crash.
   */
  apply(taskId: string, event: TaskEvent): Promise<TaskRecord | undefined> {
    return this.serial(taskId, () => this.applyNow(taskId, event));
  }

  /** apply() without queueing: only from inside the task's chain. */
  private async applyNow(taskId: string, event: TaskEvent): Promise<TaskRecord | undefined> {
    {
      const run = this.running.get(taskId);
      if (!run) return undefined;
      const task = run.record;
      let next = transition(task, event, new Date(this.now()));
      if (next === task) return task;
      let json = taskResultJson(next);
      // The whole task's JSON bounds its result's: only a task that large needs the payload measured on its own.
      // (UTF-8 takes at most 3 bytes per UTF-16 unit: below a third of the limit in units, it cannot be over.)
      if (json.length > this.limits.maxResultBytes / 3) {
        const capped = this.bounded(next);
        if (capped !== next) json = taskResultJson((next = capped));
      }
      let written: Awaited<ReturnType<TaskStore["update"]>>;
      try {
        written = await this.store.update(storedTask(next, json));
      } catch (err) {
        this.log.warn("task store write failed", { status: next.status, cause: (err as Error).message });
        // The outcome of the call must not be lost to a store that is away for a moment: retry it
        // until the lease would lapse (after that another replica ends the task failed).
        if (TERMINAL.has(next.status)) {
          this.retryFinal(taskId, storedTask(next, json), this.now() + this.retryWindowMs);
          return undefined;
        }
        // Not applied: whoever asked (tasks/update, a sink) learns it; the record here stays as it was.
        throw err;
      }
      // The call still runs when a failure replaces a version the store had no room for.
      let callRuns = false;
      if (written === "full") {
        // No room for this version (tasks.storeBytes, tasks.maxBytesPerCaller): a progress message is skipped;
        // anything else ends the task failed with a short error, which always fits (FINISH_RESERVE_BYTES).
        if (event.type === "progress") return task;
        callRuns = !TERMINAL.has(next.status);
        next = this.noRoom(task, next, Buffer.byteLength(json));
        json = taskResultJson(next);
        const failure = storedTask(next, json);
        const failed = await this.store.update(failure).catch((err: unknown) => {
          this.log.warn("task store write failed", { status: "failed", cause: (err as Error).message });
          this.retryFinal(taskId, failure, this.now() + this.retryWindowMs);
          return undefined;
        });
        if (failed === undefined) {
          if (callRuns) run.runtime.cancel("the task store has no room for it");
          return undefined;
        }
        written = failed;
      }
      if (written !== "ok") {
        // Gone (expired, or no room even for a failure) or already ended elsewhere: so is its call.
        this.drop(taskId, written === "final" ? "task ended elsewhere" : "task record no longer in the store");
        return undefined;
      }
      this.spans.changed(taskId, event, next);
      if (TERMINAL.has(next.status)) {
        this.drop(taskId, callRuns ? "the task store has no room for it" : undefined);
        this.audited(run.about, next);
        this.counted(run.about?.tool, next);
      } else run.record = next;
      this.events.publish(taskId, detailedJson(json));
      return next;
    }
  }

  /**
   * The metrics of a task that ended here. Its upstream is read from its id, which the gateway minted (so the
   * name is a configured one), and which a task taken over from another replica carries too (it has no `about`).
   */
  private counted(tool: string | undefined, task: TaskRecord): void {
    if (!this.metrics.enabled || !TERMINAL.has(task.status)) return;
    const seconds = (Date.parse(task.lastUpdatedAt) - Date.parse(task.createdAt)) / 1000;
    const upstream = taskUpstream(task.taskId);
    this.metrics.taskFinished(task.status as "completed" | "failed" | "cancelled", tool, seconds, upstream);
  }

  /**
   * What this process runs, for the metrics and the status page: counts by state, the same by upstream (the
   * name in the task's id), and the `limit` oldest (id, tool, state, creation time). O(running tasks); called
   * at scrape time, never per request.
   */
  runningSummary(limit = 0): {
    working: number;
    inputRequired: number;
    byUpstream: Map<string, { working: number; inputRequired: number }>;
    oldest: Array<{ taskId: string; tool: string | undefined; status: string; createdAt: string }>;
  } {
    let working = 0;
    let inputRequired = 0;
    const byUpstream = new Map<string, { working: number; inputRequired: number }>();
    const all: Array<{ taskId: string; tool: string | undefined; status: string; createdAt: string }> = [];
    for (const [taskId, { record, about }] of this.running) {
      const upstream = taskUpstream(taskId);
      let counts = byUpstream.get(upstream);
      if (!counts) byUpstream.set(upstream, (counts = { working: 0, inputRequired: 0 }));
      if (record.status === "input_required") {
        inputRequired += 1;
        counts.inputRequired += 1;
      } else {
        working += 1;
        counts.working += 1;
      }
      if (limit > 0) all.push({ taskId, tool: about?.tool, status: record.status, createdAt: record.createdAt });
    }
    // ISO stamps of one clock sort as text.
    all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    return { working, inputRequired, byUpstream, oldest: all.slice(0, limit) };
  }

  /** The audit line of a task that ended here. */
  private audited(about: TaskAbout | undefined, task: TaskRecord): void {
    if (!about || !TERMINAL.has(task.status)) return;
    const outcome = task.status as "completed" | "failed" | "cancelled";
    this.audit.taskEnded(
      about,
      auditTask(task.taskId),
      about.tool,
      outcome,
      Math.max(0, Date.parse(task.lastUpdatedAt) - Date.parse(task.createdAt)),
    );
  }

  private get retryWindowMs(): number {
    return this.timing?.leaseMs ?? 15_000;
  }

  private retryFinal(taskId: string, final: StoredTask, until: number): void {
    const timer = setTimeout(() => {
      void this.serial(taskId, async () => {
        if (!this.running.has(taskId)) return;
        try {
          if ((await this.store.update(final)) === "ok") this.events.publish(taskId, detailedJson(final.json));
          this.drop(taskId, undefined);
        } catch {
          if (this.now() < until) this.retryFinal(taskId, final, until);
          else this.drop(taskId, undefined);
        }
      });
    }, 1_000);
    timer.unref();
  }

  /** The failed version of `task` that replaces `next`, a version of `bytes` the store had no room for. */
  private noRoom(task: TaskRecord, next: TaskRecord, bytes: number): TaskRecord {
    const what =
      next.status === "completed"
        ? "result"
        : next.status === "failed"
          ? "error"
          : next.status === "input_required"
            ? "input request"
            : "update";
    const error = noRoomInStore(what, bytes);
    return transition(task, { type: "fail", error, message: error.message }, new Date(this.now()));
  }

  /**
   * A result (or error) past maxResultBytes would break the store's budget: the task fails with a clear error instead.
   * Asked only of a task whose JSON could hold such a payload: measuring every result by serializing it a second
   * time was 1 % of a promoted call's CPU (bench/RESULTS.md, "Promotion: profile").
   */
  private bounded(task: TaskRecord): TaskRecord {
    const payload = task.status === "completed" ? task.result : task.status === "failed" ? task.error : undefined;
    if (payload === undefined) return task;
    const size = Buffer.byteLength(JSON.stringify(payload));
    if (size <= this.limits.maxResultBytes) return task;
    const error = resultTooLarge(task.status === "completed" ? "result" : "error", size, this.limits.maxResultBytes);
    return { ...task, status: "failed", result: undefined, error, statusMessage: error.message };
  }

  /**
   * The task if it exists and belongs to `caller`: another caller's task looks
   * exactly like an unknown one. An unfinished task whose replica is gone is
   * ended failed first, so nobody polls a task that can no longer finish.
   */
  async get(taskId: string, caller: string): Promise<StoredTask | undefined> {
    const task = await this.store.get(taskId);
    if (!task || task.owner !== caller) return undefined;
    if (task.runner === null && !TERMINAL.has(task.status)) return (await this.endLapsed(taskId)) ?? task;
    return task;
  }

  /**
   * What a poll may send as it is (the lean tasks/get path): the task's stored bytes if it exists, belongs to
   * `caller` (another caller's task is unknown, as in get) and needs nothing done first; undefined otherwise,
   * an unfinished task whose lease lapsed included (get() ends it). At once, without a promise, when the store
   * is in this process's memory; after the store's read (its bytes as received) when it is shared.
   */
  pollBytes(taskId: string, caller: string): StoredBytes | undefined | Promise<StoredBytes | undefined> {
    if (this.store.getBytesNow) {
      const task = this.store.getBytesNow(taskId);
      return task && task.owner === caller ? task : undefined;
    }
    const read = this.store.getBytes
      ? this.store.getBytes(taskId)
      : this.store
          .get(taskId)
          .then(
            (task) =>
              task && { owner: task.owner, status: task.status, bytes: Buffer.from(task.json), runner: task.runner },
          );
    return read.then((task) =>
      task && task.owner === caller && !(task.runner === null && !TERMINAL.has(task.status)) ? task : undefined,
    );
  }

  /** Ends a task whose lease lapsed (atomically; another replica may win) and returns what is stored now. */
  private async endLapsed(taskId: string): Promise<StoredTask | undefined> {
    const current = await this.store.get(taskId);
    if (!current || TERMINAL.has(current.status) || current.runner !== null) return current;
    const error = runnerLost("The gateway instance running this task stopped before it finished");
    const failed = transition(current.record, { type: "fail", error, message: error.message }, new Date(this.now()));
    const json = taskResultJson(failed);
    if (await this.leases.endLapsed(storedTask(failed, json))) {
      this.counted(undefined, failed);
      this.log.warn("ended a task whose gateway instance stopped", { status: current.status });
      this.events.publish(taskId, detailedJson(json));
    }
    return this.store.get(taskId);
  }

  /** Delivers input responses; unknown or already answered keys are ignored. */
  async update(taskId: string, caller: string, responses: JsonObject): Promise<ControlOutcome> {
    const stored = await this.get(taskId, caller);
    if (!stored) return { kind: "unknown" };
    if (TERMINAL.has(stored.status)) return { kind: "done" };
    const run = this.running.get(taskId);
    if (!run) return this.elsewhere(stored);
    // Which keys are still pending is decided inside the task's chain, so two racing updates never
    // deliver the same answer twice; answers go upstream only once the task records them answered.
    const keys = await this.serial(taskId, async () => {
      const pending = Object.keys(responses).filter((k) => Object.hasOwn(run.record.inputRequests, k));
      if (pending.length === 0) return [];
      return (await this.applyNow(taskId, { type: "answered", keys: pending })) ? pending : [];
    });
    await Promise.all(keys.map((k) => run.runtime.answer(k, responses[k])));
    return { kind: "done" };
  }

  async cancel(taskId: string, caller: string): Promise<ControlOutcome> {
    const stored = await this.get(taskId, caller);
    if (!stored) return { kind: "unknown" };
    if (TERMINAL.has(stored.status)) return { kind: "done" };
    const run = this.running.get(taskId);
    if (!run) return this.elsewhere(stored);
    try {
      await this.apply(taskId, { type: "cancel", message: "Cancelled by the client" });
    } finally {
      // The call stops even if the store could not record it: its lease then lapses and the task ends failed.
      run.runtime.cancel("cancelled by the client");
      this.drop(taskId, undefined);
    }
    return { kind: "done" };
  }

  /** An unfinished task this process does not run: another replica does (or it just finished). */
  private elsewhere(stored: StoredTask): ControlOutcome {
    if (typeof stored.runner !== "string") return { kind: "done" };
    // Our lease but not running here: it is being handed on (or just taken over) right now.
    return stored.runner === this.leases.replicaId ? { kind: "moving" } : { kind: "elsewhere", runner: stored.runner };
  }

  /** Pushes every later change of the task to `listener` (DetailedTask JSON). Resolves once listening. */
  watch(taskId: string, listener: (detailed: string) => void): Promise<() => void> {
    return this.events.subscribe(taskId, listener);
  }

  /** Ends a bounded batch of tasks whose lease lapsed, so a task nobody polls still ends (lease-keeper.ts). */
  sweep(): Promise<number> {
    return this.keeper.sweep();
  }

  /**
   * Graceful shutdown, first half: no new tasks, and the running ones get up to
   * `drainMs` to finish. Resolves with the ids still unfinished.
   */
  drain(drainMs: number): Promise<string[]> {
    return this.handoffs.drain(drainMs);
  }

  /** Takes tasks other instances hand on (a rolling deploy), with `resume` to pick each call up (handoff.ts). */
  acceptHandoffs(resume: TaskResumer): Promise<void> {
    return this.handoffs.accept(resume);
  }

  /** Hands a task this instance runs to another one; false when it is still here (handoff.ts). */
  handOff(taskId: string, windowMs: number): Promise<boolean> {
    return this.handoffs.handOff(taskId, windowMs);
  }

  /** Ends a task this process runs as failed, cancelling its upstream call (shutdown without a handoff). */
  async abandon(taskId: string, message: string): Promise<void> {
    const run = this.running.get(taskId);
    if (!run) return;
    // The failed write leaves `running` with the task (or, if the store is away, retries it first).
    await this.apply(taskId, { type: "fail", error: taskShutDown(message), message }).catch(() => undefined);
    run.runtime.cancel("gateway shutting down");
  }

  /** The unfinished tasks this process runs for `upstream` (a removed upstream's, which a reload lets finish). */
  runningFor(upstream: string): string[] {
    const ids: string[] = [];
    for (const taskId of this.running.keys()) if (taskUpstream(taskId) === upstream) ids.push(taskId);
    return ids;
  }

  /** Shutdown: cancel every unfinished upstream call still here. */
  async close(): Promise<void> {
    this.keeper.stop();
    for (const { runtime } of this.running.values()) runtime.cancel("gateway shutting down");
    this.running.clear();
    this.spans.endAll("gateway shutting down");
    await this.events.close();
    await this.store.close();
  }
}
