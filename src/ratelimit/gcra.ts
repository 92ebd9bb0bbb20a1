// GCRA (the generic cell rate algorithm), the one step every store takes per rule: a rule of `burst`
// requests refilling one every `intervalMs` (perMs / requests) keeps one number per key, its theoretical
// arrival time (TAT). A request fits when, with its own cost added, the TAT is at most `burst` intervals
// ahead of now; it then moves the TAT on by one interval. A request that does not fit changes nothing.
// The Redis script (redis-store.ts) does the same arithmetic in Lua; keep the two together.

/** Floating-point slack (ms): perMs / requests is rarely exact, and the burst-th request must still fit. */
export const GCRA_EPSILON_MS = 1e-6;

/** One rule's outcome for one request. */
export interface GcraOutcome {
  allowed: boolean;
  /** The TAT to store when the request is taken (allowed), else the unchanged one. */
  tat: number;
  /** Requests left in the burst after this one (0 when refused). */
  remaining: number;
  /** When refused: how long until this request would fit (ms, > 0). 0 when allowed. */
  retryAfterMs: number;
  /** How long until the whole burst is available again (ms). */
  resetMs: number;
}

/**
 * The GCRA step. `tat`: the stored TAT (undefined or in the past: a full burst). Pure: the store keeps the
 * returned `tat` when `allowed` (and the whole request is allowed by every rule).
 */
export function gcra(tat: number | undefined, now: number, intervalMs: number, burst: number): GcraOutcome {
  const from = tat === undefined || tat < now ? now : tat;
  const next = from + intervalMs;
  const over = next - now - burst * intervalMs;
  if (over > GCRA_EPSILON_MS) {
    return { allowed: false, tat: from, remaining: 0, retryAfterMs: over, resetMs: from - now };
  }
  const remaining = Math.floor((burst * intervalMs - (next - now)) / intervalMs + GCRA_EPSILON_MS);
  return { allowed: true, tat: next, remaining: Math.max(0, remaining), retryAfterMs: 0, resetMs: next - now };
}
