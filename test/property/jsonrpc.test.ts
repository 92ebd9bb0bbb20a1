// Properties of parseJsonRpcBody (protocol/jsonrpc.ts): any bytes give a verdict without throwing, a rejection is
// always a -32700 parse error, and a JSON body reads back as the value it encodes, with its id and method.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSONRPC_PARSE_ERROR } from "../../src/protocol/errors.js";
import { parseJsonRpcBody } from "../../src/protocol/jsonrpc.js";

const enc = new TextEncoder();

/** JSON-RPC-like messages: records with an id and a method of any type, among other JSON values. */
const message = fc.oneof(
  fc.jsonValue(),
  fc.record(
    { jsonrpc: fc.constantFrom("2.0", "1.0"), id: fc.jsonValue(), method: fc.jsonValue(), params: fc.jsonValue() },
    { requiredKeys: [] },
  ),
);

describe("parseJsonRpcBody (properties)", () => {
  it("any bytes: a verdict, never a throw; a rejection is a -32700 parse error", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.string().map((s) => enc.encode(s)),
        ),
        (body) => {
          const parsed = parseJsonRpcBody(body);
          if (parsed.ok) return;
          expect(parsed.error.code).toBe(JSONRPC_PARSE_ERROR);
          expect(parsed.error.message).toMatch(/^Parse error: /);
          expect(parsed.error.data).toMatchObject({ reason: "parse_error" });
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("a JSON body, with or without a BOM, reads back as its value, with its id and method", () => {
    fc.assert(
      fc.property(message, fc.boolean(), (value, bom) => {
        const text = JSON.stringify(value);
        const body = enc.encode(bom ? `\ufeff${text}` : text);
        // Read from the middle of a larger buffer, as a pooled Buffer is.
        const pooled = new Uint8Array(body.length + 8);
        pooled.set(body, 4);
        const parsed = parseJsonRpcBody(pooled.subarray(4, 4 + body.length));
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const expected: unknown = JSON.parse(text);
        expect(parsed.message).toEqual(expected);
        const record = typeof expected === "object" && expected !== null && !Array.isArray(expected);
        const id = record ? (expected as { id?: unknown }).id : undefined;
        expect(parsed.id).toBe(typeof id === "string" || typeof id === "number" ? id : null);
        const method = record ? (expected as { method?: unknown }).method : undefined;
        expect(parsed.method).toBe(typeof method === "string" ? method : undefined);
      }),
      { numRuns: 1_000 },
    );
  });
});
