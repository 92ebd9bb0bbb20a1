// Rate-limit rules (limits.rules), compiled once per policy set: which rules a request falls under.
//
// Every rule that matches a request applies, and the request must fit all of them. A rule matches when its
// `method` glob matches the JSON-RPC method, its `tool` glob (when it has one) matches the tool of a
// tools/call, its `upstream` glob matches the upstream serving the request (applied when the policy of an
// upstream is built) and its claim `match` fits the verified caller. Each rule keeps one budget: shared by
// every caller (`per: global`) or one per caller (`per: caller`, the identity digest). Names key the budgets
// and appear in errors, headers, metrics and logs: `rule-<index>` (its place in limits.rules) by default.
import { globToRegExp, type GlobMatcher } from "../config/glob.js";
import { compileClaimMatch, type ClaimMatch, type Claims, type ClaimTest } from "../policy/claims.js";

type RatePer = "caller" | "global";
export type StoreDownAction = "allow" | "deny";

/** One rule as the config gives it (config/schema.ts limits.rules). */
interface RateRuleConfig {
  name?: string | undefined;
  method: string;
  tool?: string | undefined;
  upstream?: string | undefined;
  match?: ClaimMatch | undefined;
  per: RatePer;
  requests: number;
  perMs: number;
  burst?: number | undefined;
}

export interface RateLimitsConfig {
  rules: readonly RateRuleConfig[];
  onStoreDown: StoreDownAction;
}

/** A compiled rule. */
export interface RateRule {
  readonly name: string;
  /**
   * What keys its budgets: the name and the quota, so a reload that changes a rule's requests, perMs or burst
   * starts its budgets afresh (a TAT reached under the old quota means nothing under the new one).
   */
  readonly id: string;
  readonly per: RatePer;
  /** The quota as configured (requests per perMs), for RateLimit-Policy. */
  readonly requests: number;
  readonly perMs: number;
  /** How many requests may be spent at once (default: requests). */
  readonly burst: number;
  /** perMs / requests: one request's share of the window. */
  readonly intervalMs: number;
  readonly method: GlobMatcher;
  readonly tool: GlobMatcher | undefined;
  readonly who: ClaimTest;
}

/** The name of the rule at `index` of limits.rules. */
function ruleName(rule: Pick<RateRuleConfig, "name">, index: number): string {
  return rule.name ?? `rule-${index}`;
}

const NONE: readonly RateRule[] = Object.freeze([]);

export class RateLimitRules {
  private readonly rules: readonly RateRule[];
  readonly onStoreDown: StoreDownAction;

  /** The rules of `config` meant for `upstream` (those without an upstream glob, and those whose glob matches). */
  constructor(config: RateLimitsConfig | undefined, upstream: string) {
    this.onStoreDown = config?.onStoreDown ?? "allow";
    const rules: RateRule[] = [];
    (config?.rules ?? []).forEach((r, index) => {
      if (r.upstream !== undefined && !globToRegExp(r.upstream).test(upstream)) return;
      const name = ruleName(r, index);
      const burst = r.burst ?? r.requests;
      rules.push({
        name,
        id: `${name}/${r.requests}/${r.perMs}/${burst}`,
        per: r.per,
        requests: r.requests,
        perMs: r.perMs,
        burst,
        intervalMs: r.perMs / r.requests,
        method: globToRegExp(r.method),
        tool: r.tool === undefined ? undefined : globToRegExp(r.tool),
        who: compileClaimMatch(r.match),
      });
    });
    this.rules = rules;
  }

  /** No rule for this upstream: nothing to check, nothing to pay. */
  get empty(): boolean {
    return this.rules.length === 0;
  }

  /** Whether some rule may apply to `method` (its claims and tool aside): a cheap test before the identity is known. */
  covers(method: string): boolean {
    return this.rules.some((r) => r.method.test(method));
  }

  /** The rules a request falls under; `tool`: the tool of a tools/call (a rule with a tool glob needs one). */
  matching(method: string, tool: string | undefined, claims: Claims | undefined): readonly RateRule[] {
    let out: RateRule[] | undefined;
    for (const r of this.rules) {
      if (!r.method.test(method)) continue;
      if (r.tool && (tool === undefined || !r.tool.test(tool))) continue;
      if (!r.who(claims)) continue;
      (out ??= []).push(r);
    }
    return out ?? NONE;
  }
}
