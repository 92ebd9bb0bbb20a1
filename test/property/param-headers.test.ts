// Properties of the Mcp-Param-* checks (protocol/param-headers.ts): a tool's headers sent as a client sends them are
// accepted; for any schema, arguments and headers the check answers without throwing, and a refusal is a -32020
// header mismatch with status 400; and it takes time linear in the headers' length.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HEADER_MISMATCH } from "../../src/protocol/errors.js";
import { checkParamHeaders, paramHeadersOf, type ParamHeader } from "../../src/protocol/param-headers.js";
import { anyString } from "../helpers/arbitraries.js";

/** A tool's inputSchema with x-mcp-header annotations on primitive properties, some nested. */
const schema = fc
  .uniqueArray(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,8}$/), {
    maxLength: 4,
    selector: (s) => s.toLowerCase(),
  })
  .chain((names) =>
    fc.tuple(
      fc.constant(names),
      fc.array(fc.constantFrom("string", "integer", "boolean"), { minLength: names.length, maxLength: names.length }),
      fc.array(fc.boolean(), { minLength: names.length, maxLength: names.length }),
    ),
  )
  .map(([names, types, nested]) => {
    const properties: Record<string, unknown> = {};
    names.forEach((name, i) => {
      const prop = { type: types[i], "x-mcp-header": name };
      if (nested[i]) properties[`o${i}`] = { type: "object", properties: { [`p${i}`]: prop } };
      else properties[`p${i}`] = prop;
    });
    return { schema: { type: "object", properties }, types };
  });

/** An argument for a property of `type`, or absent/null. */
function argument(type: string): fc.Arbitrary<unknown> {
  const value =
    type === "string"
      ? fc.string({ unit: "binary", maxLength: 12 })
      : type === "integer"
        ? fc.oneof(fc.integer(), fc.constantFrom(0, -0, 1e21, -1e21, 2 ** 53))
        : fc.boolean();
  return fc.oneof({ weight: 4, arbitrary: value }, fc.constant(undefined), fc.constant(null));
}

/** The header a client sends for `value`: plain when it may be, else the base64 sentinel; surrounding OWS allowed. */
function clientHeader(value: unknown, base64: boolean, ows: string): string {
  const text = String(value);
  const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(text) && !text.startsWith("=?base64?");
  return ows + (plain && !base64 ? text : `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`) + ows;
}

function argsFor(annotations: readonly ParamHeader[], values: readonly unknown[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  annotations.forEach(({ path }, i) => {
    if (values[i] === undefined) return;
    let at = args;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[path[path.length - 1] as string] = values[i];
  });
  return args;
}

const withValues = schema.chain(({ schema: s, types }) =>
  fc.tuple(fc.constant(s), fc.tuple(...types.map(argument)), fc.boolean(), fc.constantFrom("", " ", "\t ")),
);

describe("paramHeadersOf / checkParamHeaders (properties)", () => {
  it("headers sent as a client sends them are accepted", () => {
    fc.assert(
      fc.property(withValues, ([s, values, base64, ows]) => {
        const annotations = paramHeadersOf(s);
        expect(annotations).toBeDefined();
        if (!annotations) return;
        const headers = new Map<string, string>();
        annotations.forEach(({ name }, i) => {
          const v = values[i];
          if (v !== undefined && v !== null)
            headers.set(`mcp-param-${name.toLowerCase()}`, clientHeader(v, base64, ows));
        });
        expect(checkParamHeaders(annotations, argsFor(annotations, values), (n) => headers.get(n))).toBeUndefined();
      }),
      { numRuns: 1_000 },
    );
  });

  it("any schema, arguments and headers: no throw, and a refusal is a -32020 header mismatch with status 400", () => {
    const headerMap = fc.dictionary(
      fc.constantFrom("mcp-param-a", "mcp-param-b", "mcp-param-p0", "mcp-param-x"),
      fc.oneof(anyString, fc.constantFrom("=?base64?", "=?base64?AA==?=", "=?base64?/w==?=", " 1 ", "true", "1e3")),
      { maxKeys: 4 },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          schema.map((x) => x.schema),
        ),
        fc.jsonValue(),
        headerMap,
        (s, args, headers) => {
          const annotations = paramHeadersOf(s);
          if (annotations === undefined) return;
          const fault = checkParamHeaders(annotations, args, (n) => headers[n]);
          if (fault === undefined) return;
          expect(fault.status).toBe(400);
          expect(fault.error.code).toBe(HEADER_MISMATCH);
          expect(fault.error.data).toMatchObject({ reason: "header_mismatch" });
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("takes time linear in the headers: a 16 KiB value built to backtrack is checked in ms", () => {
    const big = fc
      .tuple(fc.constantFrom(" ", "\t", " \t"), fc.constantFrom("x", "=?base64?"), fc.constantFrom("x", "?="))
      .map(([run, head, tail]) => head + run.repeat(Math.floor(16_384 / run.length)) + tail);
    const annotations: ParamHeader[] = [{ name: "A", path: ["a"] }];
    fc.assert(
      fc.property(big, (value) => {
        const started = performance.now();
        const fault = checkParamHeaders(annotations, { a: "x" }, () => value);
        expect(performance.now() - started).toBeLessThan(50);
        expect(fault?.error.code).toBe(HEADER_MISMATCH);
      }),
      { numRuns: 20 },
    );
  });
});
