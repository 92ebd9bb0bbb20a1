import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { callerIdentity, credentialHeaders } from "../../src/http/identity.js";

describe("callerIdentity", () => {
  it("is a stable base64url SHA-256 digest, not the bare hash of the value", () => {
    const id = callerIdentity("Bearer secret-token");
    expect(id).toBe(callerIdentity("Bearer secret-token"));
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Domain-separated: a plain sha256 of the header value (guessable from a leaked digest table) is not used.
    expect(id).not.toBe(createHash("sha256").update("Bearer secret-token").digest("base64url"));
  });

  it("an identity header value and an Authorization value never collide", () => {
    expect(callerIdentity("alice", "header")).not.toBe(callerIdentity("alice"));
    expect(callerIdentity("alice", "header")).toBe(callerIdentity("alice", "header"));
    expect(callerIdentity(undefined, "header")).not.toBe(callerIdentity(undefined));
  });

  it("never contains the credential itself", () => {
    const id = callerIdentity("Bearer secret-token");
    expect(id).not.toContain("secret");
    expect(id).not.toContain("Bearer");
  });

  it("differs between credentials and from the anonymous caller", () => {
    const a = callerIdentity("Bearer a");
    const b = callerIdentity("Bearer b");
    const anon = callerIdentity(undefined);
    expect(new Set([a, b, anon]).size).toBe(3);
    expect(callerIdentity("Bearer A")).not.toBe(a);
  });
});

describe("credentialHeaders", () => {
  it("keeps only credential-bearing headers, lower-cased, in order, with repeats", () => {
    const raw = [
      "Host",
      "gw.example",
      "Authorization",
      "Bearer t",
      "User-Agent",
      "ua/1",
      "traceparent",
      "00-abc-def-01",
      "Cookie",
      "a=1",
      "X-API-Key",
      "k-1",
      "Mcp-Session-Id",
      "s",
      "cookie",
      "b=2",
      "Content-Type",
      "application/json",
    ];
    expect(credentialHeaders(raw)).toEqual([
      "authorization",
      "Bearer t",
      "cookie",
      "a=1",
      "x-api-key",
      "k-1",
      "cookie",
      "b=2",
    ]);
  });

  it("per-request headers do not change the result", () => {
    const a = credentialHeaders(["authorization", "Bearer t", "user-agent", "one", "traceparent", "00-1"]);
    const b = credentialHeaders(["user-agent", "two", "Authorization", "Bearer t", "x-request-id", "r-2"]);
    expect(a).toEqual(b);
  });

  it("is empty without credentials, and ignores a dangling name", () => {
    expect(credentialHeaders([])).toEqual([]);
    expect(credentialHeaders(["accept", "*/*"])).toEqual([]);
    expect(credentialHeaders(["accept", "*/*", "authorization"])).toEqual([]);
  });
});

describe("IdentityCache", () => {
  it("gives the same digest as callerIdentity, for both sources, and keeps at most `max` entries", async () => {
    const { IdentityCache, callerIdentity } = await import("../../src/http/identity.js");
    const cache = new IdentityCache(2);
    expect(cache.of("Bearer a", "credentials")).toBe(callerIdentity("Bearer a"));
    expect(cache.of("Bearer a", "header")).toBe(callerIdentity("Bearer a", "header"));
    expect(cache.of("Bearer a", "header")).not.toBe(cache.of("Bearer a", "credentials"));
    expect(cache.of("Bearer b", "credentials")).toBe(callerIdentity("Bearer b"));
    expect(cache.of(undefined, "credentials")).toBe(callerIdentity(undefined));
    expect(cache.size).toBe(2);
  });
});

describe("identity from a verified token", () => {
  it("hashes under its own prefix, so a JWT subject never collides with a header value or credentials", () => {
    const subject = "https://issuer.example\nalice";
    expect(callerIdentity(subject, "jwt")).toBe(callerIdentity(subject, "jwt"));
    expect(callerIdentity(subject, "jwt")).not.toBe(callerIdentity(subject, "header"));
    expect(callerIdentity(subject, "jwt")).not.toBe(callerIdentity(subject));
  });
});
