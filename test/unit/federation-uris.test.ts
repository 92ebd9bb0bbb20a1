// Resource URIs across the members of a federated endpoint (src/federation/uris.ts).
import { describe, expect, it } from "vitest";
import { parseRewrittenUri, rewriteUri, UriIndex } from "../../src/federation/uris.js";

describe("rewriteUri / parseRewrittenUri", () => {
  it("round-trips an upstream and its URI", () => {
    for (const uri of ["file:///tmp/a b.txt", "mcp-fed://x/y", "", "ü?q=1&r=%20#f"]) {
      const rewritten = rewriteUri("b", uri);
      expect(rewritten.startsWith("mcp-fed://b/")).toBe(true);
      expect(parseRewrittenUri(rewritten)).toEqual({ upstream: "b", uri });
    }
    expect(rewriteUri("b", "file:///a")).toBe("mcp-fed://b/file%3A%2F%2F%2Fa");
  });

  it("refuses what rewriteUri did not make", () => {
    for (const uri of [
      "file:///a",
      "mcp-fed://b",
      "mcp-fed://B/x",
      "mcp-fed:///x",
      "mcp-fed://b/%E0%A4%A",
      "mcp-fed://b/file%3a%2F%2F%2Fa",
      "mcp-fed://b/a/b",
    ]) {
      expect(parseRewrittenUri(uri)).toBeUndefined();
    }
    expect(() => rewriteUri("Bad", "x")).toThrow(RangeError);
  });
});

describe("UriIndex", () => {
  const index = new UriIndex([
    { upstream: "a", uris: ["file:///shared", "file:///only-a"] },
    { upstream: "b", uris: ["file:///shared", "file:///only-b", "file:///only-b"] },
    { upstream: "c", uris: ["file:///shared"] },
  ]);

  it("keeps unique URIs as given and routes them to their upstream", () => {
    expect(index.clientUri("a", "file:///only-a")).toBe("file:///only-a");
    expect(index.clientUri("b", "file:///only-b")).toBe("file:///only-b");
    expect(index.route("file:///only-a")).toEqual({ upstream: "a", uri: "file:///only-a" });
    expect(index.route("file:///only-b")).toEqual({ upstream: "b", uri: "file:///only-b" });
  });

  it("leaves a shared URI to the first member and rewrites it for the later ones, each readable", () => {
    expect(index.clientUri("a", "file:///shared")).toBe("file:///shared");
    const forB = index.clientUri("b", "file:///shared");
    const forC = index.clientUri("c", "file:///shared");
    expect(forB).toBe(rewriteUri("b", "file:///shared"));
    expect(forC).toBe(rewriteUri("c", "file:///shared"));
    expect(index.route("file:///shared")).toEqual({ upstream: "a", uri: "file:///shared" });
    expect(index.route(forB ?? "")).toEqual({ upstream: "b", uri: "file:///shared" });
    expect(index.route(forC ?? "")).toEqual({ upstream: "c", uri: "file:///shared" });
    expect(index.collisions).toEqual([]);
  });

  it("routes a rewritten URI naming a member even when the last list lacked it, and nothing else", () => {
    expect(index.route(rewriteUri("b", "file:///new"))).toEqual({ upstream: "b", uri: "file:///new" });
    expect(index.route(rewriteUri("zz", "file:///new"))).toBeUndefined();
    expect(index.route("file:///unknown")).toBeUndefined();
    expect(index.clientUri("a", "file:///only-b")).toBeUndefined();
    expect(index.clientUri("zz", "file:///shared")).toBeUndefined();
  });

  it("rewrites a member's own URI of the rewritten form under that member, so it takes no other's place", () => {
    const rewritten = rewriteUri("b", "file:///x");
    const index = new UriIndex([
      { upstream: "a", uris: ["file:///x", rewritten] },
      { upstream: "b", uris: ["file:///x"] },
    ]);
    // a's URI naming b leads back to a; b's clashing file:///x keeps the rewritten URI that names it.
    const shownForA = index.clientUri("a", rewritten);
    expect(shownForA).toBe(rewriteUri("a", rewritten));
    expect(index.route(shownForA as string)).toEqual({ upstream: "a", uri: rewritten });
    expect(index.clientUri("b", "file:///x")).toBe(rewritten);
    expect(index.route(rewritten)).toEqual({ upstream: "b", uri: "file:///x" });
    expect(index.collisions).toEqual([]);
  });

  it("leaves out a clashing URI that cannot be rewritten (a lone surrogate)", () => {
    const index = new UriIndex([
      { upstream: "a", uris: ["mem://\ud800"] },
      { upstream: "b", uris: ["mem://\ud800"] },
    ]);
    expect(index.route("mem://\ud800")).toEqual({ upstream: "a", uri: "mem://\ud800" });
    expect(index.clientUri("b", "mem://\ud800")).toBeUndefined();
    expect(index.collisions).toEqual([{ upstream: "b", uri: "mem://\ud800" }]);
  });
});
