// Tool access by caller: which tools a caller may see and call.
//
// Rules are read in order; the first whose tool glob and claim match both fit
// the caller decides (allow or deny). When none fits, `default` decides. A
// denied tool is removed from every tools/list page the caller gets, and a
// call to it is refused before anything goes upstream, so the upstream never
// learns of it. With no rules and `default: "allow"`, access checks nothing and
// costs nothing on the hot path (`unrestricted`).
import { compileClaimMatch, type ClaimMatch, type Claims, type ClaimTest } from "./claims.js";
import { globToRegExp, type GlobMatcher } from "../config/glob.js";
import { isRecord, type JsonObject } from "../protocol/json.js";
import type { ResultEdit } from "../protocol/answer-edit.js";

export type AccessEffect = "allow" | "deny";

interface AccessRule {
  /** One glob over tool names, or several (any may match). */
  tools: string | readonly string[];
  /** Verified claims the caller must have for the rule to apply; absent: every caller. */
  match?: ClaimMatch | undefined;
  effect: AccessEffect;
}

export interface AccessConfig {
  default: AccessEffect;
  rules: readonly AccessRule[];
}

interface CompiledRule {
  tools: GlobMatcher[];
  who: ClaimTest;
  effect: AccessEffect;
}

export class AccessPolicy {
  private readonly rules: CompiledRule[];
  private readonly fallback: AccessEffect;

  constructor(config: AccessConfig) {
    this.fallback = config.default;
    this.rules = config.rules.map((r) => ({
      tools: (typeof r.tools === "string" ? [r.tools] : r.tools).map(globToRegExp),
      who: compileClaimMatch(r.match),
      effect: r.effect,
    }));
  }

  /** True when every caller may use every tool: nothing to check or filter. */
  get unrestricted(): boolean {
    return this.rules.length === 0 && this.fallback === "allow";
  }

  allows(tool: string, claims: Claims | undefined): boolean {
    for (const rule of this.rules) {
      if (rule.tools.some((re) => re.test(tool)) && rule.who(claims)) return rule.effect === "allow";
    }
    return this.fallback === "allow";
  }

  /**
   * The edit that takes this caller's denied tools out of a tools/list result,
   * or undefined when the caller is denied nothing (the answer then streams
   * through untouched). A page may come out shorter, or empty; its nextCursor
   * stays, so pagination still reaches every allowed tool.
   */
  toolsListEdit(claims: Claims | undefined): ResultEdit | undefined {
    if (this.unrestricted) return undefined;
    return (result: JsonObject): JsonObject => {
      if (!Array.isArray(result.tools)) return result;
      const tools = result.tools.filter(
        (t: unknown) => isRecord(t) && typeof t.name === "string" && this.allows(t.name, claims),
      );
      // The list now depends on who asked: a shared cache must not hand it to another caller.
      return { ...result, tools, ...(result.cacheScope !== undefined && { cacheScope: "private" }) };
    };
  }
}
