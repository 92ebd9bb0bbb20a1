// Rate-limit budgets of one process: a Map from key to its GCRA TAT. Bounded: an entry whose TAT has passed
// holds a full burst, exactly as no entry does, so a sweep drops those; when more than `maxKeys` are still
// busy, the oldest keys go (their callers get a full burst back: a bound on memory, reached only with more
// than maxKeys callers busy within one window).
import { gcra } from "./gcra.js";
import type { RateOutcome, RateStore, RateTake } from "./store.js";

const DEFAULT_MAX_KEYS = 100_000;

export class MemoryRateStore implements RateStore {
  readonly shared = false;
  private readonly tats = new Map<string, number>();

  constructor(private readonly maxKeys = DEFAULT_MAX_KEYS) {}

  /** Keys held (tests, the bench). */
  get size(): number {
    return this.tats.size;
  }

  take(items: readonly RateTake[], now: number): RateOutcome[] {
    const outcomes = [];
    let allowed = true;
    for (const item of items) {
      const o = gcra(this.tats.get(item.key), now, item.intervalMs, item.burst);
      if (!o.allowed) allowed = false;
      outcomes.push(o);
    }
    if (allowed) {
      // Set in place: the Map's order stays the order keys first came, which is the eviction order when a
      // sweep finds more than maxKeys still busy (re-inserting on every use would cost a third more per check).
      for (let i = 0; i < items.length; i++)
        this.tats.set((items[i] as RateTake).key, (outcomes[i] as RateOutcome & { tat: number }).tat);
      if (this.tats.size > this.maxKeys) this.sweep(now);
    }
    return outcomes;
  }

  private sweep(now: number): void {
    for (const [key, tat] of this.tats) if (tat <= now) this.tats.delete(key);
    const target = Math.floor(this.maxKeys * 0.9);
    for (const key of this.tats.keys()) {
      if (this.tats.size <= target) break;
      this.tats.delete(key);
    }
  }
}
