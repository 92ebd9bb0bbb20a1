// The opaque cursor of a federated list (src/federation/cursor.ts).
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, MAX_CURSOR_CHARS } from "../../src/federation/cursor.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");

describe("encodeCursor / decodeCursor", () => {
  it("round-trips a member and its cursor, or its first page", () => {
    for (const position of [
      { upstream: "a", cursor: "page-2" },
      { upstream: "my_up-1", cursor: "" },
      { upstream: "b", cursor: "ünïcode/+= ✓" },
      { upstream: "c" },
    ]) {
      const text = encodeCursor(position);
      expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(text)).toEqual(position);
    }
    expect(decodeCursor(encodeCursor({ upstream: "c", cursor: undefined }))).toEqual({ upstream: "c" });
  });

  it("is deterministic", () => {
    expect(encodeCursor({ upstream: "a", cursor: "x" })).toBe(encodeCursor({ upstream: "a", cursor: "x" }));
  });

  it("refuses to encode a bad upstream or a cursor decodeCursor would refuse", () => {
    expect(() => encodeCursor({ upstream: "A" })).toThrow(RangeError);
    expect(() => encodeCursor({ upstream: "a", cursor: "x".repeat(MAX_CURSOR_CHARS) })).toThrow(RangeError);
  });

  it("decodes anything malformed to undefined", () => {
    const valid = encodeCursor({ upstream: "a", cursor: "x" });
    const malformed: unknown[] = [
      "",
      "!!!!",
      `${valid}=`,
      valid + " ",
      valid.slice(0, -1),
      "A".repeat(MAX_CURSOR_CHARS + 4),
      b64("not json"),
      b64("null"),
      b64("[]"),
      b64('"a"'),
      b64("42"),
      b64("{}"),
      b64('{"v":2,"u":"a"}'),
      b64('{"v":"1","u":"a"}'),
      b64('{"v":1}'),
      b64('{"v":1,"u":7}'),
      b64('{"v":1,"u":"Not-A-Name"}'),
      b64('{"v":1,"u":"a","c":5}'),
      b64('{"v":1,"u":"a","c":null}'),
      b64('{"v":1,"u":"a","extra":true}'),
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString("base64url"),
      42,
      undefined,
    ];
    for (const text of malformed) expect(decodeCursor(text as string)).toBeUndefined();
  });

  it("accepts a cursor of exactly the limit and refuses one longer", () => {
    let cursor = "";
    let text = encodeCursor({ upstream: "a", cursor });
    while (text.length < MAX_CURSOR_CHARS - 4) text = encodeCursor({ upstream: "a", cursor: (cursor += "xyz") });
    while (text.length < MAX_CURSOR_CHARS) text = encodeCursor({ upstream: "a", cursor: (cursor += "x") });
    expect(text).toHaveLength(MAX_CURSOR_CHARS);
    expect(decodeCursor(text)).toEqual({ upstream: "a", cursor });
    expect(decodeCursor(text + "A")).toBeUndefined();
  });
});
