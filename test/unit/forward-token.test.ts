// The credential a replica puts on a request it forwards to another replica's internal listener
// (src/replicas/forward-token.ts): bound to the request's method, path and body, fresh for 30 s, usable once,
// carrying what the sending replica decided (rate limits), under a key derived from the replicas' shared secret.
import { createHash, createHmac, randomBytes } from "node:crypto";
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
    expect(check.screen(token, T0)).toBeDefined();
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
    expect(check.screen(token, T0 + FORWARD_TOKEN_TTL_MS + 6_000)).toBeUndefined();
    expect(check.verify(token, CALL, T0 + FORWARD_TOKEN_TTL_MS + 6_000)).toBeUndefined();
    expect(check.verify(forwardToken(forwardingKey(randomBytes(32)), "replica-a", CALL, false, T0), CALL, T0)).toBe(
      undefined,
    );
    const parts = token.split(".");
    const upgraded = [...parts.slice(0, 4), "l", parts[5]].join(".");
    expect(check.verify(upgraded, CALL, T0)).toBeUndefined();
    const later = [parts[0], parts[1], String(T0 + 20 * FORWARD_TOKEN_TTL_MS), ...parts.slice(3)].join(".");
    expect(check.screen(later, T0)).toBeUndefined();
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

  it("its MAC is HMAC-SHA-256 over head, method, path and body digest, as replicas of earlier versions make and check it", () => {
    // The wire format pinned: the RFC 2104 HMAC of exactly these fields, for any key length and any length of message,
    // so a replica of this version and one of the last accept each other's credentials in a rolling upgrade.
    const long = { ...CALL, path: `/mcp/${"x".repeat(2_000)}` };
    for (const k of [key, randomBytes(64), randomBytes(100), Buffer.from("short")])
      for (const req of [CALL, long, { ...CALL, body: undefined }]) {
        const token = forwardToken(k, "replica-a", req, true, T0);
        const head = token.slice(0, token.lastIndexOf("."));
        const digest = createHash("sha256")
          .update(req.body ?? Buffer.alloc(0))
          .digest("base64url");
        const wanted = createHmac("sha256", k)
          .update(`${head}\n${req.method}\n${req.path}\n${digest}`)
          .digest("base64url");
        expect(token.slice(token.lastIndexOf(".") + 1)).toBe(wanted);
        expect(new ForwardTokenCheck(k).verify(token, req, T0)).toBeDefined();
      }
  });

  it("a credential screened before its body is read is verified once, for its request, while fresh", () => {
    const check = new ForwardTokenCheck(key);
    const token = forwardToken(key, "replica-a", CALL, true, T0);
    const screened = check.screen(token, T0);
    expect(screened).toBeDefined();
    // Another body, or too late by the time the body is in: refused, and the nonce is not spent.
    expect(check.verify(screened, { ...CALL, body: Buffer.from("{}") }, T0)).toBeUndefined();
    expect(check.verify(screened, CALL, T0 + FORWARD_TOKEN_TTL_MS + 6_000)).toBeUndefined();
    expect(check.verify(screened, CALL, T0 + 1_000)).toEqual({ replica: "replica-a", limitsDecided: true });
    // Replayed, screened again or as it came: refused.
    expect(check.verify(check.screen(token, T0 + 2_000), CALL, T0 + 2_000)).toBeUndefined();
    expect(check.verify(token, CALL, T0 + 2_000)).toBeUndefined();
    // Tampered: the MAC, the verdict or the replica changed after screening fails the MAC.
    const fresh = forwardToken(key, "replica-a", CALL, false, T0);
    const parts = fresh.split(".");
    for (const altered of [
      [...parts.slice(0, 5), `${(parts[5] as string).slice(0, -2)}AA`],
      [...parts.slice(0, 4), "l", parts[5]],
      [parts[0], Buffer.from("replica-b").toString("base64url"), ...parts.slice(2)],
    ])
      expect(check.verify(check.screen(altered.join("."), T0), CALL, T0)).toBeUndefined();
    expect(check.verify(check.screen(fresh, T0), CALL, T0)).toEqual({ replica: "replica-a", limitsDecided: false });
  });

  it("a credential minted for one replica id, then another, names each", () => {
    const check = new ForwardTokenCheck(key);
    expect(check.verify(forwardToken(key, "a", CALL, false, T0), CALL, T0)?.replica).toBe("a");
    expect(check.verify(forwardToken(key, "b", CALL, false, T0), CALL, T0)?.replica).toBe("b");
    expect(check.verify(forwardToken(key, "a", CALL, false, T0), CALL, T0)?.replica).toBe("a");
  });
});
