// The RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers-10 (structured-field
// lists: one item per policy, named by a string, with parameters). For each rule a request matched:
//   RateLimit-Policy: "<rule>";q=<burst>;w=<window s>   the quota (a whole burst) and its window
//   RateLimit: "<rule>";r=<remaining>;t=<reset s>        what is left, and when the whole quota is back
// Rule names are restricted by the config schema to characters an sf-string carries as they are.
import type { RuleState } from "./limiter.js";

const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));

export function rateLimitHeaders(rules: readonly RuleState[]): { policy: string; state: string } {
  const policy: string[] = [];
  const state: string[] = [];
  for (const { rule, outcome } of rules) {
    // The window a full burst takes to refill: perMs for the default burst (= requests).
    const windowS = Math.max(1, Math.ceil((rule.burst * rule.intervalMs) / 1000));
    policy.push(`"${rule.name}";q=${rule.burst};w=${windowS}`);
    state.push(`"${rule.name}";r=${outcome.remaining};t=${seconds(outcome.resetMs)}`);
  }
  return { policy: policy.join(", "), state: state.join(", ") };
}

/** Retry-After: whole seconds, rounded up (at least 1). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
