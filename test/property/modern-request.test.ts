// Properties of classifyPost (protocol/modern-request.ts): for any JSON body and any headers it answers without
// throwing, and its verdict is well formed (legacy; a modern request or notification as the body says; or a
// rejection with a JSON-RPC error code, a reason and a 400 or 404). A well-formed modern request with agreeing
// headers is accepted whatever whitespace surrounds its header values, and the time it takes is linear in its
// headers' length.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  classifyPost,
  decodeHeaderValue,
  MCP_NAME_SOURCE,
  META,
  MODERN_METHODS,
  MODERN_VERSION,
  type Classification,
  type HeaderLookup,
} from "../../src/protocol/modern-request.js";
import { anyString } from "../helpers/arbitraries.js";

const METHODS = [...MODERN_METHODS, "tasks/get", "tasks/update", "initialize", "notifications/cancelled", "x/y"];

function lookup(headers: Record<string, string>): HeaderLookup {
  const map = new Map(Object.entries(headers));
  return (name) => map.get(name);
}

/** A header value as a client may send it: base64 sentinel when it is not plain visible ASCII. */
function headerFor(value: string, base64: boolean): string {
  const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith("=?base64?");
  return plain && !base64 ? value : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`;
}

const ows = fc.constantFrom("", " ", "\t", "  \t ");

/** A modern request: an envelope, a method, the name its Mcp-Name header carries, and agreeing headers. */
const modernRequest = fc
  .record({
    id: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
    method: fc.constantFrom(...METHODS),
    name: fc.string({ unit: "binary", maxLength: 16 }),
    capabilities: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    logLevel: fc.option(fc.constantFrom("debug", "info", "error"), { nil: undefined }),
    base64: fc.boolean(),
    before: ows,
    after: ows,
  })
  .map((r) => {
    const field = MCP_NAME_SOURCE[r.method];
    const params: Record<string, unknown> = {
      _meta: {
        [META.protocolVersion]: MODERN_VERSION,
        [META.clientCapabilities]: r.capabilities,
        ...(r.logLevel && { [META.logLevel]: r.logLevel }),
      },
      ...(field && { [field]: r.name }),
    };
    const wrap = (v: string): string => `${r.before}${v}${r.after}`;
    const headers: Record<string, string> = {
      "mcp-protocol-version": wrap(MODERN_VERSION),
      "mcp-method": wrap(r.method),
      ...(field && { "mcp-name": wrap(headerFor(r.name, r.base64)) }),
    };
    return { body: { jsonrpc: "2.0", id: r.id, method: r.method, params }, headers, r };
  });

/** Headers the checks read, with values of any kind (whitespace runs, sentinels, versions). */
const headerValue = fc.oneof(
  anyString,
  fc.constantFrom(
    MODERN_VERSION,
    "2025-11-25",
    "2099-01-01",
    "tools/call",
    "=?base64?",
    "=?base64?=?=",
    "=?base64?AA==?=",
  ),
  fc.tuple(ows, fc.string({ maxLength: 10 }), ows).map(([a, b, c]) => a + b + c),
);
const headerMap = fc.dictionary(
  fc.constantFrom("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-param-x", "accept"),
  headerValue,
  { maxKeys: 5 },
);

/** Bodies near the modern shape, each part possibly broken, and arbitrary JSON. */
const body = fc.oneof(
  fc.jsonValue(),
  modernRequest.map((m) => m.body),
  fc.record(
    {
      jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue()),
      id: fc.jsonValue({ maxDepth: 1 }),
      method: fc.oneof(fc.constantFrom(...METHODS), fc.jsonValue({ maxDepth: 1 })),
      params: fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.record(
          {
            _meta: fc.oneof(
              fc.jsonValue({ maxDepth: 2 }),
              fc.record(
                {
                  [META.protocolVersion]: fc.oneof(fc.constantFrom(MODERN_VERSION, "2025-11-25"), fc.jsonValue()),
                  [META.clientCapabilities]: fc.jsonValue({ maxDepth: 2 }),
                  [META.clientInfo]: fc.jsonValue({ maxDepth: 2 }),
                  [META.logLevel]: fc.jsonValue({ maxDepth: 1 }),
                },
                { requiredKeys: [] },
              ),
            ),
            name: fc.jsonValue({ maxDepth: 1 }),
            taskId: fc.jsonValue({ maxDepth: 1 }),
          },
          { requiredKeys: [] },
        ),
      ),
    },
    { requiredKeys: [] },
  ),
);

/** Fails unless the verdict is one of the three well-formed kinds. */
function expectWellFormed(verdict: Classification, message: unknown): void {
  if (verdict.era === "legacy") {
    expect(Object.keys(verdict)).toEqual(["era"]);
    return;
  }
  expect(verdict.era).toBe("modern");
  if ("reject" in verdict) {
    const { status, id, error } = verdict.reject;
    expect([400, 404]).toContain(status);
    expect(id === null || typeof id === "string" || typeof id === "number").toBe(true);
    expect(Number.isInteger(error.code) && error.code <= -32000 && error.code >= -32768).toBe(true);
    expect(typeof error.message).toBe("string");
    expect(error.data).toMatchObject({ reason: expect.any(String) });
    return;
  }
  const m = verdict.message;
  const sent = message as { id?: unknown; method?: unknown };
  expect(m.method).toBe(sent.method);
  expect(typeof m.params).toBe("object");
  if (m.kind === "request") {
    expect(m.id).toBe(sent.id);
    expect(typeof m.envelope.protocolVersion).toBe("string");
  } else expect(m.kind).toBe("notification");
}

describe("classifyPost (properties)", () => {
  it("any JSON body and any headers: a well-formed verdict, never a throw", () => {
    fc.assert(
      fc.property(body, headerMap, (message, headers) => {
        expectWellFormed(classifyPost(message, lookup(headers)), message);
      }),
      { numRuns: 3_000 },
    );
  });

  it("a well-formed modern request with agreeing headers is accepted, whatever whitespace surrounds the values", () => {
    fc.assert(
      fc.property(modernRequest, ({ body: message, headers, r }) => {
        const verdict = classifyPost(message, lookup(headers), new Set(["tasks/get", "tasks/update", "x/y"]));
        if (r.method === "initialize" || r.method === "notifications/cancelled") {
          // Not on the modern surface: the one rejection is "method not found".
          expect(verdict).toMatchObject({ era: "modern", reject: { status: 404, error: { code: -32601 } } });
          return;
        }
        expect(verdict).toMatchObject({ era: "modern", message: { kind: "request", id: r.id, method: r.method } });
      }),
      { numRuns: 1_000 },
    );
  });

  it("a header value decodes back to what the client encoded", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.boolean(), (value, base64) => {
        expect(decodeHeaderValue(headerFor(value, base64))).toBe(value);
      }),
    );
  });

  it("takes time linear in its headers: values of 16 KiB (Node's header limit) built to backtrack are read in ms", () => {
    // Runs of spaces and tabs inside a value, and around it, where a trim of optional whitespace works.
    const big = fc
      .tuple(fc.constantFrom(" ", "\t", " \t", "x "), fc.constantFrom("", "x", " x"), fc.constantFrom("", "x", "x "))
      .map(([run, head, tail]) => head + run.repeat(Math.floor(16_384 / run.length)) + tail);
    fc.assert(
      fc.property(
        big,
        modernRequest,
        fc.constantFrom("mcp-protocol-version", "mcp-method", "mcp-name"),
        (value, m, name) => {
          const headers = { ...m.headers, [name]: value };
          const started = performance.now();
          classifyPost(m.body, lookup(headers));
          expect(performance.now() - started).toBeLessThan(50);
        },
      ),
      { numRuns: 30 },
    );
  });
});
