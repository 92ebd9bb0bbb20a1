// Which Content-Types a POST's body is parsed as JSON under (server/read-post.ts isJsonContentType): the common
// exact value is taken without the pattern, and everything else is judged by it as before.
import { describe, expect, it } from "vitest";
import { isJsonContentType } from "../../src/server/read-post.js";

describe("isJsonContentType", () => {
  it("accepts JSON types in any case, with parameters, around optional whitespace, and a missing type", () => {
    for (const ct of [
      undefined,
      "application/json",
      "Application/JSON",
      "application/json; charset=utf-8",
      "  application/json ",
      "application/vnd.api+json",
    ]) {
      expect(isJsonContentType(ct), String(ct)).toBe(true);
    }
  });

  it("refuses other types", () => {
    for (const ct of ["", "text/plain", "application/jsonx", "application/x-www-form-urlencoded", "text/json"]) {
      expect(isJsonContentType(ct), ct).toBe(false);
    }
  });
});
