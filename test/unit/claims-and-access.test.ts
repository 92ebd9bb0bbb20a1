// Policy by caller (src/policy/claims.ts, access.ts, policy.ts): claim matches,
// claim-matched task rules, and tool access rules with their tools/list filter.
import { describe, expect, it } from "vitest";
import { compileClaimMatch } from "../../src/policy/claims.js";
import { AccessPolicy } from "../../src/policy/access.js";
import { TaskPolicy } from "../../src/policy/policy.js";

const DEFAULTS = { thresholdMs: 5_000, ttlMs: 3_600_000, maxTtlMs: 86_400_000, pollIntervalMs: 1_000 };

describe("claim matches", () => {
  it("every listed claim must match one of its globs", () => {
    const test = compileClaimMatch({ azp: "batch-*", tier: ["gold", "platinum"] });
    expect(test({ azp: "batch-nightly", tier: "gold" })).toBe(true);
    expect(test({ azp: "batch-nightly", tier: "silver" })).toBe(false);
    expect(test({ azp: "web", tier: "gold" })).toBe(false);
    expect(test({ tier: "gold" })).toBe(false);
  });

  it("arrays match on any element; scope strings on any space-separated scope", () => {
    expect(compileClaimMatch({ groups: "admins" })({ groups: ["users", "admins"] })).toBe(true);
    expect(compileClaimMatch({ groups: "admins" })({ groups: ["users"] })).toBe(false);
    expect(compileClaimMatch({ scope: "tasks:batch" })({ scope: "openid tasks:batch profile" })).toBe(true);
    expect(compileClaimMatch({ scp: "tasks:*" })({ scp: "openid tasks:write" })).toBe(true);
    // Only scope claims split: another claim's spaces are part of its value.
    expect(compileClaimMatch({ name: "Ada" })({ name: "Ada Lovelace" })).toBe(false);
  });

  it("dotted paths reach nested claims; a literal dotted key wins", () => {
    expect(compileClaimMatch({ "realm_access.roles": "batch" })({ realm_access: { roles: ["batch", "user"] } })).toBe(
      true,
    );
    expect(compileClaimMatch({ "realm_access.roles": "batch" })({ realm_access: { roles: ["user"] } })).toBe(false);
    expect(compileClaimMatch({ "https://example.com/role": "ops" })({ "https://example.com/role": "ops" })).toBe(true);
  });

  it("numbers and booleans match as text; objects and null never", () => {
    expect(compileClaimMatch({ level: "3" })({ level: 3 })).toBe(true);
    expect(compileClaimMatch({ staff: "true" })({ staff: true })).toBe(true);
    expect(compileClaimMatch({ org: "*" })({ org: { id: 1 } })).toBe(false);
    expect(compileClaimMatch({ org: "*" })({ org: null })).toBe(false);
  });

  it("without claims (no auth.jwt) a match fails; an empty match fits everyone", () => {
    expect(compileClaimMatch({ sub: "*" })(undefined)).toBe(false);
    expect(compileClaimMatch(undefined)(undefined)).toBe(true);
    expect(compileClaimMatch({})({ sub: "x" })).toBe(true);
  });
});

describe("claim-matched task rules", () => {
  const policy = new TaskPolicy(
    [
      { tool: "report_*", match: { azp: "batch-client" }, mode: "always" },
      { tool: "report_*", mode: "auto", thresholdMs: 2_000 },
    ],
    DEFAULTS,
  );

  it("the batch client gets always, everyone else auto, for the same tool", () => {
    expect(policy.decide("report_monthly", { azp: "batch-client" }).mode).toBe("always");
    expect(policy.decide("report_monthly", { azp: "web-ui" })).toMatchObject({ mode: "auto", thresholdMs: 2_000 });
    expect(policy.decide("report_monthly").mode).toBe("auto");
  });
});

describe("tool access", () => {
  const access = new AccessPolicy({
    default: "allow",
    rules: [
      { tools: "admin_*", match: { groups: "admins" }, effect: "allow" },
      { tools: ["admin_*", "delete_*"], effect: "deny" },
    ],
  });

  it("the first rule whose tools and claims fit decides; else the default", () => {
    expect(access.allows("admin_reset", { groups: ["admins"] })).toBe(true);
    expect(access.allows("admin_reset", { groups: ["users"] })).toBe(false);
    expect(access.allows("admin_reset", undefined)).toBe(false);
    expect(access.allows("delete_all", { groups: ["admins"] })).toBe(false);
    expect(access.allows("echo", undefined)).toBe(true);
    expect(access.unrestricted).toBe(false);
  });

  it("deny by default allows only what a rule allows", () => {
    const strict = new AccessPolicy({ default: "deny", rules: [{ tools: "read_*", effect: "allow" }] });
    expect(strict.allows("read_file", undefined)).toBe(true);
    expect(strict.allows("write_file", undefined)).toBe(false);
  });

  it("no rules and allow by default is unrestricted: nothing to filter", () => {
    const open = new AccessPolicy({ default: "allow", rules: [] });
    expect(open.unrestricted).toBe(true);
    expect(open.toolsListEdit(undefined)).toBeUndefined();
  });

  it("the tools/list edit drops denied tools and keeps the cursor and other members", () => {
    const edit = access.toolsListEdit({ groups: ["users"] });
    expect(edit).toBeDefined();
    const page = {
      tools: [{ name: "echo" }, { name: "admin_reset" }, { name: "delete_all" }, { notATool: 1 }],
      nextCursor: "c2",
      ttlMs: 0,
    };
    expect(edit?.(page)).toEqual({ tools: [{ name: "echo" }], nextCursor: "c2", ttlMs: 0 });
    // A filtered modern page depends on the caller: never a public cache entry.
    expect(edit?.({ tools: [], cacheScope: "public", ttlMs: 60_000 })).toEqual({
      tools: [],
      cacheScope: "private",
      ttlMs: 60_000,
    });
    const admin = access.toolsListEdit({ groups: ["admins"] });
    expect(admin?.(page).tools).toEqual([{ name: "echo" }, { name: "admin_reset" }]);
  });
});
