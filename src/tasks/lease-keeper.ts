// With shared state, the leases of the tasks this process runs. Each is renewed every third of its length: a
// task whose lease this replica no longer holds (another replica ended it after a lapse, or it is gone) has its
// upstream call stopped here. And a sweep ends a bounded batch of tasks whose lease lapsed (their replica
// crashed), so a task nobody polls still ends. The engine ends each lapsed task (the same compare-and-set as
// a read that finds one); this module only decides when.
import type { Logger } from "../log/logger.js";
import type { TaskLeases } from "../store/task-leases.js";
import type { StoredTask } from "../store/task-store.js";
import type { RunningTask } from "./task-runtime.js";

export interface LeaseTiming {
  /** Lease length; renewed every third of it. */
  leaseMs: number;
  /** How often lapsed leases are looked for. */
  sweepIntervalMs: number;
}

/** Most lapsed tasks one sweep ends; the next sweep takes the rest. */
const SWEEP_BATCH = 100;
/** The shortest renewal interval, whatever the lease length. */
const MIN_RENEW_MS = 250;

export interface LeaseKeeperOptions {
  leases: TaskLeases;
  /** The engine's unfinished tasks: the same Map, read at each renewal. */
  running: ReadonlyMap<string, RunningTask>;
  /** Stops the call of a task whose lease is no longer ours; true when it ran here. */
  lost(taskId: string): boolean;
  /** Ends a task whose lease lapsed (atomically; another replica may win) and returns what is stored now. */
  endLapsed(taskId: string): Promise<StoredTask | undefined>;
  log: Logger;
}

export class LeaseKeeper {
  private readonly timers: NodeJS.Timeout[] = [];
  /** A renewal that failed is tried again this soon, not a third of a lease later (a store failing over). */
  private retryMs = 1_000;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: LeaseKeeperOptions) {}

  /** Renews and sweeps on timers from now on (shared state only: one process's leases never lapse). */
  start(timing: LeaseTiming): void {
    const renew = setInterval(() => void this.renew(), Math.max(MIN_RENEW_MS, Math.floor(timing.leaseMs / 3)));
    this.retryMs = Math.max(MIN_RENEW_MS, Math.floor(timing.leaseMs / 15));
    const sweep = setInterval(() => void this.sweep(), timing.sweepIntervalMs);
    renew.unref();
    sweep.unref();
    this.timers.push(renew, sweep);
  }

  /**
   * Renews the lease of every task running here. A failed renewal is logged and retried every retryMs until
   * one succeeds: a Redis failover of a few seconds must not cost the leases it outlasts by less than a lease.
   */
  async renew(): Promise<void> {
    const { running, leases, log } = this.opts;
    if (running.size === 0) return;
    try {
      const lost = await leases.renew([...running.keys()]);
      for (const id of lost) {
        if (this.opts.lost(id)) log.warn("lost the lease on a running task; its upstream call is cancelled");
      }
    } catch (err) {
      log.warn("could not renew task leases", { cause: (err as Error).message });
      if (this.retry === undefined && !this.stopped) {
        this.retry = setTimeout(() => {
          this.retry = undefined;
          void this.renew();
        }, this.retryMs);
        this.retry.unref();
      }
    }
  }

  /** Ends a bounded batch of tasks whose lease lapsed, so a task nobody polls still ends. */
  async sweep(): Promise<number> {
    let ended = 0;
    try {
      for (const id of await this.opts.leases.lapsed(SWEEP_BATCH)) {
        const after = await this.opts.endLapsed(id);
        if (after?.status === "failed") ended += 1;
      }
    } catch (err) {
      this.opts.log.warn("task sweep failed", { cause: (err as Error).message });
    }
    return ended;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const t of this.timers) clearInterval(t);
  }
}
