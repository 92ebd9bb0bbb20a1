// The credential a replica puts on a request it forwards to another replica's internal listener
// (src/replicas/forward-token.ts): bound to the request's method, path and body, fresh for 30 s, usable once,
// carrying what the sending replica decided (rate limits), under a key derived from the replicas' shared secret.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  FORWARD_TOKEN_TTL_MS,
  ForwardTokenCheck,
  forwardingKey,
  forwardToken,
} from "../../src/replicas/forward-token.js";

const T0 = 1_767_225_600_000;
const CALL = {
  method: "POST",
  path: "/mcp/github",
  body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call"}'),
};

describe("forward token", () => {
  const key = forwardingKey(randomBytes(32));

  it("is accepted once, for its request, with the sender and its verdict", () => {
    const check = new ForwardTokenCheck(key);
    const token = forwardToken(key, "replica.with.dots", CALL, true, T0);
    expect(check.plausible(token, T0)).toBe(true);
    expect(check.verify(token, CALL, T0 + 1_000)).toEqual({ replica: "replica.with.dots", limitsDecided: true });
    // Replayed: refused, even within its lifetime.
    expect(check.verify(token, CALL, T0 + 2_000)).toBeUndefined();
    const undecided = forwardToken(key, "replica-a", CALL, false, T0);
    expect(check.verify(undecided, CALL, T0)).toEqual({ replica: "replica-a", limitsDecided: false });
  });

  it("is refused for another body, path or method", () => {
    const token = () => forwardToken(key, "replica-a", CALL, true, T0);
    const check = new ForwardTokenCheck(key);
    expect(check.verify(token(), { ...CALL, body: Buffer.from('{"other":true}') }, T0)).toBeUndefined();
    expect(check.verify(token(), { ...CALL, body: undefined }, T0)).toBeUndefined();
    expect(check.verify(token(), { ...CALL, path: "/status.json" }, T0)).toBeUndefined();
    expect(check.verify(token(), { ...CALL, method: "DELETE" }, T0)).toBeUndefined();
    // A refused use spends nothing: the same token still works for its own request.
    const kept = token();
    expect(check.verify(kept, { ...CALL, path: "/mcp/other" }, T0)).toBeUndefined();
    expect(check.verify(kept, CALL, T0)).toBeDefined();
  });

  it("is refused when stale, from another key, altered, its verdict changed, or not one", () => {
    const check = new ForwardTokenCheck(key);
    const token = forwardToken(key, "replica-a", CALL, false, T0);
    expect(check.plausible(token, T0 + FORWARD_TOKEN_TTL_MS + 6_000)).toBe(false);
    expect(check.verify(token, CALL, T0 + FORWARD_TOKEN_TTL_MS + 6_000)).toBeUndefined();
    expect(check.verify(forwardToken(forwardingKey(randomBytes(32)), "replica-a", CALL, false, T0), CALL, T0)).toBe(
      undefined,
    );
    const parts = token.split(".");
    const upgraded = [...parts.slice(0, 4), "l", parts[5]].join(".");
    expect(check.verify(upgraded, CALL, T0)).toBeUndefined();
    const later = [parts[0], parts[1], String(T0 + 20 * FORWARD_TOKEN_TTL_MS), ...parts.slice(3)].join(".");
    expect(check.plausible(later, T0)).toBe(false);
    expect(check.verify(`${token.slice(0, -2)}xx`, CALL, T0)).toBeUndefined();
    for (const bad of [undefined, "", "replica-a", "x".repeat(600), "v1.a.1.b.l.c", "v2.a.b.c.d.e.f"])
      expect(check.verify(bad, CALL, T0)).toBeUndefined();
  });

  it("a token made by a clock a little behind or ahead is still good", () => {
    const check = new ForwardTokenCheck(key);
    expect(
      check.verify(forwardToken(key, "a", CALL, false, T0 - 3_000), CALL, T0 + FORWARD_TOKEN_TTL_MS),
    ).toBeDefined();
    expect(check.verify(forwardToken(key, "a", CALL, false, T0 + 3_000), CALL, T0)).toBeDefined();
  });

  it("the forwarding key is not the shared secret itself", () => {
    const secret = randomBytes(32);
    expect(forwardingKey(secret).equals(secret)).toBe(false);
    expect(forwardingKey(secret).equals(forwardingKey(secret))).toBe(true);
  });

  it("remembers used nonces only while their tokens could be used, and a bounded number of them", () => {
    const check = new ForwardTokenCheck(key, 100);
    for (let i = 0; i < 100; i++) expect(check.verify(forwardToken(key, "a", CALL, false, T0), CALL, T0)).toBeDefined();
    expect(check.remembered).toBe(100);
    // Full within one lifetime: refused (fail closed), never forgetting a nonce that could still be replayed.
    expect(check.verify(forwardToken(key, "a", CALL, false, T0), CALL, T0)).toBeUndefined();
    // Once those tokens expired, their nonces go, and new tokens are accepted.
    const later = T0 + FORWARD_TOKEN_TTL_MS + 10_000;
    expect(check.verify(forwardToken(key, "a", CALL, false, later), CALL, later)).toBeDefined();
    expect(check.remembered).toBe(1);
  });

  it("gives every credential a nonce of its own, 128 bits, across refills of the nonce pool", () => {
    const nonces = Array.from({ length: 1_000 }, () => forwardToken(key, "a", CALL, false, T0).split(".")[3] as string);
    expect(new Set(nonces).size).toBe(nonces.length);
    for (const n of nonces) expect(Buffer.from(n, "base64url").byteLength).toBe(16);
  });
});
