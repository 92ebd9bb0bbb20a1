// Properties of the redaction scanner (log/redact.ts): it never throws; a secret planted in a line in any of the
// shapes it knows, among any other words, never shows; redacting twice changes nothing more; and its output is
// bounded by the length it reads.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CUT_MARKER, REDACT_MAX_CHARS, redactArgs, redactLine } from "../../src/log/redact.js";
import { anyString, utf16String } from "../helpers/arbitraries.js";

/** A secret: letters, digits, - and _, with a digit, so no word of the noise below (which has none) holds it. */
const secret = fc
  .tuple(fc.stringMatching(/^[A-Za-z0-9_-]{5,20}$/), fc.integer({ min: 100, max: 999 }))
  .map(([s, n]) => `${s}${n}`);

/** A key that names a secret: one of the names, any case, inside a longer key. */
const secretKey = fc
  .tuple(
    fc.constantFrom("", "db_", "x-", "GITHUB_", "my.", "aws_secret_"),
    fc.mixedCase(
      fc.constantFrom(
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "private_key",
        "passphrase",
        "credential",
        "auth",
        "authorization",
      ),
    ),
    fc.constantFrom("", "_value", "s", "-file"),
  )
  .map(([a, b, c]) => a + b + c);

/** A shape that holds `s`; each returns the text around it. */
const shapes: fc.Arbitrary<(s: string) => string> = fc.oneof(
  fc
    .constantFrom("--password", "--token", "--api-key", "--apikey", "-p", "-k", "--client-secret", "--auth-token")
    .chain((flag) =>
      fc.constantFrom(
        (s: string) => `${flag} ${s}`,
        (s: string) => `${flag}=${s}`,
      ),
    ),
  fc.tuple(secretKey, fc.constantFrom("=", ": ", " = ", " : ", ":", "='", '="', '": "', '":"')).map(([key, sep]) => {
    const open = sep.endsWith("'") ? "'" : sep.endsWith('"') ? '"' : "";
    const lead = sep.startsWith('"') ? '"' : "";
    return (s: string) => `${lead}${key}${sep}${s}${open}`;
  }),
  fc.constantFrom(
    (s: string) => `Bearer ${s}`,
    (s: string) => `bearer ${s}`,
    (s: string) => `Authorization: Bearer ${s}`,
    (s: string) => `authorization=Basic ${s}`,
    (s: string) => `"Authorization": "Bearer ${s}"`,
    (s: string) => `https://user:${s}@example.com/path`,
    (s: string) => `postgres://${s}@db:5432/app`,
    (s: string) => `https://example.com/cb?code=${s}&state=1`,
    (s: string) => `https://example.com/#access_token=${s}`,
    (s: string) => `password='two ${s} words'`,
    (s: string) => `{"token": "${s}", "n": 1}`,
  ),
);

/** Words around the secret: ordinary words, punctuation, keywords the scanner reads, but no digit. */
const noiseWord = fc.oneof(
  fc.stringMatching(/^[a-z]{1,8}$/),
  fc.constantFrom(
    "error:",
    "failed",
    "=",
    ":",
    "-",
    "--verbose",
    "{",
    "}",
    '"',
    "'",
    "(",
    "https://h/x",
    "Bearer",
    "key",
  ),
);
const noise = fc.array(noiseWord, { maxLength: 4 });
const space = fc.constantFrom(" ", "  ", "\t");

describe("redactLine (properties)", () => {
  it("never shows a secret planted in any shape it knows, among any words", () => {
    fc.assert(
      fc.property(secret, shapes, noise, noise, space, (s, shape, before, after, gap) => {
        const line = [...before, shape(s), ...after].join(gap);
        expect(redactLine(line)).not.toContain(s);
      }),
      { numRuns: 5_000 },
    );
  });

  it("an AWS access key id, a JWT or a provider token never shows, wherever it stands", () => {
    const token = fc.oneof(
      fc.tuple(fc.constantFrom("AKIA", "ASIA"), fc.stringMatching(/^[A-Z0-9]{16}$/)).map(([p, r]) => p + r),
      fc
        .tuple(fc.stringMatching(/^[A-Za-z0-9_-]{8,20}$/), fc.stringMatching(/^[A-Za-z0-9_-]{4,20}$/))
        .map(([a, b]) => `eyJ${a}.eyJ${b}.${a}`),
      fc
        .tuple(
          fc.constantFrom("ghp_", "sk-", "xoxb-", "glpat-", "github_pat_"),
          fc.stringMatching(/^[A-Za-z0-9]{12,30}$/),
        )
        .map(([p, r]) => p + r),
    );
    fc.assert(
      fc.property(token, noise, noise, fc.constantFrom("", "(", "=", ":", '"', "/"), (t, before, after, lead) => {
        expect(redactLine([...before, `${lead}${t}`, ...after].join(" "))).not.toContain(t);
      }),
      { numRuns: 2_000 },
    );
  });

  it("never throws, and its output is bounded by what it reads", () => {
    const line = fc.oneof(
      anyString,
      utf16String(),
      fc.string({ unit: fc.oneof(noiseWord, space, fc.constantFrom("@", "?", "#")) }),
    );
    fc.assert(
      fc.property(line, (text) => {
        const out = redactLine(text);
        expect(out.length).toBeLessThanOrEqual(3 * Math.min(text.length, REDACT_MAX_CHARS) + CUT_MARKER.length);
      }),
      { numRuns: 3_000 },
    );
  });

  it("is idempotent: a redacted line redacts to itself", () => {
    const line = fc.oneof(
      anyString,
      fc.tuple(secret, shapes, noise, noise).map(([s, shape, b, a]) => [...b, shape(s), ...a].join(" ")),
      fc.string({ unit: fc.oneof(noiseWord, space, fc.constantFrom("@", "?", "#", "***", "="), secretKey) }),
    );
    fc.assert(
      fc.property(line, (text) => {
        const once = redactLine(text.slice(0, REDACT_MAX_CHARS / 4));
        expect(redactLine(once)).toBe(once);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("redactArgs (properties)", () => {
  it("never shows a secret planted in a command line, never throws, one argument out for each in", () => {
    const args = fc.tuple(secret, fc.array(anyString, { maxLength: 3 }), fc.array(anyString, { maxLength: 3 }));
    const flag = fc.constantFrom("--password", "--token", "--api-key", "-p", "-k", "Authorization:", "Bearer");
    fc.assert(
      fc.property(args, flag, fc.boolean(), ([s, before, after], f, joined) => {
        const argv = [...before, ...(joined ? [`${f}${f.startsWith("-") ? "=" : " "}${s}`] : [f, s]), ...after];
        const out = redactArgs(argv);
        expect(out).toHaveLength(argv.length);
        expect(out.join(" ")).not.toContain(s);
      }),
      { numRuns: 2_000 },
    );
  });
});
