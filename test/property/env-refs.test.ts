// Properties of ${VAR} expansion in a config file's header values (config/env-refs.ts): text escaped as the file
// would write it ($${ for a literal ${) expands back to itself; set variables expand to their values; an unset
// variable or a stray ${ is reported by name, never with a value or the header's own text; nothing else throws.
// (A literal "$" right before a reference cannot be written: "$${X}" is the literal text ${X}.)
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { expandHeaderRefs } from "../../src/config/env-refs.js";
import { ConfigError } from "../../src/config/validate.js";
import { anyString } from "../helpers/arbitraries.js";

/** A header value as a config file writes literal text: every ${ as $${. */
function escape(text: string): string {
  // A function, not "$${": in a replacement string "$$" stands for one "$".
  return text.replaceAll("${", () => "$${");
}

const varName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/);

/** Parts of a header value: literal text (around $ and {), or a reference to one of the variables. */
const part = fc.oneof(
  { weight: 3, arbitrary: fc.oneof(anyString, fc.constantFrom("$", "{", "}", "$$", "${", "$${", "}$")) },
  varName.map((name) => ({ ref: name })),
);

function headersOf(value: string): Record<string, unknown> {
  return { upstream: { url: "https://example.com/mcp", headers: { authorization: value } } };
}

/** Text with many $, { and } among other characters. */
const text = fc.oneof(
  anyString,
  fc.string({ unit: fc.oneof(fc.constantFrom("$", "{", "}", "${", "$${"), fc.string({ maxLength: 2 })) }),
);

describe("expandHeaderRefs (properties)", () => {
  it("escaped text expands back to itself (the round trip of $${)", () => {
    fc.assert(
      fc.property(text, (text) => {
        const out = expandHeaderRefs(headersOf(escape(text)), {});
        expect((out.upstream as { headers: { authorization: string } }).headers.authorization).toBe(text);
      }),
      { numRuns: 2_000 },
    );
  });

  it("references expand to their variables' values, literal parts stay as written", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 8 }), fc.dictionary(varName, anyString), (parts, env) => {
        // A "$" right before a reference would read as $${ (a literal ${): the file cannot say that, so the literal
        // text before a reference is generated without one at its end.
        const segments: (string | { ref: string })[] = [];
        for (const p of parts) {
          const last = segments[segments.length - 1];
          if (typeof p === "string") {
            if (typeof last === "string") segments[segments.length - 1] = last + p;
            else segments.push(p);
          } else {
            if (typeof last === "string") segments[segments.length - 1] = last.replace(/\$+$/, "");
            segments.push(p);
          }
        }
        const written = segments.map((p) => (typeof p === "string" ? escape(p) : `\${${p.ref}}`)).join("");
        const unset = parts.flatMap((p) => (typeof p === "string" || p.ref in env ? [] : [p.ref]));
        let out: Record<string, unknown>;
        try {
          out = expandHeaderRefs(headersOf(written), env);
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          const problems = (err as ConfigError).problems;
          // Each problem names the field and an unset variable, never a value or the text around it.
          expect(new Set(problems)).toEqual(
            new Set(unset.map((name) => `upstream.headers.authorization: names \${${name}}, which is not set`)),
          );
          return;
        }
        expect(unset).toEqual([]);
        const expected = segments.map((p) => (typeof p === "string" ? p : (env[p.ref] as string))).join("");
        expect((out.upstream as { headers: { authorization: string } }).headers.authorization).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it("a ${ that is not ${NAME} is reported by its place, not its text", () => {
    fc.assert(
      fc.property(
        anyString,
        fc.constantFrom("${", "${1X}", "${a-b}", "${ X}", "${X"),
        anyString,
        (before, bad, after) => {
          const written = `${escape(before.replace(/\$+$/, ""))}${bad} ${escape(after)}`;
          expect(() => expandHeaderRefs(headersOf(written), {})).toThrow(ConfigError);
          try {
            expandHeaderRefs(headersOf(written), {});
          } catch (err) {
            for (const problem of (err as ConfigError).problems) {
              expect(problem).toMatch(/^upstream\.headers\.authorization: has a \$\{ at character \d+ that is not/);
              if (before.length > 3) expect(problem).not.toContain(before);
            }
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("any settings: an expanded copy or a ConfigError, never another throw, and the input unchanged", () => {
    const settings = fc.oneof(
      fc.dictionary(fc.constantFrom("upstream", "upstreams", "server", "__proto__"), fc.jsonValue()),
      fc.record({
        upstreams: fc.dictionary(
          fc.oneof(fc.string({ maxLength: 6 }), fc.constant("__proto__")),
          fc.oneof(
            fc.jsonValue(),
            fc.record({ headers: fc.dictionary(fc.string(), fc.oneof(anyString, fc.jsonValue())) }),
          ),
        ),
      }),
    );
    fc.assert(
      fc.property(settings, fc.dictionary(varName, anyString), (file, env) => {
        const before = JSON.stringify(file);
        try {
          expandHeaderRefs(file, env);
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
        }
        expect(JSON.stringify(file)).toBe(before);
      }),
      { numRuns: 1_000 },
    );
  });
});
