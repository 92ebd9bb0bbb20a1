// Ownership of unfinished tasks across replicas. The replica that holds a
// task's upstream call is its only writer while the task is unfinished; it
// holds a lease on the task and renews it. A task whose lease lapsed (its
// replica crashed, was killed, or lost the store) is ended failed by whichever
// replica notices first, atomically, so two replicas never both end it.
//
// With the memory store there is one process, so it runs every task and no
// lease ever lapses (local-leases.ts).
import type { StoredTask } from "./task-store.js";

export interface TaskLeases {
  /** This process's replica id: 128 random bits, new at every start. */
  readonly replicaId: string;
  /**
   * Which replica runs the unfinished task (its lease holder); undefined when
   * the lease lapsed, or the task is finished or unknown.
   */
  runner(taskId: string): Promise<string | undefined>;
  /**
   * Renews this replica's leases on the tasks it runs. Returns the ids it no
   * longer holds: the task is gone, finished, or another replica ended it after
   * a lapse. Their upstream calls must stop.
   */
  renew(taskIds: readonly string[]): Promise<string[]>;
  /** Gives up leases (a graceful shutdown that handed the tasks on or ended them). */
  release(taskIds: readonly string[]): Promise<void>;
  /** Unfinished tasks whose lease lapsed, at most `limit`: what a sweep ends. */
  lapsed(limit: number): Promise<string[]>;
  /**
   * Replaces an unfinished task whose lease lapsed with `ended` (its failed
   * version), atomically. False when the task is finished, gone, or its lease
   * is held again: someone else got there first.
   */
  endLapsed(ended: StoredTask): Promise<boolean>;
  /**
   * Takes over an unfinished task whose lease this replica was handed (a
   * rolling deploy's handoff): true when the lease is now ours.
   */
  adopt(taskId: string, from: string): Promise<boolean>;
  /** Leaves a handoff ticket for another replica (a rolling deploy), kept for `windowMs`. */
  offer(taskId: string, ticket: string, windowMs: number): Promise<void>;
  /** Takes an offered ticket, once: the replica that adopted the task reads it. */
  takeTicket(taskId: string): Promise<string | undefined>;
  /** Withdraws an offer nobody took. */
  withdraw(taskId: string): Promise<void>;
  /** Registers where this replica's internal listener is, so others can forward to it. */
  register(address: string): Promise<void>;
  /** Where another replica's internal listener is, if it is alive. */
  addressOf(replicaId: string): Promise<string | undefined>;
}
