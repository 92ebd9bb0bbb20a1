// Properties of hop-by-hop filtering both ways (protocol/headers.ts): for any headers it answers without throwing,
// and what it passes on never holds a connection-specific header (its own, or one the Connection header names) and
// keeps every other one, in order, values untouched; a forwarded request always names the client's address last.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clientResponseHeaders, upstreamRequestHeaders } from "../../src/protocol/headers.js";
import { anyString } from "../helpers/arbitraries.js";

const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
];
const RECOMPUTED = ["host", "content-length", "expect", "http2-settings"];
const END_TO_END = ["mcp-session-id", "mcp-protocol-version", "authorization", "accept", "x-forwarded-for", "x-custom"];

/** A header name in any case, from the names that matter and others. */
const headerName = fc.mixedCase(
  fc.oneof(fc.constantFrom(...HOP_BY_HOP, ...RECOMPUTED, ...END_TO_END), fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/)),
);
/** A Connection value: names, some of them real headers, in any case, with any separators. */
const connectionValue = fc
  .array(fc.tuple(headerName, fc.constantFrom(",", ", ", " ,", ",,")), { maxLength: 4 })
  .map((parts) => parts.map(([n, sep]) => n + sep).join(""));

const rawHeaders = fc.array(
  fc.oneof(
    fc.tuple(headerName, anyString),
    connectionValue.map((v) => ["Connection", v] as [string, string]),
  ),
  { maxLength: 12 },
);

function namesIn(connection: readonly string[]): Set<string> {
  return new Set(
    connection
      .join(",")
      .split(",")
      .map((t) => t.trim().toLowerCase())
      .filter((t) => t !== ""),
  );
}

