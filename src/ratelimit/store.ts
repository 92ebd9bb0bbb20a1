// Where rate-limit budgets live: this process (memory-store.ts) or Redis, shared by every replica and worker
// (redis-store.ts). Either takes every rule of one request in one atomic step: all of them, or none.
import type { GcraOutcome } from "./gcra.js";

/** One rule's budget for one request: its key (rule and caller) and its GCRA parameters. */
export interface RateTake {
  key: string;
  intervalMs: number;
  burst: number;
}

/** One rule's outcome, as every store reports it. */
export type RateOutcome = Omit<GcraOutcome, "tat">;

export interface RateStore {
  /** True when replicas share the budgets (Redis). */
  readonly shared: boolean;
  /**
   * Takes one request from each budget when every one of them has room, and none otherwise. `now` is this
   * process's clock (the memory store's time; the Redis store uses Redis's own, which every replica shares).
   * The memory store answers synchronously; Redis rejects when it cannot be reached.
   */
  take(items: readonly RateTake[], now: number): RateOutcome[] | Promise<RateOutcome[]>;
}
