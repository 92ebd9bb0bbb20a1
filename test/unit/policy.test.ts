// Per-tool task policy (src/policy/policy.ts): glob rules over tool names, the
// first match wins, unmatched tools are auto, and a rule's TTL never passes
// the ceiling.
import { describe, expect, it } from "vitest";
import { globToRegExp, TaskPolicy, type PolicyDefaults, type TaskRule } from "../../src/policy/policy.js";

const DEFAULTS: PolicyDefaults = { thresholdMs: 5_000, ttlMs: 3_600_000, maxTtlMs: 86_400_000, pollIntervalMs: 1_000 };

const matches = (glob: string, name: string): boolean => globToRegExp(glob).test(name);

describe("globToRegExp", () => {
  it("a plain name matches only itself, whole", () => {
    expect(matches("echo", "echo")).toBe(true);
    expect(matches("echo", "echo2")).toBe(false);
    expect(matches("echo", "my_echo")).toBe(false);
    expect(matches("echo", "Echo")).toBe(false);
  });

  it("* matches any run of characters, including none and separators", () => {
    expect(matches("*", "anything")).toBe(true);
    expect(matches("*", "")).toBe(true);
    expect(matches("slow_*", "slow_task")).toBe(true);
    expect(matches("slow_*", "slow_")).toBe(true);
    expect(matches("slow_*", "slow")).toBe(false);
    expect(matches("*_task", "slow_task")).toBe(true);
    expect(matches("db/*", "db/admin/drop")).toBe(true);
    expect(matches("a*b*c", "a--b--c")).toBe(true);
    expect(matches("a*b*c", "a--c--b")).toBe(false);
    expect(matches("*", "multi\nline")).toBe(true);
  });

  it("? matches exactly one character", () => {
    expect(matches("job?", "job1")).toBe(true);
    expect(matches("job?", "job")).toBe(false);
    expect(matches("job?", "job12")).toBe(false);
    expect(matches("??", "ab")).toBe(true);
    expect(matches("??", "abc")).toBe(false);
  });

  it("regex metacharacters are literal", () => {
    expect(matches("a.b", "a.b")).toBe(true);
    expect(matches("a.b", "axb")).toBe(false);
    expect(matches("a+b", "a+b")).toBe(true);
    expect(matches("a+b", "aab")).toBe(false);
    expect(matches("(x)", "(x)")).toBe(true);
    expect(matches("(x)", "x")).toBe(false);
    expect(matches("[ab]", "[ab]")).toBe(true);
    expect(matches("[ab]", "a")).toBe(false);
    expect(matches("a|b", "a|b")).toBe(true);
    expect(matches("a|b", "a")).toBe(false);
    expect(matches("^x$", "^x$")).toBe(true);
    expect(matches("x{2}", "x{2}")).toBe(true);
    expect(matches("x{2}", "xx")).toBe(false);
    expect(matches("a\\b", "a\\b")).toBe(true);
    expect(matches("price$*", "price$100")).toBe(true);
  });

  it("matches a caller's long name in linear time, whatever the stars (no RegExp backtracking)", () => {
    // As a RegExp, ^.*a.*a.*b$ over 2,000 "a"s took seconds (O(n^3)); a tool name is the caller's to choose.
    const name = "a".repeat(200_000);
    const started = performance.now();
    expect(matches("*a*a*a*b", name)).toBe(false);
    expect(matches("*a*b", name)).toBe(false);
    expect(matches("*a*a*a*", name)).toBe(true);
    expect(matches("*?*?*b", name)).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("never throws on odd patterns", () => {
    for (const g of ["(", ")", "[", "]", "{", "\\", "*?*", "+*", "a**b"]) {
      expect(() => globToRegExp(g)).not.toThrow();
    }
  });
});

describe("TaskPolicy.decide", () => {
  it("no rules: auto with the defaults", () => {
    const p = new TaskPolicy([], DEFAULTS);
    expect(p.decide("anything")).toEqual({
      mode: "auto",
      thresholdMs: 5_000,
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      adaptive: true,
      pollIntervalPinned: false,
    });
  });

  it("an unmatched tool is auto with the defaults", () => {
    const p = new TaskPolicy([{ tool: "slow_*", mode: "always", thresholdMs: 1 }], DEFAULTS);
    expect(p.decide("echo")).toEqual({
      mode: "auto",
      thresholdMs: 5_000,
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      adaptive: true,
      pollIntervalPinned: false,
    });
  });

  it("the first matching rule wins, even if a later one is more specific", () => {
    const rules: TaskRule[] = [
      { tool: "slow_*", mode: "always" },
      { tool: "slow_task", mode: "never" },
      { tool: "*", mode: "required" },
    ];
    const p = new TaskPolicy(rules, DEFAULTS);
    expect(p.decide("slow_task").mode).toBe("always");
    expect(p.decide("echo").mode).toBe("required");
  });

  it("each mode comes through as configured", () => {
    const p = new TaskPolicy(
      [
        { tool: "a", mode: "auto" },
        { tool: "b", mode: "always" },
        { tool: "c", mode: "never" },
        { tool: "d", mode: "required" },
      ],
      DEFAULTS,
    );
    expect(["a", "b", "c", "d"].map((n) => p.decide(n).mode)).toEqual(["auto", "always", "never", "required"]);
  });

  it("a rule's thresholdMs, ttlMs and pollIntervalMs replace the defaults; missing ones fall back", () => {
    const p = new TaskPolicy(
      [
        { tool: "custom", mode: "auto", thresholdMs: 250, ttlMs: 120_000, pollIntervalMs: 50 },
        { tool: "partial", mode: "auto", thresholdMs: 0 },
      ],
      DEFAULTS,
    );
    expect(p.decide("custom")).toEqual({
      mode: "auto",
      thresholdMs: 250,
      ttlMs: 120_000,
      pollIntervalMs: 50,
      adaptive: true,
      pollIntervalPinned: true,
    });
    // thresholdMs 0 is a value, not "missing".
    expect(p.decide("partial")).toEqual({
      mode: "auto",
      thresholdMs: 0,
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      adaptive: true,
      pollIntervalPinned: false,
    });
  });

  it("a rule may turn adaptive promotion off for its tools", () => {
    const p = new TaskPolicy([{ tool: "batch_*", mode: "auto", adaptive: false }], DEFAULTS);
    expect(p.decide("batch_run").adaptive).toBe(false);
    expect(p.decide("echo").adaptive).toBe(true);
  });

  it("a rule's ttlMs is capped by maxTtlMs", () => {
    const p = new TaskPolicy([{ tool: "long", mode: "always", ttlMs: 7 * 86_400_000 }], DEFAULTS);
    expect(p.decide("long").ttlMs).toBe(86_400_000);
  });

  it("the default ttlMs is capped by maxTtlMs too", () => {
    const p = new TaskPolicy([], { ...DEFAULTS, ttlMs: 10_000, maxTtlMs: 5_000 });
    expect(p.decide("x").ttlMs).toBe(5_000);
  });

  it("a rule may ask for a TTL shorter than the default", () => {
    const p = new TaskPolicy([{ tool: "brief", mode: "always", ttlMs: 1_000 }], DEFAULTS);
    expect(p.decide("brief").ttlMs).toBe(1_000);
  });

  it("names with metacharacters match only literally", () => {
    const p = new TaskPolicy([{ tool: "tool.v1", mode: "never" }], DEFAULTS);
    expect(p.decide("tool.v1").mode).toBe("never");
    expect(p.decide("toolXv1").mode).toBe("auto");
  });
});
