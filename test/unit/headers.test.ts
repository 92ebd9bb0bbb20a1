import { describe, expect, it } from "vitest";
import {
  clientResponseHeaders,
  headerValue,
  isEventStream,
  upstreamRequestHeaders,
  type ResponseHeaderValue,
} from "../../src/protocol/headers.js";

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
] as const;

const END_TO_END: ReadonlyArray<readonly [string, string]> = [
  ["Mcp-Session-Id", "3f1c2a9e-SESSION"],
  ["MCP-Protocol-Version", "2025-06-18"],
  ["Last-Event-ID", "evt-41"],
  ["Authorization", "Bearer s3cr3t-Token"],
  ["Accept", "application/json, text/event-stream"],
  ["Content-Type", "application/json; charset=utf-8"],
  ["WWW-Authenticate", 'Bearer resource_metadata="https://as.example/.well-known"'],
  ["Origin", "http://localhost:6274"],
  ["X-Custom-Thing", "Mixed Case Value"],
  ["Accept-Language", "fr-CH, fr;q=0.9"],
];

/** Flat [name, value, …] → list of pairs, for readable assertions. */
function pairs(flat: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}

function namesOf(flat: readonly string[]): string[] {
  return pairs(flat).map(([n]) => n);
}

function raw(list: ReadonlyArray<readonly [string, string]>): string[] {
  return list.flatMap(([n, v]) => [n, v]);
}

describe("upstreamRequestHeaders (client → upstream)", () => {
  it.each(HOP_BY_HOP)("drops the hop-by-hop header %s, in any letter case", (name) => {
    const upper = name.toUpperCase();
    const out = upstreamRequestHeaders(
      raw([
        [name, "x"],
        [upper, "y"],
        ["x-kept", "1"],
      ]),
    );
    expect(namesOf(out)).toEqual(["x-kept"]);
  });

  it("drops every header the client names in Connection, across repeated Connection headers", () => {
    const out = upstreamRequestHeaders(
      raw([
        ["Connection", "X-Hop-One, keep-alive"],
        ["X-Hop-One", "1"],
        ["connection", " x-hop-two ,,"],
        ["X-Hop-Two", "2"],
        ["Keep-Alive", "timeout=5"],
        ["X-End-To-End", "3"],
      ]),
    );
    expect(pairs(out)).toEqual([["x-end-to-end", "3"]]);
  });

  it.each(["Host", "Content-Length", "Expect", "HTTP2-Settings"])(
    "drops %s, which the gateway recomputes for its own connection",
    (name) => {
      const out = upstreamRequestHeaders(
        raw([
          [name, name === "Expect" ? "100-continue" : "12"],
          ["accept", "*/*"],
        ]),
      );
      expect(pairs(out)).toEqual([["accept", "*/*"]]);
    },
  );

  it("keeps end-to-end headers with their values untouched, names lowercased", () => {
    const out = upstreamRequestHeaders(raw(END_TO_END));
    expect(pairs(out)).toEqual(END_TO_END.map(([n, v]) => [n.toLowerCase(), v]));
  });

  it("preserves repeated headers and their relative order", () => {
    const out = upstreamRequestHeaders(
      raw([
        ["Accept", "application/json"],
        ["X-Trace", "one"],
        ["Connection", "close"],
        ["Accept", "text/event-stream"],
        ["X-Trace", "two"],
        ["X-Trace", "three"],
      ]),
    );
    expect(pairs(out)).toEqual([
      ["accept", "application/json"],
      ["x-trace", "one"],
      ["accept", "text/event-stream"],
      ["x-trace", "two"],
      ["x-trace", "three"],
    ]);
  });

  it("ignores a dangling name without a value", () => {
    const out = upstreamRequestHeaders(["accept", "*/*", "x-dangling"]);
    expect(pairs(out)).toEqual([["accept", "*/*"]]);
  });

  it("appends the client address to an existing X-Forwarded-For chain (all occurrences, in order)", () => {
    const out = upstreamRequestHeaders(
      raw([
        ["X-Forwarded-For", "203.0.113.7, 198.51.100.2"],
        ["accept", "*/*"],
        ["x-forwarded-for", "192.0.2.9"],
      ]),
      { clientIp: "10.1.2.3", proto: "http", host: "gw.example:8642" },
    );
    const xff = pairs(out).filter(([n]) => n === "x-forwarded-for");
    expect(xff).toEqual([["x-forwarded-for", "203.0.113.7, 198.51.100.2, 192.0.2.9, 10.1.2.3"]]);
  });

  it("starts an X-Forwarded-For chain when there is none, and adds none without any address", () => {
    const started = upstreamRequestHeaders([], { clientIp: "127.0.0.1", proto: "http" });
    expect(pairs(started).filter(([n]) => n === "x-forwarded-for")).toEqual([["x-forwarded-for", "127.0.0.1"]]);

    const none = upstreamRequestHeaders([], { proto: "http" });
    expect(namesOf(none)).not.toContain("x-forwarded-for");

    const kept = upstreamRequestHeaders(["x-forwarded-for", "198.51.100.2"], { proto: "http" });
    expect(pairs(kept).filter(([n]) => n === "x-forwarded-for")).toEqual([["x-forwarded-for", "198.51.100.2"]]);
  });

  it("names the client even when it sent an empty X-Forwarded-For (which used to drop the header, its address with it)", () => {
    const out = upstreamRequestHeaders(["X-Forwarded-For", ""], { clientIp: "192.0.2.9", proto: "http" });
    expect(pairs(out).filter(([n]) => n === "x-forwarded-for")).toEqual([["x-forwarded-for", "192.0.2.9"]]);
  });

  it("replaces X-Forwarded-Proto and X-Forwarded-Host with what the gateway saw", () => {
    const out = upstreamRequestHeaders(
      raw([
        ["X-Forwarded-Proto", "https"],
        ["X-Forwarded-Host", "spoofed.example"],
        ["x-forwarded-host", "spoofed-again.example"],
        ["accept", "*/*"],
      ]),
      { clientIp: "127.0.0.1", proto: "http", host: "127.0.0.1:8642" },
    );
    expect(pairs(out).filter(([n]) => n === "x-forwarded-proto")).toEqual([["x-forwarded-proto", "http"]]);
    expect(pairs(out).filter(([n]) => n === "x-forwarded-host")).toEqual([["x-forwarded-host", "127.0.0.1:8642"]]);

    // Without a known host, the client's value is still not passed on.
    const noHost = upstreamRequestHeaders(["X-Forwarded-Host", "spoofed.example"], { proto: "https" });
    expect(pairs(noHost)).toEqual([["x-forwarded-proto", "https"]]);
  });

  it("passes X-Forwarded-* through untouched when not asked to add forwarding headers", () => {
    const input = raw([
      ["X-Forwarded-For", "203.0.113.7"],
      ["X-Forwarded-Proto", "https"],
      ["X-Forwarded-Host", "front.example"],
    ]);
    expect(pairs(upstreamRequestHeaders(input))).toEqual([
      ["x-forwarded-for", "203.0.113.7"],
      ["x-forwarded-proto", "https"],
      ["x-forwarded-host", "front.example"],
    ]);
  });
});

