import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/validate.js";
import { upstreamEntries } from "../../src/config/upstream-set.js";
import { buildPolicySet } from "../../src/policy/sets/policy-set.js";

const config = parseConfig({
  upstream: { url: "http://127.0.0.1:1/mcp" },
  upstreams: {
    github: {
      url: "http://127.0.0.1:2/mcp",
      tasks: { thresholdMs: 100, rules: [{ tool: "search", mode: "never" }] },
      access: { default: "deny", rules: [{ tools: "read_*", effect: "allow" }] },
      auth: { upstreamCredentials: "drop" },
    },
    jira: { url: "http://127.0.0.1:3/mcp" },
  },
  tasks: {
    thresholdMs: 5_000,
    rules: [
      { tool: "search", mode: "always" },
      { upstream: "j*", tool: "bulk", mode: "required" },
    ],
  },
  access: { rules: [{ upstream: "jira", tools: "delete", effect: "deny" }] },
});

function setOf(name: string) {
  const entry = upstreamEntries(config).find((e) => e.name === name);
  if (!entry) throw new Error(`no upstream ${name}`);
  return buildPolicySet(config, { upstream: entry });
}

describe("policy per upstream", () => {
  it("an upstream's own task rules come before the global ones, and its threshold replaces the global one", () => {
    expect(setOf("github").tasks.decide("search").mode).toBe("never");
    expect(setOf("github").tasks.decide("other").thresholdMs).toBe(100);
    expect(setOf("jira").tasks.decide("search").mode).toBe("always");
    expect(setOf("default").tasks.decide("other").thresholdMs).toBe(5_000);
  });

  it("a global rule with an upstream glob applies to the upstreams it matches only", () => {
    expect(setOf("jira").tasks.decide("bulk").mode).toBe("required");
    expect(setOf("github").tasks.decide("bulk").mode).toBe("auto");
    expect(setOf("default").tasks.decide("bulk").mode).toBe("auto");
  });

  it("access: an upstream's own default and rules, then the global rules meant for it", () => {
    expect(setOf("github").access.allows("read_file", undefined)).toBe(true);
    expect(setOf("github").access.allows("write_file", undefined)).toBe(false);
    expect(setOf("jira").access.allows("delete", undefined)).toBe(false);
    expect(setOf("jira").access.allows("write_file", undefined)).toBe(true);
    expect(setOf("default").access.allows("delete", undefined)).toBe(true);
  });

  it("without auth, an upstream whose block says drop loses the client's Authorization; the others pass it on", () => {
    expect(setOf("github").dropAuthorization).toBe(true);
    expect(setOf("jira").dropAuthorization).toBe(false);
    expect(setOf("default").auth).toBeUndefined();
  });
});
