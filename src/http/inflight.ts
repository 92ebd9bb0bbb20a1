// Tracks proxied exchanges so graceful shutdown can wait for calls in progress,
// end idle event streams at once, and cut whatever is left when the grace ends.

export interface InFlightEntry {
  /** Standalone GET event streams never finish by themselves; shutdown ends them first. */
  readonly longLived: boolean;
  /** Ends the exchange: aborts the upstream request and closes the client response. */
  stop(): void;
}

/** A link of the registry's list; `entry` is cleared when the exchange is released. */
interface Link {
  entry: InFlightEntry | undefined;
  prev: Link | undefined;
  next: Link | undefined;
}

/**
 * A doubly linked list rather than a Set: under load (c = 64, thousands of adds and deletes a second) a Set kept its
 * deleted entries reachable for the scavenger, so every released exchange, and all its request's objects, survived
 * two scavenges and was promoted (about 4 KB per request; bench/investigations/gc-promotions.sh). Unlinking leaves
 * nothing behind.
 */
export class InFlight {
  // Oldest first, as a Set iterates: shutdown stops exchanges in the order they came.
  private head: Link | undefined;
  private tail: Link | undefined;
  private count = 0;
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.count;
  }

  add(entry: InFlightEntry): () => void {
    const link: Link = { entry, prev: this.tail, next: undefined };
    if (this.tail) this.tail.next = link;
    else this.head = link;
    this.tail = link;
    this.count += 1;
    return () => this.remove(link);
  }

  private remove(link: Link): void {
    if (link.entry === undefined) return;
    link.entry = undefined;
    const { prev, next } = link;
    if (prev) prev.next = next;
    else this.head = next;
    if (next) next.prev = prev;
    else this.tail = prev;
    link.prev = undefined;
    link.next = undefined;
    this.count -= 1;
    if (this.count === 0) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    }
  }

  /** The entries now, as a list of their own: stopping one releases it, which unlinks it. */
  private entries(): InFlightEntry[] {
    const out: InFlightEntry[] = [];
    for (let link = this.head; link; link = link.next) if (link.entry) out.push(link.entry);
    return out;
  }

  /** Long-lived exchanges (event streams) open now; O(entries), for the metrics at scrape time. */
  get longLived(): number {
    let n = 0;
    for (let link = this.head; link; link = link.next) if (link.entry?.longLived) n += 1;
    return n;
  }

  stopLongLived(): void {
    for (const e of this.entries()) if (e.longLived) e.stop();
  }

  stopAll(): void {
    for (const e of this.entries()) e.stop();
  }

  /** Resolves true when nothing is in flight, false if `ms` passed first. */
  drained(ms: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
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