describe("clientResponseHeaders (upstream → client)", () => {
  it.each(HOP_BY_HOP)("drops the hop-by-hop header %s", (name) => {
    const out = clientResponseHeaders({ [name]: "x", "content-type": "application/json" });
    expect(out).toEqual({ "content-type": "application/json" });
  });

  it("drops headers named in Connection, whether it is one value or several", () => {
    expect(clientResponseHeaders({ connection: "X-Hop, close", "x-hop": "1", "x-kept": "2" })).toEqual({
      "x-kept": "2",
    });
    expect(clientResponseHeaders({ connection: ["x-a", "X-B"], "x-a": "1", "x-b": "2", "x-kept": "3" })).toEqual({
      "x-kept": "3",
    });
  });

  it("keeps end-to-end headers, arrays of repeated values intact and in order", () => {
    const input: Record<string, ResponseHeaderValue> = {
      "mcp-session-id": "3f1c2a9e-SESSION",
      "mcp-protocol-version": "2025-06-18",
      "www-authenticate": ['Bearer error="invalid_token"', 'Basic realm="x"'],
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "set-cookie": ["a=1; Path=/", "b=2; Path=/"],
      "x-custom": "Value",
      "content-length": "42",
    };
    expect(clientResponseHeaders(input)).toEqual(input);
  });

  it("skips undefined values", () => {
    expect(clientResponseHeaders({ "x-a": undefined, "x-b": "b" })).toEqual({ "x-b": "b" });
  });

  it("drops content-length only when asked to", () => {
    const input = { "content-type": "text/event-stream", "content-length": "10" };
    expect(clientResponseHeaders(input)).toEqual(input);
    expect(clientResponseHeaders(input, false)).toEqual(input);
    expect(clientResponseHeaders(input, true)).toEqual({ "content-type": "text/event-stream" });
  });

  it("lowercases names and honours a Connection header whatever its letter case", () => {
    // The function lowercases every name it emits, so it also has to find the
    // Connection header and its tokens regardless of the record's key case.
    const out = clientResponseHeaders({ Connection: "X-Hop", "X-Hop": "1", "Content-Type": "application/json" });
    expect(out).toEqual({ "content-type": "application/json" });
  });
});

describe("headerValue", () => {
  it("returns the first value of a repeated header, the value itself otherwise", () => {
    const headers: Record<string, ResponseHeaderValue> = { a: ["1", "2"], b: "3", c: undefined };
    expect(headerValue(headers, "a")).toBe("1");
    expect(headerValue(headers, "b")).toBe("3");
    expect(headerValue(headers, "c")).toBeUndefined();
    expect(headerValue(headers, "missing")).toBeUndefined();
  });
});

describe("isEventStream", () => {
  it.each([
    ["text/event-stream", true],
    ["text/event-stream; charset=utf-8", true],
    ["Text/Event-Stream", true],
    ["application/json", false],
    ["text/plain", false],
    ["", false],
    [undefined, false],
  ] as const)("%s → %s", (contentType, expected) => {
    expect(isEventStream(contentType)).toBe(expected);
  });
});
