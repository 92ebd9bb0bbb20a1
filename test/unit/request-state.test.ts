import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { newExchangeId, paramsDigest, RequestStateCodec } from "../../src/bridge-to-legacy/request-state.js";

const KEY = Buffer.alloc(32, 7);
const T0 = 1_700_000_000_000;

function clock(start = T0): { now: () => number; set: (t: number) => void } {
  let t = start;
  return { now: () => t, set: (v) => (t = v) };
}

const CLAIMS = { x: "exchange-1", p: "caller-A", m: "tools/call", d: "digest-1" };
const EXPECT = { p: CLAIMS.p, m: CLAIMS.m, d: CLAIMS.d };

function sign(payload: string, key = KEY): string {
  return `${payload}.${createHmac("sha256", key).update(payload).digest("base64url")}`;
}

function b64url(value: unknown): string {
  return Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
}

describe("RequestStateCodec", () => {
  it("round-trips sealed claims with the expiry set from the clock", () => {
    const c = clock();
    const codec = new RequestStateCodec(c.now, KEY);
    const token = codec.seal(CLAIMS, 60_000);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(codec.open(token, EXPECT)).toEqual({ ok: true, claims: { ...CLAIMS, e: T0 + 60_000 } });
  });

  it("a token sealed under another key does not verify", () => {
    const token = new RequestStateCodec(() => T0, Buffer.alloc(32, 1)).seal(CLAIMS, 1_000);
    expect(new RequestStateCodec(() => T0, KEY).open(token, EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("a fresh random key per codec when none is given", () => {
    const token = new RequestStateCodec(() => T0).seal(CLAIMS, 1_000);
    expect(new RequestStateCodec(() => T0).open(token, EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("a tampered payload fails the signature check", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    const token = codec.seal(CLAIMS, 1_000);
    const [, sig] = token.split(".") as [string, string];
    const forged = `${b64url({ ...CLAIMS, p: "caller-B", e: T0 + 1_000 })}.${sig}`;
    expect(codec.open(forged, { ...EXPECT, p: "caller-B" })).toEqual({ ok: false, reason: "bad_signature" });
    // A longer expiry cannot be forged either.
    const extended = `${b64url({ ...CLAIMS, e: T0 + 10_000_000 })}.${sig}`;
    expect(codec.open(extended, EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
  });

  it("a tampered or truncated signature fails", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    const token = codec.seal(CLAIMS, 1_000);
    const [payload, sig] = token.split(".") as [string, string];
    const flipped = `${payload}.${sig.startsWith("A") ? "B" : "A"}${sig.slice(1)}`;
    expect(codec.open(flipped, EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
    expect(codec.open(token.slice(0, -4), EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
    expect(codec.open(`${payload}.`, EXPECT)).toEqual({ ok: false, reason: "bad_signature" });
    expect(codec.open(`${token}x`, EXPECT).ok).toBe(false);
  });

  it("expires at seal time + ttl, judged by the injected clock", () => {
    const c = clock();
    const codec = new RequestStateCodec(c.now, KEY);
    const token = codec.seal(CLAIMS, 5_000);
    c.set(T0 + 4_999);
    expect(codec.open(token, EXPECT).ok).toBe(true);
    c.set(T0 + 5_000);
    expect(codec.open(token, EXPECT)).toEqual({ ok: false, reason: "expired" });
    c.set(T0 + 86_400_000);
    expect(codec.open(token, EXPECT)).toEqual({ ok: false, reason: "expired" });
  });

  it("is bound to the caller", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    const token = codec.seal(CLAIMS, 1_000);
    expect(codec.open(token, { ...EXPECT, p: "caller-B" })).toEqual({ ok: false, reason: "wrong_caller" });
  });

  it("is bound to the method and the params digest", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    const token = codec.seal(CLAIMS, 1_000);
    expect(codec.open(token, { ...EXPECT, m: "prompts/get" })).toEqual({ ok: false, reason: "wrong_request" });
    expect(codec.open(token, { ...EXPECT, d: "digest-2" })).toEqual({ ok: false, reason: "wrong_request" });
  });

  it("changed arguments between rounds are a wrong request", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    const first = { name: "ask", arguments: { q: 1 } };
    const token = codec.seal({ x: "e", p: "A", m: "tools/call", d: paramsDigest("tools/call", first) }, 1_000);
    const retry = { ...first, requestState: token, inputResponses: { k: {} } };
    expect(codec.open(token, { p: "A", m: "tools/call", d: paramsDigest("tools/call", retry) }).ok).toBe(true);
    const changed = { ...retry, arguments: { q: 2 } };
    expect(codec.open(token, { p: "A", m: "tools/call", d: paramsDigest("tools/call", changed) })).toEqual({
      ok: false,
      reason: "wrong_request",
    });
  });

  it("rejects malformed tokens", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    for (const token of [undefined, null, 42, {}, ["a.b"], "", "nodot", ".sig", "x".repeat(4097)]) {
      expect(codec.open(token, EXPECT), JSON.stringify(token)?.slice(0, 20)).toEqual({
        ok: false,
        reason: "malformed",
      });
    }
  });

  it("a correctly signed payload that is not valid claims is malformed", () => {
    const codec = new RequestStateCodec(() => T0, KEY);
    expect(codec.open(sign(b64url("not json")), EXPECT)).toEqual({ ok: false, reason: "malformed" });
    expect(codec.open(sign(b64url([1, 2])), EXPECT)).toEqual({ ok: false, reason: "malformed" });
    expect(codec.open(sign(b64url({ ...CLAIMS })), EXPECT)).toEqual({ ok: false, reason: "malformed" });
    expect(codec.open(sign(b64url({ ...CLAIMS, e: "later" })), EXPECT)).toEqual({ ok: false, reason: "malformed" });
    expect(codec.open(sign(b64url({ ...CLAIMS, p: 1, e: T0 + 1 })), EXPECT)).toEqual({
      ok: false,
      reason: "malformed",
    });
    // The same shape, valid: accepted (so the checks above fail for the reason they claim).
    expect(codec.open(sign(b64url({ ...CLAIMS, e: T0 + 1 })), EXPECT).ok).toBe(true);
  });

  it("refuses keys shorter than 32 bytes", () => {
    expect(() => new RequestStateCodec(() => T0, Buffer.alloc(31))).toThrow(/at least 32 bytes/);
    expect(() => new RequestStateCodec(() => T0, Buffer.alloc(0))).toThrow(/at least 32 bytes/);
    expect(() => new RequestStateCodec(() => T0, Buffer.alloc(64))).not.toThrow();
  });
});

describe("paramsDigest", () => {
  it("ignores _meta, inputResponses, requestState and task", () => {
    const base = { name: "ask", arguments: { a: 1 } };
    const d = paramsDigest("tools/call", base);
    expect(
      paramsDigest("tools/call", {
        ...base,
        _meta: { progressToken: 9, "io.modelcontextprotocol/protocolVersion": "2026-07-28" },
        inputResponses: { k: { action: "accept" } },
        requestState: "s",
        task: { ttl: 1 },
      }),
    ).toBe(d);
  });

  it("is independent of key order, at every depth", () => {
    expect(paramsDigest("tools/call", { name: "n", arguments: { a: 1, b: { c: 2, d: 3 } } })).toBe(
      paramsDigest("tools/call", { arguments: { b: { d: 3, c: 2 }, a: 1 }, name: "n" }),
    );
  });

  it("depends on the method and on every salient value", () => {
    const params = { name: "n", arguments: { a: 1 } };
    const d = paramsDigest("tools/call", params);
    expect(paramsDigest("prompts/get", params)).not.toBe(d);
    expect(paramsDigest("tools/call", { name: "m", arguments: { a: 1 } })).not.toBe(d);
    expect(paramsDigest("tools/call", { name: "n", arguments: { a: "1" } })).not.toBe(d);
    expect(paramsDigest("tools/call", { name: "n", arguments: { a: [1] } })).not.toBe(d);
    expect(paramsDigest("tools/call", { name: "n", arguments: { a: 1 }, extra: true })).not.toBe(d);
    expect(paramsDigest("tools/call", { name: "n", arguments: { a: 1 } })).toBe(d);
  });

  it("is a base64url SHA-256", () => {
    expect(paramsDigest("tools/call", {})).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe("newExchangeId", () => {
  it("is 128 random bits in base64url, different every time", () => {
    const ids = new Set(Array.from({ length: 100 }, () => newExchangeId()));
    expect(ids.size).toBe(100);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(id, "base64url").byteLength).toBe(16);
    }
  });
});

describe("digest computed lazily", () => {
  it("a token with a bad signature never computes the digest; a throwing digest is 'malformed'", async () => {
    const { RequestStateCodec } = await import("../../src/bridge-to-legacy/request-state.js");
    const codec = new RequestStateCodec(() => 1_000);
    let computed = 0;
    const digest = (): string => {
      computed += 1;
      return "d";
    };
    expect(codec.open("payload.bad-signature", { p: "p", m: "m", d: digest })).toEqual({
      ok: false,
      reason: "bad_signature",
    });
    expect(computed).toBe(0);
    const token = codec.seal({ x: "x", p: "p", m: "m", d: "d" }, 60_000);
    expect(codec.open(token, { p: "p", m: "m", d: digest }).ok).toBe(true);
    expect(computed).toBe(1);
    expect(
      codec.open(token, {
        p: "p",
        m: "m",
        d: () => {
          throw new Error("too deep");
        },
      }),
    ).toEqual({ ok: false, reason: "malformed" });
  });
});
