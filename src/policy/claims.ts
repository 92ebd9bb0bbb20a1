// Matching a caller's verified token claims, for task rules and access rules.
//
// A match is an object of claim paths to globs: every listed claim must match
// (AND), and a claim matches when any of its values matches any of the globs
// given for it (OR). A path may be dotted, to reach into nested claims such as
// Keycloak's `realm_access.roles`. Values:
//   - a string matches as a whole; `scope` and `scp` strings are also split on
//     spaces (RFC 8693 / RFC 9068 carry scopes as one space-separated string),
//     so `{ "scope": "tasks:batch" }` matches "openid tasks:batch";
//   - an array matches when any string (or number, boolean) element matches;
//   - a number or boolean matches as its decimal/literal text;
//   - anything else (missing, null, objects) never matches.
// Without verified claims (no auth.jwt), every match fails: a rule that names
// claims never applies to an unverified caller.
import { globToRegExp } from "../config/glob.js";

/** Verified token claims (a JWT payload). */
export type Claims = Readonly<Record<string, unknown>>;

/** Claim path → one glob, or several (any may match). */
export type ClaimMatch = Readonly<Record<string, string | readonly string[]>>;

export type ClaimTest = (claims: Claims | undefined) => boolean;

const SPACE_SEPARATED = new Set(["scope", "scp"]);

function claimAt(claims: Claims, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let at: unknown = claims;
  for (const part of path.split(".")) {
    if (typeof at !== "object" || at === null || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

function valuesOf(value: unknown, path: string): string[] {
  if (typeof value === "string")
    return SPACE_SEPARATED.has(path) ? [value, ...value.split(" ").filter(Boolean)] : [value];
  if (typeof value === "number" || typeof value === "boolean") return [String(value)];
  if (Array.isArray(value)) return value.filter((v) => ["string", "number", "boolean"].includes(typeof v)).map(String);
  return [];
}

/** Compiles a match once; undefined or empty matches every caller, claims or not. */
export function compileClaimMatch(match: ClaimMatch | undefined): ClaimTest {
  const entries = Object.entries(match ?? {}).map(([path, globs]) => ({
    path,
    res: (typeof globs === "string" ? [globs] : globs).map(globToRegExp),
  }));
  if (entries.length === 0) return () => true;
  return (claims) => {
    if (!claims) return false;
    return entries.every(({ path, res }) =>
      valuesOf(claimAt(claims, path), path).some((v) => res.some((re) => re.test(v))),
    );
  };
}
