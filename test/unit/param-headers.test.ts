import { describe, expect, it } from "vitest";
import { checkParamHeaders, paramHeadersOf } from "../../src/protocol/param-headers.js";

const lookup = (h: Record<string, string>) => (name: string) => h[name];

describe("paramHeadersOf", () => {
  it("finds annotations reached through properties alone, nested ones included", () => {
    const schema = {
      type: "object",
      properties: {
        region: { type: "string", "x-mcp-header": "Region" },
        opts: { type: "object", properties: { dry: { type: "boolean", "x-mcp-header": "Dry-Run" } } },
        list: {
          type: "array",
          items: { type: "object", properties: { x: { type: "string", "x-mcp-header": "Ignored" } } },
        },
      },
    };
    expect(paramHeadersOf(schema)).toEqual([
      { name: "Region", path: ["region"] },
      { name: "Dry-Run", path: ["opts", "dry"] },
    ]);
  });

  it.each([
    ["not a token", { a: { type: "string", "x-mcp-header": "Bad Name" } }],
    ["empty", { a: { type: "string", "x-mcp-header": "" } }],
    [
      "a duplicate ignoring case",
      { a: { type: "string", "x-mcp-header": "R" }, b: { type: "string", "x-mcp-header": "r" } },
    ],
    ["on a number", { a: { type: "number", "x-mcp-header": "N" } }],
    ["on an object", { a: { type: "object", "x-mcp-header": "O" } }],
  ])("rejects a tool whose annotation is %s", (_what, properties) => {
    expect(paramHeadersOf({ type: "object", properties })).toBeUndefined();
  });
});

describe("checkParamHeaders", () => {
  const region = [{ name: "Region", path: ["region"] }];
  const count = [{ name: "Count", path: ["count"] }];
  const flag = [{ name: "Flag", path: ["flag"] }];

  it("accepts matching plain, base64, integer (numerically) and boolean values, and no header for an absent or null argument", () => {
    expect(
      checkParamHeaders(region, { region: "us-west1" }, lookup({ "mcp-param-region": "us-west1" })),
    ).toBeUndefined();
    expect(
      checkParamHeaders(region, { region: " padded " }, lookup({ "mcp-param-region": "=?base64?IHBhZGRlZCA=?=" })),
    ).toBeUndefined();
    expect(checkParamHeaders(count, { count: 42 }, lookup({ "mcp-param-count": "42.0" }))).toBeUndefined();
    expect(checkParamHeaders(flag, { flag: false }, lookup({ "mcp-param-flag": "false" }))).toBeUndefined();
    expect(checkParamHeaders(region, {}, lookup({}))).toBeUndefined();
    expect(checkParamHeaders(region, { region: null }, lookup({}))).toBeUndefined();
  });

  it.each([
    ["mismatch", { region: "a" }, { "mcp-param-region": "b" }],
    ["missing header", { region: "a" }, {}],
    ["header without argument", {}, { "mcp-param-region": "a" }],
    ["control character", { region: "a\u0001" }, { "mcp-param-region": "a\u0001" }],
    ["non-ASCII", { region: "é" }, { "mcp-param-region": "é" }],
    ["bad base64", { region: "Hello" }, { "mcp-param-region": "=?base64?SGVsbG8?=" }],
  ])("refuses a %s with 400 and -32020", (_what, args, headers) => {
    expect(checkParamHeaders(region, args, lookup(headers))).toMatchObject({ status: 400, error: { code: -32020 } });
  });

  it("compares integers numerically, booleans as lowercase words", () => {
    expect(checkParamHeaders(count, { count: 42 }, lookup({ "mcp-param-count": "43" }))).toMatchObject({ status: 400 });
    expect(checkParamHeaders(flag, { flag: true }, lookup({ "mcp-param-flag": "True" }))).toMatchObject({
      status: 400,
    });
  });
});
