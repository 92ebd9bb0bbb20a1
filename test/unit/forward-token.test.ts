// The credential a replica puts on a request it forwards to another replica's
// internal listener (src/replicas/forward.ts): an HMAC of the sender and a
// timestamp under a key derived from the replicas' shared secret.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  ForwardTokenCheck,
  ForwardTokens,
  forwardingKey,
  forwardToken,
  verifyForwardToken,
} from "../../src/replicas/forward-token.js";

const T0 = 1_767_225_600_000;

describe("forward token", () => {
  const key = forwardingKey(randomBytes(32));

  it("verifies for the key it was made with, within a minute either way", () => {
    const token = forwardToken(key, "replica-a", T0);
    expect(verifyForwardToken(key, token, T0)).toBe(true);
    expect(verifyForwardToken(key, token, T0 + 59_000)).toBe(true);
    expect(verifyForwardToken(key, token, T0 - 59_000)).toBe(true);
  });

  it("is refused when stale, from another key, altered, or missing", () => {
    const token = forwardToken(key, "replica-a", T0);
    expect(verifyForwardToken(key, token, T0 + 61_000)).toBe(false);
    expect(verifyForwardToken(forwardingKey(randomBytes(32)), token, T0)).toBe(false);
    expect(verifyForwardToken(key, token.replace("replica-a", "replica-b"), T0)).toBe(false);
    expect(verifyForwardToken(key, `${token.slice(0, -2)}xx`, T0)).toBe(false);
    expect(verifyForwardToken(key, "replica-a", T0)).toBe(false);
    expect(verifyForwardToken(key, undefined, T0)).toBe(false);
    expect(verifyForwardToken(key, "x".repeat(300), T0)).toBe(false);
  });

  it("the forwarding key is not the shared secret itself", () => {
    const secret = randomBytes(32);
    expect(forwardingKey(secret).equals(secret)).toBe(false);
    expect(forwardingKey(secret).equals(forwardingKey(secret))).toBe(true);
  });

  it("a sender reuses its token for a second, then makes a new one", () => {
    const tokens = new ForwardTokens(key, "replica-a");
    const first = tokens.current(T0);
    expect(tokens.current(T0 + 999)).toBe(first);
    const next = tokens.current(T0 + 1_000);
    expect(next).not.toBe(first);
    expect(verifyForwardToken(key, next, T0 + 1_000)).toBe(true);
    // A clock that steps back gets a token of its own time, never one from its future.
    expect(tokens.current(T0)).not.toBe(next);
  });

  it("a receiver that remembers a token still refuses it once stale, and never remembers a refused one", () => {
    const check = new ForwardTokenCheck(key);
    const token = forwardToken(key, "replica.with.dots", T0);
    expect(check.verify(token, T0)).toBe(true);
    expect(check.verify(token, T0 + 59_000)).toBe(true);
    expect(check.verify(token, T0 + 61_000)).toBe(false);
    expect(check.verify(token, T0 - 61_000)).toBe(false);
    const forged = forwardToken(forwardingKey(randomBytes(32)), "replica-a", T0);
    expect(check.verify(forged, T0)).toBe(false);
    expect(check.verify(forged, T0)).toBe(false);
    expect(check.verify(undefined, T0)).toBe(false);
  });

  it("a receiver remembers a bounded number of tokens, and still verifies the ones it forgot", () => {
    const check = new ForwardTokenCheck(key);
    const tokens = Array.from({ length: 200 }, (_, i) => forwardToken(key, `replica-${i}`, T0));
    for (const t of tokens) expect(check.verify(t, T0)).toBe(true);
    for (const t of tokens) expect(check.verify(t, T0 + 1)).toBe(true);
  });
});
