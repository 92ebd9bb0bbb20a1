import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { parseConfig } from "../../src/config/validate.js";
import { gcra } from "../../src/ratelimit/gcra.js";
import { RateLimitRules, type RateLimitsConfig } from "../../src/ratelimit/rules.js";
import { MemoryRateStore } from "../../src/ratelimit/memory-store.js";
import { RateLimiter, type RateRequest, type RateVerdict } from "../../src/ratelimit/limiter.js";
import { rateLimitHeaders, retryAfterSeconds } from "../../src/ratelimit/headers.js";
import type { RateStore } from "../../src/ratelimit/store.js";
import { rateLimited, rateLimitUnavailable } from "../../src/protocol/errors.js";

function limits(rules: RateLimitsConfig["rules"], onStoreDown: "allow" | "deny" = "allow"): RateLimitsConfig {
  return { rules, onStoreDown };
}

function rig(store: RateStore = new MemoryRateStore()) {
  let now = 1_000_000;
  const lines: string[] = [];
  const log = createLogger("info", (l) => lines.push(l));
  const seen = { limited: [] as string[], storeDown: [] as string[] };
  const limiter = new RateLimiter({
    store,
    now: () => now,
    log,
    observer: {
      limited: (rule, upstream) => seen.limited.push(`${rule}@${upstream}`),
      checked: () => {},
      storeDown: (action) => seen.storeDown.push(action),
    },
  });
  return {
    limiter,
    lines,
    seen,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const call = (caller: string, tool = "search", upstream = "default"): RateRequest => ({
  method: "tools/call",
  tool,
  upstream,
  claims: undefined,
  caller: () => caller,
});

function sync(v: RateVerdict | Promise<RateVerdict> | undefined): RateVerdict | undefined {
  if (v instanceof Promise) throw new Error("the memory store answers synchronously");
  return v;
}

describe("gcra", () => {
  it("allows exactly burst requests at one instant, then says how long until the next fits", () => {
    let tat: number | undefined;
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      const o = gcra(tat, 0, 1000 / 3, 3);
      allowed.push(o.allowed);
      if (o.allowed) tat = o.tat;
    }
    expect(allowed).toEqual([true, true, true, false, false, false]);
    const refused = gcra(tat, 0, 1000 / 3, 3);
    expect(refused.retryAfterMs).toBeCloseTo(1000 / 3, 6);
    expect(refused.resetMs).toBeCloseTo(1000, 6);
  });

  it("counts remaining requests down to zero", () => {
    const a = gcra(undefined, 0, 200, 5);
    expect(a.remaining).toBe(4);
    const b = gcra(a.tat, 0, 200, 5);
    expect(b.remaining).toBe(3);
  });
});

describe("RateLimitRules", () => {
  it("matches by method, tool, upstream and claims; names default to rule-<index>", () => {
    const config = limits([
      { method: "tools/call", tool: "search*", per: "caller", requests: 1, perMs: 1000 },
      { method: "tasks/*", per: "global", requests: 1, perMs: 1000, upstream: "git*" },
      { name: "admins", method: "*", per: "caller", requests: 1, perMs: 1000, match: { role: "admin" } },
    ]);
    const plain = new RateLimitRules(config, "default");
    expect(plain.matching("tools/call", "search_web", undefined).map((r) => r.name)).toEqual(["rule-0"]);
    expect(plain.matching("tools/call", "fetch", undefined)).toEqual([]);
    expect(plain.matching("tasks/get", undefined, undefined)).toEqual([]);
    expect(plain.matching("tasks/get", undefined, { role: "admin" }).map((r) => r.name)).toEqual(["admins"]);
    const gh = new RateLimitRules(config, "github");
    expect(gh.matching("tasks/get", undefined, undefined).map((r) => r.name)).toEqual(["rule-1"]);
    expect(gh.covers("tasks/get")).toBe(true);
    expect(plain.covers("tasks/get")).toBe(true);
    expect(new RateLimitRules(limits([]), "default").empty).toBe(true);
  });

  it("the config fills in method and per, and refuses two rules of one name", () => {
    const c = parseConfig({
      upstream: { url: "http://127.0.0.1:1/mcp" },
      limits: { rules: [{ requests: 5, perMs: 1000 }] },
    });
    expect(c.limits).toEqual({
      rules: [{ method: "tools/call", per: "caller", requests: 5, perMs: 1000 }],
      onStoreDown: "allow",
    });
    expect(() =>
      parseConfig({
        upstream: { url: "http://127.0.0.1:1/mcp" },
        limits: {
          rules: [
            { name: "rule-1", requests: 5, perMs: 1000 },
            { requests: 5, perMs: 1000 },
          ],
        },
      }),
    ).toThrow(/same name/);
    expect(() =>
      parseConfig({
        upstream: { url: "http://127.0.0.1:1/mcp" },
        limits: { rules: [{ name: 'a"b', requests: 5, perMs: 1000 }] },
      }),
    ).toThrow();
  });
});

describe("RateLimiter (memory store, injected clock)", () => {
  const fiveASecond = new RateLimitRules(
    limits([{ name: "five", method: "tools/call", per: "caller", requests: 5, perMs: 1000 }]),
    "default",
  );

  it("allows exactly 5 in a window, refuses the 6th, and allows one more after one interval", () => {
    const { limiter, advance, seen } = rig();
    const kinds = Array.from({ length: 6 }, () => sync(limiter.check(fiveASecond, call("a")))?.kind);
    expect(kinds).toEqual(["allowed", "allowed", "allowed", "allowed", "allowed", "limited"]);
    const refused = sync(limiter.check(fiveASecond, call("a")));
    expect(refused).toMatchObject({ kind: "limited", retryAfterMs: 200 });
    // 199 ms later the next request still does not fit; at 200 ms exactly it does, and only one.
    advance(199);
    expect(sync(limiter.check(fiveASecond, call("a")))?.kind).toBe("limited");
    advance(1);
    expect(sync(limiter.check(fiveASecond, call("a")))?.kind).toBe("allowed");
    expect(sync(limiter.check(fiveASecond, call("a")))?.kind).toBe("limited");
    // A whole window later the whole burst is back.
    advance(1000);
    const again = Array.from({ length: 6 }, () => sync(limiter.check(fiveASecond, call("a")))?.kind);
    expect(again.filter((k) => k === "allowed")).toHaveLength(5);
    expect(seen.limited.every((s) => s === "five@default")).toBe(true);
    expect(limiter.recent()).toEqual([{ rule: "five", upstream: "default", count: seen.limited.length }]);
  });

  it("keeps two callers' budgets apart", () => {
    const { limiter } = rig();
    for (let i = 0; i < 5; i++) expect(sync(limiter.check(fiveASecond, call("a")))?.kind).toBe("allowed");
    expect(sync(limiter.check(fiveASecond, call("a")))?.kind).toBe("limited");
    for (let i = 0; i < 5; i++) expect(sync(limiter.check(fiveASecond, call("b")))?.kind).toBe("allowed");
    expect(sync(limiter.check(fiveASecond, call("b")))?.kind).toBe("limited");
  });

  it("a global rule is one budget for every caller, and a request must fit every rule it matches", () => {
    const { limiter } = rig();
    const rules = new RateLimitRules(
      limits([
        { name: "all", method: "tools/call", per: "global", requests: 3, perMs: 1000 },
        { name: "each", method: "tools/call", per: "caller", requests: 2, perMs: 1000 },
      ]),
      "default",
    );
    expect(sync(limiter.check(rules, call("a")))?.kind).toBe("allowed");
    expect(sync(limiter.check(rules, call("a")))?.kind).toBe("allowed");
    const third = sync(limiter.check(rules, call("a")));
    expect(third).toMatchObject({ kind: "limited", rule: { name: "each" } });
    // a's refused call spent nothing of the global budget: b gets its one remaining request.
    expect(sync(limiter.check(rules, call("b")))?.kind).toBe("allowed");
    expect(sync(limiter.check(rules, call("b")))).toMatchObject({ kind: "limited", rule: { name: "all" } });
    expect(sync(limiter.check(rules, call("c")))).toMatchObject({ kind: "limited", rule: { name: "all" } });
  });

  it("a request no rule matches is not checked", () => {
    const { limiter } = rig();
    expect(limiter.check(fiveASecond, { ...call("a"), method: "tools/list", tool: undefined })).toBeUndefined();
  });

  it("a store that fails: onStoreDown allow passes (one warning a minute), deny refuses", async () => {
    const down: RateStore = { shared: true, take: () => Promise.reject(new Error("connection refused")) };
    const { limiter, lines, seen, advance } = rig(down);
    const allow = new RateLimitRules(limits([{ method: "*", per: "caller", requests: 1, perMs: 1000 }]), "x");
    const deny = new RateLimitRules(limits([{ method: "*", per: "caller", requests: 1, perMs: 1000 }], "deny"), "x");
    expect(await limiter.check(allow, call("a"))).toEqual({ kind: "allowed" });
    expect(await limiter.check(allow, call("a"))).toEqual({ kind: "allowed" });
    expect(await limiter.check(deny, call("a"))).toEqual({ kind: "unavailable" });
    expect(lines.filter((l) => l.includes("rate-limit store unavailable"))).toHaveLength(1);
    advance(60_000);
    await limiter.check(allow, call("a"));
    expect(lines.filter((l) => l.includes("rate-limit store unavailable"))).toHaveLength(2);
    expect(seen.storeDown).toEqual(["allow", "allow", "deny", "allow"]);
    expect(limiter.storeFailures).toBe(4);
  });
});

describe("rate-limit headers", () => {
  it("names each rule with its quota, window, remaining and reset (draft-ietf-httpapi-ratelimit-headers-10)", () => {
    const rules = new RateLimitRules(
      limits([
        { name: "five", method: "*", per: "caller", requests: 5, perMs: 1000 },
        { name: "slow", method: "*", per: "global", requests: 10, perMs: 60_000, burst: 2 },
      ]),
      "default",
    ).matching("tools/call", "x", undefined);
    const h = rateLimitHeaders([
      { rule: rules[0]!, outcome: { allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 200 } },
      { rule: rules[1]!, outcome: { allowed: false, remaining: 0, retryAfterMs: 1500, resetMs: 12_000 } },
    ]);
    expect(h.policy).toBe('"five";q=5;w=1, "slow";q=2;w=12');
    expect(h.state).toBe('"five";r=4;t=1, "slow";r=0;t=12');
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
  });
});

describe("the rate-limit errors (protocol/errors.ts)", () => {
  it("rate_limited: 429, the rule and retryAfterMs in data, Retry-After rounded up to whole seconds", () => {
    expect(rateLimited("five", 1200.5, '"five";q=5;w=1', '"five";r=0;t=2')).toEqual({
      status: 429,
      error: {
        code: -32603,
        message: 'Rate limit exceeded (rule "five"): retry in 2 s',
        data: { reason: "rate_limited", rule: "five", retryAfterMs: 1201 },
      },
      headers: { "retry-after": "2", "ratelimit-policy": '"five";q=5;w=1', ratelimit: '"five";r=0;t=2' },
    });
  });

  it("rate_limit_unavailable: 503 with Retry-After 1", () => {
    const f = rateLimitUnavailable();
    expect(f.status).toBe(503);
    expect(f.error.data).toEqual({ reason: "rate_limit_unavailable" });
    expect(f.headers).toEqual({ "retry-after": "1" });
  });
});
