// Parked calls: upstream calls waiting for a client's MRTR retry. Bounded in
// count overall and per caller, and expiring, so abandoned calls cannot grow
// memory; one that expires or is evicted is handed to `onAbandon` so the
// upstream call is cancelled rather than leaked.
import { LRUCache } from "lru-cache";

export interface ParkLimits {
  max: number;
  maxPerCaller: number;
  ttlMs: number;
}

interface Entry<T> {
  caller: string;
  value: T;
}

export class ParkedCalls<T extends object> {
  private readonly perCaller = new Map<string, number>();

  constructor(
    private readonly limits: ParkLimits,
    private readonly onAbandon: (value: T) => void,
    now: () => number,
  ) {
    // Made at the first park: lru-cache allocates all `max` slots at once (hundreds of KiB), and an upstream
    // that never runs an MRTR round (most of many configured ones) should not pay for them.
    this.make = () =>
      new LRUCache<string, Entry<T>>({
        max: limits.max,
        ttl: limits.ttlMs,
        ttlAutopurge: true,
        perf: { now },
        // Read the (injected) clock on every check instead of a value cached for a tick.
        ttlResolution: 0,
        dispose: (entry, _key, reason) => {
          this.release(entry.caller);
          // Claimed calls leave with reason "delete"; only the abandoned ones are cancelled.
          if (reason === "evict" || reason === "expire") this.onAbandon(entry.value);
        },
      });
  }

  private readonly make: () => LRUCache<string, Entry<T>>;
  private made: LRUCache<string, Entry<T>> | undefined;
  private get cache(): LRUCache<string, Entry<T>> {
    return (this.made ??= this.make());
  }

  get size(): number {
    return this.made?.size ?? 0;
  }

  private release(caller: string): void {
    const n = (this.perCaller.get(caller) ?? 1) - 1;
    if (n <= 0) this.perCaller.delete(caller);
    else this.perCaller.set(caller, n);
  }

  /** False when the caller already holds its limit of parked calls. */
  park(id: string, caller: string, value: T): boolean {
    const held = this.perCaller.get(caller) ?? 0;
    if (held >= this.limits.maxPerCaller) return false;
    this.perCaller.set(caller, held + 1);
    this.cache.set(id, { caller, value });
    return true;
  }

  /** Takes the call out (so a concurrent second retry finds nothing). */
  claim(id: string, caller: string): T | undefined {
    const entry = this.made?.get(id);
    if (!entry || entry.caller !== caller) return undefined;
    this.cache.delete(id);
    return entry.value;
  }

  /** Cancels everything parked (shutdown). */
  clear(): void {
    if (!this.made) return;
    for (const entry of [...this.made.values()]) this.onAbandon(entry.value);
    this.made.clear();
  }
}
