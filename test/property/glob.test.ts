// Properties of the config's glob matcher (config/glob.ts): a glob without wildcards matches its own text and
// nothing else, `*` matches anything, it agrees with a reference regular expression on small alphabets, and its
// time stays within O(name × glob) on patterns built to make a backtracking matcher explode.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { globToRegExp } from "../../src/config/glob.js";
import { anyString } from "../helpers/arbitraries.js";

/** The reference: the same dialect as a RegExp (`*` any run, `?` one UTF-16 unit, the rest literal, whole match). */
function reference(glob: string): RegExp {
  const body = [...glob]
    .map((c) => (c === "*" ? "[\\s\\S]*" : c === "?" ? "[\\s\\S]" : c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")))
    .join("");
  return new RegExp(`^${body}$`);
}

const literal = anyString.map((s) => s.replace(/[*?]/g, ""));

describe("globToRegExp (properties)", () => {
  it("a glob without * or ? matches its own text and no other", () => {
    fc.assert(
      fc.property(literal, anyString, (text, other) => {
        const g = globToRegExp(text);
        expect(g.test(text)).toBe(true);
        expect(g.test(other)).toBe(other === text);
      }),
      { numRuns: 1_000 },
    );
  });

  it("* matches anything, and *x* anything that holds x", () => {
    fc.assert(
      fc.property(anyString, literal, (text, part) => {
        expect(globToRegExp("*").test(text)).toBe(true);
        expect(globToRegExp(`*${part}*`).test(text)).toBe(text.includes(part));
        expect(globToRegExp(`${part}*`).test(text)).toBe(text.startsWith(part));
      }),
      { numRuns: 1_000 },
    );
  });

  it("agrees with the reference on globs and names over a small alphabet", () => {
    const glob = fc.string({ unit: fc.constantFrom("a", "b", "*", "?", "."), maxLength: 10 });
    const name = fc.string({ unit: fc.constantFrom("a", "b", "."), maxLength: 12 });
    fc.assert(
      fc.property(glob, name, (g, n) => {
        expect(globToRegExp(g).test(n)).toBe(reference(g).test(n));
      }),
      { numRuns: 5_000 },
    );
  });

  it("matches adversarial globs against long names in bounded time", () => {
    // a*a*a*…*b against aaaa…: k stars make a backtracking RegExp O(n^k); the walk is O(n × glob).
    const adversarial = fc
      .tuple(fc.integer({ min: 2, max: 40 }), fc.integer({ min: 1_000, max: 4_000 }))
      .map(([stars, n]) => ({ glob: `${"a*".repeat(stars)}b`, name: "a".repeat(n) }));
    fc.assert(
      fc.property(adversarial, ({ glob, name }) => {
        const started = performance.now();
        expect(globToRegExp(glob).test(name)).toBe(false);
        expect(performance.now() - started).toBeLessThan(100);
      }),
      { numRuns: 30 },
    );
  });
});
