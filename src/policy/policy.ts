// Per-tool task policy: the first rule whose glob matches the tool name (and,
// when the rule names claims, the caller's verified claims) decides.
//   auto     race the upstream against thresholdMs; a task only if it runs longer
//   always   a task at once
//   never    plain pass-through, never a task
//   required a task; a client that does not declare the extension gets -32021
import { compileClaimMatch, type ClaimMatch, type Claims, type ClaimTest } from "./claims.js";
import { globToRegExp, type GlobMatcher } from "../config/glob.js";

export { globToRegExp } from "../config/glob.js";

export type TaskMode = "auto" | "always" | "never" | "required";

export interface TaskRule {
  /** Glob over tool names: `*` any run of characters, `?` one character. */
  tool: string;
  /** Verified claims the caller must have for the rule to apply (see claims.ts); absent: every caller. */
  match?: ClaimMatch | undefined;
  mode: TaskMode;
  thresholdMs?: number | undefined;
  ttlMs?: number | undefined;
  pollIntervalMs?: number | undefined;
  /** false: adaptive promotion (latency history, poll hints) leaves this rule's tools alone. */
  adaptive?: boolean | undefined;
}

export interface Decision {
  mode: TaskMode;
  thresholdMs: number;
  ttlMs: number;
  pollIntervalMs: number;
  /** Adaptive promotion applies (tasks.adaptive decides globally; a rule may turn it off). */
  adaptive: boolean;
  /** The rule set pollIntervalMs itself: it wins over the adaptive poll hint. */
  pollIntervalPinned: boolean;
}

export interface PolicyDefaults {
  thresholdMs: number;
  ttlMs: number;
  maxTtlMs: number;
  pollIntervalMs: number;
}

export class TaskPolicy {
  private readonly compiled: Array<{ re: GlobMatcher; who: ClaimTest; rule: TaskRule }>;

  constructor(
    rules: readonly TaskRule[],
    private readonly defaults: PolicyDefaults,
  ) {
    this.compiled = rules.map((rule) => ({ re: globToRegExp(rule.tool), who: compileClaimMatch(rule.match), rule }));
  }

  /** `claims`: the caller's verified token claims, when auth.jwt is configured. */
  decide(toolName: string, claims?: Claims): Decision {
    const rule = this.compiled.find((c) => c.re.test(toolName) && c.who(claims))?.rule;
    const d = this.defaults;
    return {
      mode: rule?.mode ?? "auto",
      thresholdMs: rule?.thresholdMs ?? d.thresholdMs,
      // A rule may ask for a longer TTL than the default, never past the ceiling.
      ttlMs: Math.min(rule?.ttlMs ?? d.ttlMs, d.maxTtlMs),
      pollIntervalMs: rule?.pollIntervalMs ?? d.pollIntervalMs,
      adaptive: rule?.adaptive ?? true,
      pollIntervalPinned: rule?.pollIntervalMs !== undefined,
    };
  }
}
