// Prefixed tool and prompt names for the federated endpoint (src/federation/names.ts).
import { describe, expect, it } from "vitest";
import { federatedName, MAX_NAME_LENGTH, NameIndex, splitFederatedName } from "../../src/federation/names.js";

const VALID = /^[A-Za-z0-9_.-]{1,128}$/;

describe("federatedName", () => {
  it("prefixes every name with its upstream, so two upstreams' echo stay apart", () => {
    expect(federatedName("a", "echo")).toBe("a__echo");
    expect(federatedName("b", "echo")).toBe("b__echo");
    expect(federatedName("my-up_1", "get.thing-v2")).toBe("my-up_1__get.thing-v2");
  });

  it("keeps a name of exactly 128 characters and shortens a longer one to 128, with the prefix kept", () => {
    const fits = "x".repeat(MAX_NAME_LENGTH - 3);
    expect(federatedName("a", fits)).toBe(`a__${fits}`);
    const long = federatedName("a", fits + "y");
    expect(long).toHaveLength(MAX_NAME_LENGTH);
    expect(long).toMatch(VALID);
    expect(long).toMatch(/^a__x+_[a-z2-7]{8}$/);
  });

  it("replaces characters outside the allowed set and appends a hash", () => {
    const name = federatedName("files", "read file/ü");
    expect(name).toMatch(/^files__read_file___[a-z2-7]{8}$/);
    expect(name).toMatch(VALID);
  });

  it("is deterministic, and two names that sanitize alike still differ", () => {
    expect(federatedName("a", "read file")).toBe(federatedName("a", "read file"));
    expect(federatedName("a", "read file")).not.toBe(federatedName("a", "read/file"));
    const base = "z".repeat(200);
    expect(federatedName("a", base + "1")).not.toBe(federatedName("a", base + "2"));
    expect(federatedName("a", base)).not.toBe(federatedName("b", base).replace(/^b/, "a"));
  });

  it("always gives a valid name, even for an empty or very long upstream name", () => {
    const up = "u".repeat(32);
    for (const n of ["", " ", "ä".repeat(300), "ok", "a".repeat(500)]) {
      const f = federatedName(up, n);
      expect(f).toMatch(VALID);
      expect(f.startsWith(`${up}__`)).toBe(true);
    }
  });

  it("refuses an upstream that is not an upstream name", () => {
    expect(() => federatedName("Bad", "x")).toThrow(RangeError);
    expect(() => federatedName("", "x")).toThrow(RangeError);
  });
});

describe("splitFederatedName", () => {
  it("finds the member by its prefix", () => {
    expect(splitFederatedName("b__echo", ["a", "b"])).toEqual({ upstream: "b", rest: "echo" });
    expect(splitFederatedName("c__echo", ["a", "b"])).toBeUndefined();
    expect(splitFederatedName("aecho", ["a"])).toBeUndefined();
  });

  it("tries the longest member first when one member's name starts another's", () => {
    expect(splitFederatedName("a_b__echo", ["a", "a_b"])).toEqual({ upstream: "a_b", rest: "echo" });
    expect(splitFederatedName("a__b__echo", ["a", "a_b"])).toEqual({ upstream: "a", rest: "b__echo" });
    expect(splitFederatedName("a___echo", ["a", "a_"])).toEqual({ upstream: "a_", rest: "echo" });
    expect(splitFederatedName("a___echo", ["a_", "a"])).toEqual({ upstream: "a_", rest: "echo" });
  });
});

describe("NameIndex", () => {
  it("routes plain and shortened names back to their upstream and original name", () => {
    const long = "t".repeat(150);
    const index = new NameIndex([
      { upstream: "a", original: "echo" },
      { upstream: "b", original: "echo" },
      { upstream: "b", original: long },
      { upstream: "b", original: "with space" },
    ]);
    expect(index.size).toBe(4);
    expect(index.resolve("a__echo")).toEqual({ upstream: "a", original: "echo" });
    expect(index.resolve("b__echo")).toEqual({ upstream: "b", original: "echo" });
    expect(index.resolve(federatedName("b", long))).toEqual({ upstream: "b", original: long });
    expect(index.resolve(federatedName("b", "with space"))).toEqual({ upstream: "b", original: "with space" });
    expect(index.resolve("c__echo")).toBeUndefined();
    expect(index.collisions).toEqual([]);
  });

  it("keeps the first of two entries with the same federated name and reports the other", () => {
    const index = new NameIndex([
      { upstream: "a__b", original: "x" },
      { upstream: "a", original: "b__x" },
      { upstream: "a__b", original: "x" },
    ]);
    expect(index.resolve("a__b__x")).toEqual({ upstream: "a__b", original: "x" });
    expect(index.collisions).toEqual([{ federated: "a__b__x", upstream: "a", original: "b__x" }]);
  });
});
