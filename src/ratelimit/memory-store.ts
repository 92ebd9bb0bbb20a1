// Rate-limit budgets of one process: a Map from key to its GCRA TAT. Bounded: an entry whose TAT has passed
// holds a full burst, exactly as no entry does, so a sweep drops those; when more than `maxKeys` are still
// busy, the least recently used go (their callers get a full burst back: a bound on memory, not a bypass an
// attacker controls, since a caller is an identity digest and every rule's keys count together).
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
      for (let i = 0; i < items.length; i++) {
        const key = (items[i] as RateTake).key;
        // Deleted first, so the Map's order is the order of last use (the eviction order).
        this.tats.delete(key);
        this.tats.set(key, (outcomes[i] as RateOutcome & { tat: number }).tat);
      }
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
