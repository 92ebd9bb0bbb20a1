import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import type { Caller } from "../../src/calls/caller.js";
import { parseConfig } from "../../src/config/validate.js";
import { Callers, callerIdentity, credentialHeaders } from "../../src/policy/sets/identity.js";
import { buildPolicySet } from "../../src/policy/sets/policy-set.js";
import { canonicalJson } from "../../src/protocol/json.js";
import { Exchange } from "../../src/server/exchange.js";
import { callerOf, identify } from "../../src/server/identify.js";

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

describe("Callers.digest from credentials", () => {
  it("is the digest of the canonical credential list, the anonymous caller's included, however often asked", () => {
    const callers = new Callers();
    const none = (): string | undefined => undefined;
    const anonymous = callerIdentity(canonicalJson([]));
    const bearer = callerIdentity(canonicalJson(["authorization", "Bearer t"]));
    for (let i = 0; i < 3; i++) {
      expect(callers.digest(undefined, undefined, none, () => [])).toBe(anonymous);
      expect(callers.digest(undefined, undefined, none, () => ["authorization", "Bearer t"])).toBe(bearer);
    }
    expect(anonymous).not.toBe(bearer);
  });

  it("finds credential headers of any case and an identity header of any length", () => {
    const raw = [
      "AUTHORIZATION",
      "Bearer t",
      "Accept",
      "*/*",
      "X-Caller",
      "alice",
      "CooKie",
      "a=1",
      "X-Api-Keys",
      "no",
    ];
    expect(credentialHeaders(raw)).toEqual(["authorization", "Bearer t", "cookie", "a=1"]);
    expect(credentialHeaders(raw, "x-caller")).toEqual([
      "authorization",
      "Bearer t",
      "x-caller",
      "alice",
      "cookie",
      "a=1",
    ]);
  });
});

describe("IdentityCache", () => {
  it("gives the same digest as callerIdentity, for both sources, and keeps at most `max` entries", async () => {
    const { IdentityCache, callerIdentity } = await import("../../src/policy/sets/identity.js");
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

describe("identify", () => {
  const identified = async (config: unknown, headers: Record<string, string>, signal: AbortSignal) => {
    const callers = new Callers();
    const set = buildPolicySet(parseConfig(config));
    let who: Caller | undefined;
    let digest: string | undefined;
    const app = new Hono();
    app.post("/", (c) => {
      const ex = Exchange.of(c);
      ex.set = set;
      who = identify(callers, ex, signal);
      digest = callerOf(callers, ex);
      return c.body(null, 204);
    });
    await app.request("/", { method: "POST", headers });
    return { who: who as Caller, digest };
  };

  it("is the one caller every route gets: digest, audit name, headers for the upstream, trace context, the route's signal", async () => {
    const signal = new AbortController().signal;
    const { who, digest } = await identified(
      { upstream: { url: "http://127.0.0.1:9/mcp" }, tasks: { identityHeader: "x-user" } },
      {
        "x-user": "alice",
        authorization: "Bearer t",
        traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      },
      signal,
    );
    expect(who.caller).toBe(digest);
    expect(who.caller).toBe(callerIdentity("alice", "header"));
    expect(who.subject).toBe("alice");
    expect(who.credentialHeaders).toEqual(["authorization", "Bearer t"]);
    expect(who.traceHeaders).toEqual(["traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]);
    expect(who.upstreamHeaders).toEqual(expect.arrayContaining(["x-user", "alice", "authorization", "Bearer t"]));
    // Unverified: no claims, and pooled sessions are shared by equal credentials.
    expect(who.claims).toBeUndefined();
    expect(who.partition).toBeUndefined();
    expect(who.signal).toBe(signal);
  });

  it("a credential-hashed caller has no audit name and no trace headers without a traceparent", async () => {
    const { who } = await identified(
      { upstream: { url: "http://127.0.0.1:9/mcp" } },
      { authorization: "Bearer t" },
      new AbortController().signal,
    );
    expect(who.caller).toBe(callerIdentity(canonicalJson(["authorization", "Bearer t"])));
    expect(who.subject).toBeUndefined();
    expect(who.traceHeaders).toEqual([]);
  });
});