describe("upstreamRequestHeaders / clientResponseHeaders (properties)", () => {
  it("a request's headers lose exactly the connection's own, the recomputed and those Connection names", () => {
    fc.assert(
      fc.property(rawHeaders, fc.boolean(), (pairs, forwarded) => {
        const raw = pairs.flat();
        const out = upstreamRequestHeaders(raw, forwarded ? { clientIp: "10.0.0.9", proto: "https" } : undefined);
        const dropped = namesIn(pairs.filter(([n]) => n.toLowerCase() === "connection").map(([, v]) => v));
        const kept = pairs
          .map(([n, v]) => [n.toLowerCase(), v] as const)
          .filter(
            ([n]) =>
              !HOP_BY_HOP.includes(n) &&
              !RECOMPUTED.includes(n) &&
              !dropped.has(n) &&
              !(forwarded && n.startsWith("x-forwarded-")),
          );
        const pairsOut: [string, string][] = [];
        for (let i = 0; i < out.length; i += 2) pairsOut.push([out[i] as string, out[i + 1] as string]);
        expect(pairsOut.filter(([n]) => !(forwarded && n.startsWith("x-forwarded-")))).toEqual(kept);
        for (const [n] of pairsOut) {
          expect(n).toBe(n.toLowerCase());
          expect(HOP_BY_HOP.includes(n) || RECOMPUTED.includes(n)).toBe(false);
        }
        if (forwarded) {
          expect(pairsOut.filter(([n]) => n === "x-forwarded-proto")).toEqual([["x-forwarded-proto", "https"]]);
          const xff = pairsOut.filter(([n]) => n === "x-forwarded-for");
          expect(xff).toHaveLength(1);
          expect(xff[0]?.[1].endsWith("10.0.0.9")).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("a response's headers lose exactly the connection's own and those Connection names, values untouched", () => {
    const record = fc.dictionary(
      fc.oneof(
        fc.constantFrom(...HOP_BY_HOP, ...RECOMPUTED, ...END_TO_END),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/),
      ),
      fc.oneof(anyString, fc.array(anyString, { maxLength: 3 }), connectionValue, fc.constant(undefined)),
      { maxKeys: 10 },
    );
    fc.assert(
      fc.property(record, fc.boolean(), (headers, dropContentLength) => {
        const out = clientResponseHeaders(headers, dropContentLength);
        const connection = headers.connection;
        const dropped = namesIn(connection === undefined ? [] : Array.isArray(connection) ? connection : [connection]);
        const expected = Object.fromEntries(
          Object.entries(headers).filter(
            ([n, v]) =>
              v !== undefined &&
              !HOP_BY_HOP.includes(n) &&
              !dropped.has(n) &&
              !(dropContentLength && n === "content-length"),
          ),
        );
        expect(out).toEqual(expected);
      }),
      { numRuns: 1_000 },
    );
  });
});

// The rules as they stood before the fast paths (a Connection naming only hop-by-hop headers builds no Set; the
// response headers in one pass): the rewritten filters must answer exactly as these did, for any input.
function referenceTokens(value: string | undefined): Set<string> | undefined {
  if (!value) return undefined;
  let tokens: Set<string> | undefined;
  for (const token of value.split(",")) {
    const t = token.trim().toLowerCase();
    if (t) (tokens ??= new Set()).add(t);
  }
  return tokens;
}

function referenceResponse(
  headers: Record<string, string | string[] | undefined>,
  dropContentLength: boolean,
): Record<string, string | string[]> {
  let dropped: Set<string> | undefined;
  for (const rawName in headers) {
    if (rawName.length !== 10 || rawName.toLowerCase() !== "connection") continue;
    const connection = headers[rawName];
    dropped = referenceTokens(Array.isArray(connection) ? connection.join(",") : connection);
    break;
  }
  const out: Record<string, string | string[]> = {};
  for (const rawName in headers) {
    const value = headers[rawName];
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    if (HOP_BY_HOP.includes(name) || dropped?.has(name)) continue;
    if (dropContentLength && name === "content-length") continue;
    out[name] = value;
  }
  return out;
}

function referenceRequest(rawHeaders: readonly string[], forwarded?: { clientIp?: string; proto: string }): string[] {
  let connection: string | undefined;
  let priorXff: string | undefined;
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const value = rawHeaders[i + 1] as string;
    if (name === "connection") {
      connection = connection ? `${connection},${value}` : value;
      continue;
    }
    if (HOP_BY_HOP.includes(name) || RECOMPUTED.includes(name) || name === "mcp-gateway-forwarded") continue;
    if (forwarded && name === "x-forwarded-for") {
      priorXff = priorXff ? `${priorXff}, ${value}` : value;
      continue;
    }
    if (forwarded && (name === "x-forwarded-proto" || name === "x-forwarded-host")) continue;
    out.push(name, value);
  }
  const dropped = referenceTokens(connection);
  if (dropped) {
    for (let i = out.length - 2; i >= 0; i -= 2) if (dropped.has(out[i] as string)) out.splice(i, 2);
    if (dropped.has("x-forwarded-for")) priorXff = undefined;
  }
  if (forwarded) {
    const chain =
      priorXff && forwarded.clientIp ? `${priorXff}, ${forwarded.clientIp}` : priorXff || forwarded.clientIp;
    if (chain) out.push("x-forwarded-for", chain);
    out.push("x-forwarded-proto", forwarded.proto);
  }
  return out;
}

/** Connection values as upstreams and clients send them: mostly hop-by-hop names only, in any case. */
const hopOnlyConnection = fc
  .array(fc.tuple(fc.mixedCase(fc.constantFrom(...HOP_BY_HOP)), fc.constantFrom(",", ", ", " ,", ",,", " ")), {
    maxLength: 3,
  })
  .map((parts) => parts.map(([n, sep]) => n + sep).join(""));
const anyConnection = fc.oneof(hopOnlyConnection, connectionValue, fc.constantFrom("close", "Keep-Alive", ""));

describe("upstreamRequestHeaders / clientResponseHeaders (against the rules before the fast paths)", () => {
  it("a request's headers come out as before, in order", () => {
    const pairs = fc.array(
      fc.oneof(fc.tuple(headerName, anyString), fc.tuple(fc.mixedCase(fc.constant("connection")), anyConnection)),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(pairs, fc.boolean(), (list, forwarded) => {
        const raw = list.flat();
        const fwd = forwarded ? { clientIp: "10.0.0.9", proto: "https" } : undefined;
        expect(upstreamRequestHeaders(raw, fwd)).toEqual(referenceRequest(raw, fwd));
      }),
      { numRuns: 2_000 },
    );
  });

  it("a response's headers come out as before, in order, names in any case", () => {
    const record = fc.dictionary(
      fc.oneof(
        fc.mixedCase(fc.constantFrom("connection", ...HOP_BY_HOP, ...RECOMPUTED, ...END_TO_END)),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/),
      ),
      fc.oneof(
        anyString,
        fc.array(fc.oneof(anyString, anyConnection), { maxLength: 3 }),
        anyConnection,
        fc.constant(undefined),
      ),
      { maxKeys: 10 },
    );
    fc.assert(
      fc.property(record, fc.boolean(), (headers, dropContentLength) => {
        const out = clientResponseHeaders(headers, dropContentLength);
        expect(Object.entries(out)).toEqual(Object.entries(referenceResponse(headers, dropContentLength)));
      }),
      { numRuns: 2_000 },
    );
  });
});
