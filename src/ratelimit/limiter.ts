// The rate limiter every route shares: the rules in force (a policy set's RateLimitRules) and one budget
// store (memory, or Redis with replicas). One check per request: the rules it matches, one atomic take over
// all of them, a verdict. No rule matched costs nothing but the match; a store that fails answers by
// limits.onStoreDown (allow: fail open, warned at most once a minute and counted; deny: 503).
// The limited requests of the last minute are kept per rule and upstream, for /status.
import type { Claims } from "../policy/claims.js";
import type { Logger } from "../log/logger.js";
import type { RateLimitRules, RateRule } from "./rules.js";
import type { RateOutcome, RateStore, RateTake } from "./store.js";

/** What the metrics hear (prom-client behind it, wired by the composition root). */
export interface RateLimitObserver {
  /** A request refused by `rule` on `upstream` (a configured name). */
  limited(rule: string, upstream: string): void;
  /** A check that reached the store, and how long it took. */
  checked(seconds: number): void;
  /** A check the store could not answer, and what was done (limits.onStoreDown). */
  storeDown(action: "allow" | "deny"): void;
}

/** A request, as the limiter sees it. */
export interface RateRequest {
  method: string;
  /** The tool of a tools/call. */
  tool: string | undefined;
  /** The configured name of the upstream that serves it. */
  upstream: string;
  claims: Claims | undefined;
  /** The caller's identity digest; called only when a `per: caller` rule matches. */
  caller: () => string;
}

/** One matched rule and what its budget said. */
export interface RuleState {
  rule: RateRule;
  outcome: RateOutcome;
}

export type RateVerdict =
  | { kind: "allowed" }
  /** `rule`: the refusing rule whose wait is longest; `retryAfterMs` that wait. */
  | { kind: "limited"; rule: RateRule; retryAfterMs: number; rules: readonly RuleState[] }
  /** The store failed and limits.onStoreDown is deny. */
  | { kind: "unavailable" };

export interface LimitedCount {
  rule: string;
  upstream: string;
  count: number;
}

const ALLOWED: RateVerdict = Object.freeze({ kind: "allowed" });
const WINDOW_S = 60;
const WARN_EVERY_MS = 60_000;

/** Per-second counts over the last minute. */
class MinuteCounter {
  private readonly counts = new Uint32Array(WINDOW_S);
  private readonly seconds = new Float64Array(WINDOW_S).fill(-1);

  add(nowMs: number): void {
    const s = Math.floor(nowMs / 1000);
    const i = s % WINDOW_S;
    if (this.seconds[i] !== s) {
      this.seconds[i] = s;
      this.counts[i] = 0;
    }
    this.counts[i] = (this.counts[i] ?? 0) + 1;
  }

  total(nowMs: number): number {
    const s = Math.floor(nowMs / 1000);
    let n = 0;
    for (let i = 0; i < WINDOW_S; i++) if (s - (this.seconds[i] ?? -1) < WINDOW_S) n += this.counts[i] ?? 0;
    return n;
  }
}

export interface RateLimiterOptions {
  store: RateStore;
  now: () => number;
  log: Logger;
  observer?: RateLimitObserver | undefined;
}

export class RateLimiter {
  readonly store: RateStore;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly observer: RateLimitObserver | undefined;
  private readonly recentLimited = new Map<string, { rule: string; upstream: string; counter: MinuteCounter }>();
  private lastWarnAt = -Infinity;
  private failures = 0;

  constructor(opts: RateLimiterOptions) {
    this.store = opts.store;
    this.now = opts.now;
    this.log = opts.log;
    this.observer = opts.observer;
  }

  /** Checks the store could not answer since start (allowed or denied by limits.onStoreDown). */
  get storeFailures(): number {
    return this.failures;
  }

  /**
   * The verdict on one request under `rules`, or undefined when no rule matches it. Synchronous with the
   * memory store; a promise with Redis (one round trip).
   */
  check(rules: RateLimitRules, req: RateRequest): RateVerdict | Promise<RateVerdict> | undefined {
    if (rules.empty) return undefined;
    const matched = rules.matching(req.method, req.tool, req.claims);
    if (matched.length === 0) return undefined;
    let caller: string | undefined;
    const items: RateTake[] = matched.map((rule) => ({
      key: `${rule.id}:${rule.per === "caller" ? (caller ??= req.caller()) : "*"}`,
      intervalMs: rule.intervalMs,
      burst: rule.burst,
    }));
    const started = this.observer ? performance.now() : 0;
    let taken;
    try {
      taken = this.store.take(items, this.now());
    } catch (err) {
      return this.storeFailed(rules, err);
    }
    if (Array.isArray(taken)) return this.verdict(matched, taken, req.upstream, started);
    return taken.then(
      (outcomes) => this.verdict(matched, outcomes, req.upstream, started),
      (err: unknown) => this.storeFailed(rules, err),
    );
  }

  /** The rules that refused requests in the last minute, most refusals first (at most `limit`). */
  recent(limit = 10): LimitedCount[] {
    const now = this.now();
    const out: LimitedCount[] = [];
    for (const [key, entry] of this.recentLimited) {
      const count = entry.counter.total(now);
      if (count > 0) out.push({ rule: entry.rule, upstream: entry.upstream, count });
      else this.recentLimited.delete(key);
    }
    return out.sort((a, b) => b.count - a.count || a.rule.localeCompare(b.rule)).slice(0, limit);
  }

  private verdict(
    matched: readonly RateRule[],
    outcomes: readonly RateOutcome[],
    upstream: string,
    started: number,
  ): RateVerdict {
    if (this.observer) this.observer.checked((performance.now() - started) / 1000);
    let worst = -1;
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i] as RateOutcome;
      if (!o.allowed && (worst < 0 || o.retryAfterMs > (outcomes[worst] as RateOutcome).retryAfterMs)) worst = i;
    }
    // The common answer allocates nothing: only a refusal's headers need each rule's state.
    if (worst < 0) return ALLOWED;
    const rule = matched[worst] as RateRule;
    const rules = matched.map((r, i) => ({ rule: r, outcome: outcomes[i] as RateOutcome }));
    this.noteLimited(rule.name, upstream);
    return { kind: "limited", rule, retryAfterMs: (outcomes[worst] as RateOutcome).retryAfterMs, rules };
  }

  private noteLimited(rule: string, upstream: string): void {
    this.observer?.limited(rule, upstream);
    const key = `${rule}\0${upstream}`;
    let entry = this.recentLimited.get(key);
    if (!entry) this.recentLimited.set(key, (entry = { rule, upstream, counter: new MinuteCounter() }));
    entry.counter.add(this.now());
  }

  private storeFailed(rules: RateLimitRules, err: unknown): RateVerdict {
    this.failures += 1;
    const action = rules.onStoreDown;
    this.observer?.storeDown(action);
    const now = this.now();
    if (now - this.lastWarnAt >= WARN_EVERY_MS) {
      this.lastWarnAt = now;
      this.log.warn(
        action === "allow"
          ? "rate-limit store unavailable: requests pass unlimited (limits.onStoreDown allow)"
          : "rate-limit store unavailable: limited requests are refused (limits.onStoreDown deny)",
        { cause: err instanceof Error ? err.message : String(err), failures: this.failures },
      );
    }
    return action === "allow" ? ALLOWED : { kind: "unavailable" };
  }
}
