// The credential a replica puts on a request it forwards to another replica's
// internal listener (src/http/forward.ts): an HMAC of the sender and a
// timestamp under a key derived from the replicas' shared secret.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { forwardingKey, forwardToken, verifyForwardToken } from "../../src/http/forward.js";

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
});
