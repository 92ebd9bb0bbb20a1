import { describe, expect, it } from "vitest";
import { JSONRPC_PARSE_ERROR } from "../../src/protocol/errors.js";
import { errorResponse, MAX_JSON_DEPTH, parseJsonRpcBody, type ParsedBody } from "../../src/protocol/jsonrpc.js";

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

function expectOk(parsed: ParsedBody): Extract<ParsedBody, { ok: true }> {
  if (!parsed.ok) throw new Error(`expected ok, got ${JSON.stringify(parsed.error)}`);
  return parsed;
}

function expectParseError(parsed: ParsedBody): void {
  expect(parsed.ok).toBe(false);
  if (parsed.ok) return;
  expect(parsed.error.code).toBe(JSONRPC_PARSE_ERROR);
  expect(parsed.error.code).toBe(-32700);
  expect(parsed.error.message).toMatch(/^Parse error/);
}

describe("parseJsonRpcBody", () => {
  it("parses a request: message, numeric id and method", () => {
    const message = {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "hé ✓" } },
    };
    const parsed = expectOk(parseJsonRpcBody(utf8(JSON.stringify(message))));
    expect(parsed.message).toEqual(message);
    expect(parsed.id).toBe(7);
    expect(parsed.method).toBe("tools/call");
  });

  it("keeps string ids, and id 0 and empty-string ids as they are", () => {
    expect(expectOk(parseJsonRpcBody(utf8('{"jsonrpc":"2.0","id":"abc-1","method":"ping"}'))).id).toBe("abc-1");
    expect(expectOk(parseJsonRpcBody(utf8('{"jsonrpc":"2.0","id":0,"method":"ping"}'))).id).toBe(0);
    expect(expectOk(parseJsonRpcBody(utf8('{"jsonrpc":"2.0","id":"","method":"ping"}'))).id).toBe("");
  });

  it("gives a notification (no id) the id null", () => {
    const parsed = expectOk(parseJsonRpcBody(utf8('{"jsonrpc":"2.0","method":"notifications/initialized"}')));
    expect(parsed.id).toBeNull();
    expect(parsed.method).toBe("notifications/initialized");
  });

  it("treats ids that are neither string nor number as null", () => {
    for (const id of ["null", "true", "{}", "[1]"]) {
      const parsed = expectOk(parseJsonRpcBody(utf8(`{"jsonrpc":"2.0","id":${id},"method":"m"}`)));
      expect(parsed.id).toBeNull();
    }
  });

  it("accepts a response (result, no method) and leaves its shape to the upstream", () => {
    const parsed = expectOk(parseJsonRpcBody(utf8('{"jsonrpc":"2.0","id":"srv-3","result":{"action":"accept"}}')));
    expect(parsed.id).toBe("srv-3");
    expect(parsed.method).toBeUndefined();
  });

  it("passes a batch array through with id null and no method", () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", method: "notifications/initialized" },
    ];
    const parsed = expectOk(parseJsonRpcBody(utf8(JSON.stringify(batch))));
    expect(parsed.message).toEqual(batch);
    expect(parsed.id).toBeNull();
    expect(parsed.method).toBeUndefined();
  });

  it("passes well-formed JSON of any shape (shape errors are the upstream's)", () => {
    for (const text of ["null", "42", '"x"', "{}", '{"method":7}']) {
      const parsed = expectOk(parseJsonRpcBody(utf8(text)));
      expect(parsed.id).toBeNull();
      expect(parsed.method).toBeUndefined();
    }
  });

  it.each([
    ["truncated object", '{"jsonrpc":"2.0","id":1,"method":"ping"'],
    ["trailing comma", '{"jsonrpc":"2.0","id":1,}'],
    ["single quotes", "{'jsonrpc':'2.0'}"],
    ["bare word", "hello"],
    ["empty body", ""],
    ["whitespace only", "  \n\t"],
    ["two values", '{"a":1}{"b":2}'],
  ])("answers -32700 for malformed JSON: %s", (_label, text) => {
    expectParseError(parseJsonRpcBody(utf8(text)));
  });

  it("answers -32700 for non-UTF-8 garbage", () => {
    expectParseError(parseJsonRpcBody(new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x7b])));
    expectParseError(parseJsonRpcBody(Uint8Array.from({ length: 256 }, (_, i) => (i * 37 + 11) & 0xff)));
  });

  it("accepts a body that starts with a UTF-8 byte order mark, as the MCP SDK's own parser does", () => {
    // RFC 8259 §8.1 lets parsers ignore a BOM; the SDK decodes bodies with
    // TextDecoder, which drops it. Rejecting it here would make the gateway
    // answer -32700 where a direct connection succeeds.
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('{"jsonrpc":"2.0","id":9,"method":"ping"}'),
    ]);
    const parsed = expectOk(parseJsonRpcBody(body));
    expect(parsed.id).toBe(9);
    expect(parsed.method).toBe("ping");
  });

  it("reads only the view it is given, not the whole underlying buffer", () => {
    const whole = utf8('garbage{"jsonrpc":"2.0","id":5,"method":"ping"}garbage');
    const view = whole.subarray(7, whole.byteLength - 7);
    const parsed = expectOk(parseJsonRpcBody(view));
    expect(parsed.id).toBe(5);
    expect(parsed.method).toBe("ping");
    // A Buffer (as Node reads bodies) that is a slice of a larger one: only its own bytes.
    const slice = Buffer.from(whole).subarray(7, whole.byteLength - 7);
    expect(expectOk(parseJsonRpcBody(slice)).id).toBe(5);
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels before JSON.parse, and accepts it at the limit`, () => {
    const nested = (depth: number, open: string, close: string) =>
      utf8(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":${open.repeat(depth - 2)}1${close.repeat(depth - 2)}}}}`,
      );
    // The envelope itself is two levels: the message and params, then arguments.
    expectOk(parseJsonRpcBody(nested(MAX_JSON_DEPTH - 1, "[", "]")));
    expectOk(parseJsonRpcBody(nested(MAX_JSON_DEPTH - 1, '{"a":', "}")));
    for (const [open, close] of [
      ["[", "]"],
      ['{"a":', "}"],
    ] as const) {
      const parsed = parseJsonRpcBody(nested(MAX_JSON_DEPTH + 1, open, close));
      expectParseError(parsed);
      if (!parsed.ok) expect(parsed.error.message).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    // 4 MB of nothing but nesting (within the default server.maxBodyBytes): refused, not parsed for seconds.
    expectParseError(parseJsonRpcBody(utf8("[".repeat(2_000_000) + "]".repeat(2_000_000))));
  });

  it("counts no bracket inside a string, escaped quotes included", () => {
    const text = `${"[".repeat(5_000)}\\"\\\\${"{".repeat(5_000)}`;
    const parsed = expectOk(
      parseJsonRpcBody(utf8(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x", params: { text } }))),
    );
    expect((parsed.message as { params: { text: string } }).params.text).toBe(text);
  });
});

describe("errorResponse", () => {
  it("builds a JSON-RPC 2.0 error envelope", () => {
    expect(errorResponse("x", { code: -32700, message: "Parse error" })).toEqual({
      jsonrpc: "2.0",
      id: "x",
      error: { code: -32700, message: "Parse error" },
    });
    expect(errorResponse(null, { code: -32603, message: "m", data: { a: 1 } }).id).toBeNull();
  });
});
