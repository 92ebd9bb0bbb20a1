// The secret shapes log/redact.ts hides in stderr lines and command lines, the words it must leave alone, and the cut
// of a long line. Its time on adversarial lines is held by test/integration/stdio-stderr-flood.test.ts, and its
// properties (never throws, idempotent, bounded) by test/property/redact.test.ts.
import { describe, expect, it } from "vitest";
import { CUT_MARKER, REDACT_MAX_CHARS, redactArgs, redactLine } from "../../src/log/redact.js";

/** Each line with its secrets, which must not be in the redacted line, and what must stay. */
const SHAPES: { line: string; secrets: string[]; kept: string }[] = [
  { line: "mysql -p hunter2 -h db", secrets: ["hunter2"], kept: "mysql -p *** -h db" },
  { line: "run --password hunter2 --verbose", secrets: ["hunter2"], kept: "run --password *** --verbose" },
  { line: "run --password=hunter2", secrets: ["hunter2"], kept: "run --password=***" },
  { line: "run --token tok-1 --token=tok-2", secrets: ["tok-1", "tok-2"], kept: "run --token *** --token=***" },
  { line: "run --api-key k1 --apikey k2 --api_key=k3", secrets: ["k1", "k2", "k3"], kept: "--api_key=***" },
  { line: "curl -k K3Y -X POST", secrets: ["K3Y"], kept: "curl -k *** -X POST" },
  { line: "password=p1 passwd=p2 secret=p3", secrets: ["p1", "p2", "p3"], kept: "password=*** passwd=*** secret=***" },
  { line: "TOKEN: p4, api_key: p5", secrets: ["p4", "p5"], kept: "TOKEN: ***, api_key: ***" },
  { line: "apikey=p6&access_key=p7", secrets: ["p6", "p7"], kept: "apikey=***&access_key=***" },
  { line: "AWS_SECRET_ACCESS_KEY=p8 private_key = p9", secrets: ["p8", "p9"], kept: "private_key = ***" },
  { line: "passphrase: p10; credential=p11; auth=p12", secrets: ["p10", "p11", "p12"], kept: "passphrase: ***;" },
  { line: "db.password : p13 (retrying)", secrets: ["p13"], kept: "db.password : *** (retrying)" },
  { line: 'config {"password":"p14","port":5432}', secrets: ["p14"], kept: '{"password":"***","port":5432}' },
  { line: `config {"token": "two words"}`, secrets: ["two", "words"], kept: `{"token": "***` },
  { line: "secret='a b c' after", secrets: ["a b c", "b c"], kept: "after" },
  {
    line: "id AKIAIOSFODNN7EXAMPLE, ASIA0123456789ABCDEF.",
    secrets: ["IOSFODNN7", "0123456789"],
    kept: "id ***, ***.",
  },
  { line: "Authorization: Bearer abc.def-123", secrets: ["abc.def-123"], kept: "Authorization: Bearer ***" },
  { line: "header authorization=Basic dXNlcjpwYXNz", secrets: ["dXNlcjpwYXNz"], kept: "authorization=Basic ***" },
  { line: '"Authorization": "Bearer t0k3n"', secrets: ["t0k3n"], kept: '"Authorization": "Bearer ***"' },
  { line: "Authorization: Token drf-t0k3n", secrets: ["drf-t0k3n"], kept: "Authorization: Token ***" },
  { line: "sent bearer xyz987 upstream", secrets: ["xyz987"], kept: "sent bearer *** upstream" },
  { line: "--header=Authorization:Basic dXNlcjpwYXNz", secrets: ["dXNlcjpwYXNz"], kept: "Authorization:Basic ***" },
  {
    line: "connect https://user:pa55@db.example:5432/app?sslkey=q1#f and postgres://u@h/x",
    secrets: ["user", "pa55", "sslkey", "q1"],
    kept: "connect https://***@db.example:5432/app?***#*** and postgres://***@h/x",
  },
  { line: "url=https://a:b@c@host/p", secrets: ["a:b", "b@c"], kept: "url=https://***@host/p" },
  {
    line: "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl tok ghp_abcdefghijklmnopqrstuv",
    secrets: ["eyJzdWIiOiIxIn0", "ghp_abcdefghijklmnopqrstuv"],
    kept: "jwt *** tok ***",
  },
];

describe("redactLine", () => {
  it.each(SHAPES)("hides the secret in: $line", ({ line, secrets, kept }) => {
    const shown = redactLine(line);
    for (const secret of secrets) expect(shown).not.toContain(secret);
    expect(shown).toContain(kept);
  });

  it("leaves lines without secrets as they are", () => {
    for (const line of [
      "Server started on port 3000",
      "listening at http://127.0.0.1:3000/mcp",
      "tests passed: 12, failed: 0",
      "npx -y @modelcontextprotocol/server-everything",
      "AKIAIOSFODNN7EXAMPLEXYZ is too long to be a key id",
      "",
    ])
      expect(redactLine(line)).toBe(line);
  });

  it("cuts a long line before reading it, at a space near the limit, and says so", () => {
    const words = Array.from({ length: 1_000 }, (_, i) => `w${i}`).join(" ");
    const shown = redactLine(words);
    expect(shown.endsWith(CUT_MARKER)).toBe(true);
    expect(shown.length).toBeLessThanOrEqual(REDACT_MAX_CHARS + CUT_MARKER.length);
    expect(shown.length).toBeGreaterThan(REDACT_MAX_CHARS - 256);
    // Cut at a space: the last word shown is whole.
    const last = shown.slice(0, -CUT_MARKER.length).split(" ").at(-1) ?? "";
    expect(words.split(" ")).toContain(last);
    expect(redactLine("x".repeat(10_000))).toBe(`${"x".repeat(REDACT_MAX_CHARS)}${CUT_MARKER}`);
  });
});

describe("redactArgs", () => {
  it("masks the argument after a secret flag, whole, spaces and all", () => {
    expect(redactArgs(["srv", "--api-key", "k 1 2", "-p", "pw", "--port", "8080"])).toEqual([
      "srv",
      "--api-key",
      "***",
      "-p",
      "***",
      "--port",
      "8080",
    ]);
  });
  it("reads each argument as a line: NAME=value, headers, URLs", () => {
    expect(
      redactArgs(["GITHUB_TOKEN=ghp_x", "Authorization: Bearer s3cr3t", "https://u:p@h.example/x?key=1", "a b"]),
    ).toEqual(["GITHUB_TOKEN=***", "Authorization: Bearer ***", "https://***@h.example/x?***", "a b"]);
  });
  it("a flag masked as a value still announces the next one", () => {
    expect(redactArgs(["--password", "--token", "X"])).toEqual(["--password", "***", "***"]);
  });
  it("carries a header's value over to the next argument", () => {
    expect(redactArgs(["Authorization:", "Bearer", "abc"])).toEqual(["Authorization:", "Bearer", "***"]);
  });
});
