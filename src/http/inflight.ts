// Tracks proxied exchanges so graceful shutdown can wait for calls in progress,
// end idle event streams at once, and cut whatever is left when the grace ends.

export interface InFlightEntry {
  /** Standalone GET event streams never finish by themselves; shutdown ends them first. */
  readonly longLived: boolean;
  /** Ends the exchange: aborts the upstream request and closes the client response. */
  stop(): void;
}

export class InFlight {
  private readonly entries = new Set<InFlightEntry>();
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.entries.size;
  }

  add(entry: InFlightEntry): () => void {
    this.entries.add(entry);
    return () => {
      if (!this.entries.delete(entry)) return;
      if (this.entries.size === 0) {
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
      }
    };
  }

  /** Long-lived exchanges (event streams) open now; O(entries), for the metrics at scrape time. */
  get longLived(): number {
    let n = 0;
    for (const e of this.entries) if (e.longLived) n += 1;
    return n;
  }

  stopLongLived(): void {
    for (const e of [...this.entries]) if (e.longLived) e.stop();
  }

  stopAll(): void {
    for (const e of [...this.entries]) e.stop();
  }

  /** Resolves true when nothing is in flight, false if `ms` passed first. */
  drained(ms: number): Promise<boolean> {
    if (this.entries.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, ms);
      const done = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(done);
    });
  }
}
