// "did you mean": the edit distance, the closest known key with its cutoff, and the keys the schema knows at a path.
import { describe, expect, it } from "vitest";
import { closestKey, editDistance, knownKeysAt } from "../../src/config/suggest.js";
import { ConfigError, gatewayConfigSchema, parseConfig } from "../../src/index.js";

function problemsOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("editDistance (optimal string alignment)", () => {
  it.each([
    ["port", "port", 0],
    ["prot", "port", 1], // a swap of two neighbours is one edit
    ["jwksUri", "jwksUrl", 1],
    ["thresholdMs", "threshold", 2],
    ["", "abc", 3],
    ["abc", "", 3],
    ["kitten", "sitting", 3],
    ["ca", "abc", 3], // OSA, not full Damerau–Levenshtein (which says 2): a swapped pair is not edited again
  ])("%j → %j is %i", (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });
});

describe("closestKey", () => {
  const jwt = knownKeysAt(gatewayConfigSchema, ["auth", "jwt"]);

  it("finds the key meant, ignoring case", () => {
    expect(closestKey("jwksUri", jwt)).toBe("jwksUrl");
    expect(closestKey("JWKSURL", jwt)).toBe("jwksUrl");
    expect(closestKey("isuer", jwt)).toBe("issuer");
    expect(closestKey("audiance", jwt)).toBe("audience");
  });

  it("suggests nothing when no key is within a third of the name (at least 1, at most 3 edits)", () => {
    expect(closestKey("format", ["level", "access"])).toBeUndefined();
    // Two letters allow one edit: "ab" is 1 from "ac" but 2 from "ba c".
    expect(closestKey("ab", ["ac"])).toBe("ac");
    expect(closestKey("ab", ["xy"])).toBeUndefined();
    // A long name allows at most 3 edits.
    expect(closestKey("maxSessionsPerCallerXXXX", ["maxSessionsPerCaller"])).toBeUndefined();
    expect(closestKey("maxSessionsPerCallerXXX", ["maxSessionsPerCaller"])).toBe("maxSessionsPerCaller");
  });

  it("prefers the nearest key, and the schema's first on a tie", () => {
    expect(closestKey("hots", ["post", "host"])).toBe("host");
    expect(closestKey("bc", ["ac", "bd"])).toBe("ac");
  });
});

describe("knownKeysAt", () => {
  it("walks objects, records (any name), arrays (any index) and wrappers (optional, default, prefault)", () => {
    expect(knownKeysAt(gatewayConfigSchema, [])).toEqual(expect.arrayContaining(["upstream", "upstreams", "tasks"]));
    expect(knownKeysAt(gatewayConfigSchema, ["server"])).toContain("port");
    expect(knownKeysAt(gatewayConfigSchema, ["upstreams", "github"])).toEqual(
      expect.arrayContaining(["url", "headers", "tasks", "access", "auth"]),
    );
    expect(knownKeysAt(gatewayConfigSchema, ["upstreams", "github", "tasks", "rules", 0])).toContain("tool");
    expect(knownKeysAt(gatewayConfigSchema, ["federated", "all"])).toEqual(["upstreams", "tools"]);
    expect(knownKeysAt(gatewayConfigSchema, ["limits", "rules", 3])).toEqual(
      expect.arrayContaining(["requests", "perMs"]),
    );
  });

  it("knows no keys where the path leads to no object", () => {
    expect(knownKeysAt(gatewayConfigSchema, ["server", "port"])).toEqual([]);
    expect(knownKeysAt(gatewayConfigSchema, ["nothing", "here"])).toEqual([]);
  });
});

describe("unknown fields in the schema's problems", () => {
  const upstream = { url: "http://127.0.0.1:1/mcp" };

  it("say the closest known field at that path, as the input wrote its section", () => {
    expect(
      problemsOf({
        upstream,
        auth: { jwt: { jwksUri: "https://auth.example.com/jwks", issuer: "i", audience: "a" } },
      }),
    ).toContain('auth.jwt: unknown field(s) "jwksUri" (did you mean "jwksUrl"?)');
    expect(problemsOf({ upstream, upstreams: { gh: { url: upstream.url, Headers: {} } } })).toEqual([
      'upstreams.gh: unknown field(s) "Headers" (did you mean "headers"?)',
    ]);
    expect(problemsOf({ upstream, federated: { all: { upstream: ["x"] } } })).toContain(
      'federated.all: unknown field(s) "upstream" (did you mean "upstreams"?)',
    );
  });

  it("give each unknown key its own suggestion, or none", () => {
    expect(problemsOf({ upstream, tasks: { treshold: 1, colour: "red", thresholdms: 2 } })).toEqual([
      'tasks: unknown field(s) "treshold", "colour", "thresholdms" (did you mean "thresholdMs"?)',
    ]);
  });
});
