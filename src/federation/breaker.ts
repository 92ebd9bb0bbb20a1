// A circuit breaker per (federated endpoint, member). A member whose requests fail N times in a row (an answer
// with a 5xx status, a network error, a list past its deadline) is skipped for a back-off: left out of lists at
// once, its calls refused, instead of every request waiting for it to fail again. The back-off starts at
// breakerBackoffMs and doubles each time the member fails again, up to breakerMaxBackoffMs. When it has passed the
// breaker is half-open: requests go to the member again, and the first outcome decides (a success closes it, a
// failure reopens it with the doubled back-off).
// Pure: time comes from `now`, the settings are read at each use.

export interface BreakerSettings {
  /** Consecutive failures that open the breaker (federation.breakerFailures). */
  readonly failures: number;
  /** The first back-off (federation.breakerBackoffMs). */
  readonly backoffMs: number;
  /** The longest back-off (federation.breakerMaxBackoffMs). */
  readonly maxBackoffMs: number;
}

/** What a breaker says: closed (served), open until a time (skipped), or half-open (trying again). */
export type BreakerState =
  { readonly state: "closed" } | { readonly state: "open"; readonly until: number } | { readonly state: "half-open" };

export class Breaker {
  private failures = 0;
  /** While open (or half-open, once `until` has passed): the back-off in force, and when it ends. */
  private open: { backoffMs: number; until: number } | undefined;

  constructor(
    private readonly settings: () => BreakerSettings,
    private readonly now: () => number,
  ) {}

  /** Whether a request may go to the member now: false while the breaker is open. */
  allows(): boolean {
    return this.open === undefined || this.now() >= this.open.until;
  }

  /** How long until the breaker half-opens (0 when it allows requests now). */
  retryAfterMs(): number {
    return this.open === undefined ? 0 : Math.max(0, this.open.until - this.now());
  }

  state(): BreakerState {
    if (this.open === undefined) return { state: "closed" };
    return this.allows() ? { state: "half-open" } : { state: "open", until: this.open.until };
  }

  /** The member answered: the breaker closes and the count starts again. */
  succeeded(): void {
    this.failures = 0;
    this.open = undefined;
  }

  /** The member failed: past the threshold the breaker opens; a failure while half-open reopens it for twice as long. */
  failed(): void {
    const s = this.settings();
    const at = this.now();
    if (this.open !== undefined) {
      // A request that went out before the breaker opened and fails now does not lengthen the back-off.
      if (at < this.open.until) return;
      const backoffMs = Math.min(this.open.backoffMs * 2, Math.max(s.maxBackoffMs, s.backoffMs));
      this.open = { backoffMs, until: at + backoffMs };
      return;
    }
    this.failures += 1;
    if (this.failures >= s.failures) this.open = { backoffMs: s.backoffMs, until: at + s.backoffMs };
  }
}

/** The breakers of every federated endpoint's members, each made on first use. */
export class Breakers {
  private readonly byEndpoint = new Map<string, Map<string, Breaker>>();

  constructor(
    private readonly settings: () => BreakerSettings,
    private readonly now: () => number,
  ) {}

  /** The breaker of `member` in the federated endpoint `federated`. */
  of(federated: string, member: string): Breaker {
    let members = this.byEndpoint.get(federated);
    if (!members) this.byEndpoint.set(federated, (members = new Map()));
    let breaker = members.get(member);
    if (!breaker) members.set(member, (breaker = new Breaker(this.settings, this.now)));
    return breaker;
  }

  /** What the breaker of `member` says, without making one: closed when it has none. */
  state(federated: string, member: string): BreakerState {
    return this.byEndpoint.get(federated)?.get(member)?.state() ?? { state: "closed" };
  }

  /** A federated endpoint that a reload removed, or a member it no longer has: their breakers go. */
  keep(federated: string, members: readonly string[] | undefined): void {
    const held = this.byEndpoint.get(federated);
    if (!held) return;
    if (members === undefined) this.byEndpoint.delete(federated);
    else for (const name of held.keys()) if (!members.includes(name)) held.delete(name);
  }
}
