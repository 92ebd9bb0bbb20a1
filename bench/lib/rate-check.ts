// What one rate-limit check costs (limits.rules, issue 24): RateLimiter.check in process with the memory store,
// no HTTP, CPU by process.cpuUsage over `checks` checks spread over 1,000 callers, after a warm-up. Used by
// bench/ratelimit.ts (figure 1, every case) and by the regression guard (lib/priced-paths.ts, the priced case).
import { randomBytes } from "node:crypto";
import { Callers, credentialHeaders } from "../../src/policy/sets/identity.js";
import type { PolicySet } from "../../src/policy/sets/policy-set.js";
import { createLogger } from "../../src/log/logger.js";
import { PrometheusMetrics } from "../../src/metrics/prometheus.js";
import { RateLimiter } from "../../src/ratelimit/limiter.js";
import { MemoryRateStore } from "../../src/ratelimit/memory-store.js";
import { RateLimitRules } from "../../src/ratelimit/rules.js";

/** A budget no bench run reaches: the rule is checked on every request and never refuses. */
export const NEVER = 1_000_000_000;

export type RateCheckCase =
  | "no rules"
  | "no rule matches"
  | "one per-caller rule"
  | "a global and a per-caller rule"
  | "one per-caller rule, with the caller's digest (Authorization header)"
  | "the same, metrics on (the check-duration histogram)";

/**
 * The case the issue 27 aim prices (≤ 3 µs): what a tools/call under one per-caller rule pays with the gateway's
 * defaults, i.e. the check, the caller's identity digest (cached) and the check-duration histogram (metrics on).
 */
export const PRICED_CASE: RateCheckCase = "the same, metrics on (the check-duration histogram)";

const ALL_CASES: readonly RateCheckCase[] = [
  "no rules",
  "no rule matches",
  "one per-caller rule",
  "a global and a per-caller rule",
  "one per-caller rule, with the caller's digest (Authorization header)",
  PRICED_CASE,
];

function rules(list: Record<string, unknown>[]): RateLimitRules {
  return new RateLimitRules({ rules: list as never, onStoreDown: "allow" }, "default");
}

/** CPU µs per check for each case asked for, in the order asked. */
export function rateCheckCosts(
  checks: number,
  cases: readonly RateCheckCase[] = ALL_CASES,
): Array<{ case: RateCheckCase; usPerCheck: number }> {
  const limiter = new RateLimiter({ store: new MemoryRateStore(), now: Date.now, log: createLogger("silent") });
  const perCaller = rules([{ method: "tools/call", per: "caller", requests: NEVER, perMs: 1000 }]);
  const ruleSets: Record<"none" | "other" | "one" | "two", RateLimitRules> = {
    none: rules([]),
    other: rules([{ method: "tools/list", per: "caller", requests: NEVER, perMs: 1000 }]),
    one: perCaller,
    two: rules([
      { name: "g", method: "tools/call", per: "global", requests: NEVER, perMs: 1000 },
      { name: "c", method: "tools/call", tool: "bench*", per: "caller", requests: NEVER, perMs: 1000 },
    ]),
  };
  const callers = Array.from({ length: 1000 }, () => randomBytes(32).toString("base64url"));
  // What the route adds for a per-caller rule: the caller's identity digest from its credential headers
  // (policy/sets/identity.ts Callers, with its digest cache), as for a client sending Authorization: Bearer ….
  const identities = new Callers();
  const headers = callers.map((c) => ["Host", "127.0.0.1", "Authorization", `Bearer ${c}`]);
  const set = { identityHeader: undefined } as PolicySet;
  // Metrics on (the default): the check histogram and the refusal counter of a PrometheusMetrics.
  const metered = new RateLimiter({
    store: new MemoryRateStore(),
    now: Date.now,
    log: createLogger("silent"),
    observer: new PrometheusMetrics({ replicaId: "bench", toolLabels: [], upstreams: ["default"] }).rateLimitObserver(),
  });
  const measure = (rulesOf: RateLimitRules, digest: boolean, by: RateLimiter): number => {
    const run = (n: number): void => {
      for (let i = 0; i < n; i++) {
        const k = i % callers.length;
        const caller = digest
          ? () =>
              identities.digest(
                undefined,
                set,
                () => undefined,
                () => credentialHeaders(headers[k] as string[]),
              )
          : () => callers[k] as string;
        void by.check(rulesOf, { method: "tools/call", tool: "bench", upstream: "default", claims: undefined, caller });
      }
    };
    run(20_000);
    const start = process.cpuUsage();
    run(checks);
    const used = process.cpuUsage(start);
    return (used.user + used.system) / checks;
  };
  const how: Record<RateCheckCase, () => number> = {
    "no rules": () => measure(ruleSets.none, false, limiter),
    "no rule matches": () => measure(ruleSets.other, false, limiter),
    "one per-caller rule": () => measure(ruleSets.one, false, limiter),
    "a global and a per-caller rule": () => measure(ruleSets.two, false, limiter),
    "one per-caller rule, with the caller's digest (Authorization header)": () => measure(perCaller, true, limiter),
    "the same, metrics on (the check-duration histogram)": () => measure(perCaller, true, metered),
  };
  return cases.map((c) => ({ case: c, usPerCheck: how[c]() }));
}
