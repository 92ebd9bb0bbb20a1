// JwtVerifier against a real JWKS endpoint on loopback: keys from jose, tokens
// from SignJWT, time from an injected clock (no timings are asserted).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from "jose";
import { authJwtSchema } from "../../src/config/schema.js";
import { JwtVerifier, type AuthOutcome, type JwtVerifierOptions } from "../../src/auth/jwt-verifier.js";
import { getDeadUrl } from "../helpers/ports.js";

const ISS = "https://as.example.com/";
const AUD = "https://gw.example.com/mcp";
const T0 = Date.UTC(2030, 0, 1);

type Mode = "ok" | "reset" | "500" | "badjson" | "notjwks" | "hang";

/** A JWKS endpoint whose keys and failures the test sets, counting fetches. */
class JwksServer {
  keys: JWK[] = [];
  mode: Mode = "ok";
  fetches = 0;
  private readonly server: Server;
  private readonly hung = new Set<ServerResponse>();
  url = "";

  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      this.fetches++;
      switch (this.mode) {
        case "reset":
          req.socket.destroy();
          return;
        case "500":
          res.writeHead(500, { "content-type": "text/plain" }).end("boom");
          return;
        case "badjson":
          res.writeHead(200, { "content-type": "application/json" }).end("{not json");
          return;
        case "notjwks":
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ hello: "world" }));
          return;
        case "hang":
          this.hung.add(res);
          return;
        default:
          res.writeHead(200, { "content-type": "application/jwk-set+json" }).end(JSON.stringify({ keys: this.keys }));
      }
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks.json`;
  }

  async stop(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

interface Key {
  kid: string | undefined;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicKey: CryptoKey;
}

async function makeKey(kid: string | undefined, alg = "RS256"): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), ...(kid !== undefined && { kid }), use: "sig" };
  return { kid, alg, privateKey, publicJwk, publicKey };
}

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

describe("JwtVerifier with a remote JWKS", () => {
  const jwks = new JwksServer();
  let keyA: Key;
  let keyB: Key;
  let stranger: Key;
  let t = T0;
  const now = () => t;
  /** Every refusal seen, with the token it was about: none may repeat the token. */
  const seen: { token: string; outcome: AuthOutcome }[] = [];

  function verifier(overrides: Record<string, unknown> = {}, options: Partial<JwtVerifierOptions> = {}): JwtVerifier {
    const config = authJwtSchema.parse({ jwksUrl: jwks.url, issuer: ISS, audience: AUD, ...overrides });
    return new JwtVerifier({ config, now, ...options });
  }

  async function token(key: Key, claims: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> {
    const sec = Math.floor(t / 1000);
    const payload: JWTPayload = { iss: ISS, aud: AUD, sub: "alice", iat: sec, exp: sec + 300, ...claims };
    for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
    return new SignJWT(payload)
      .setProtectedHeader({ alg: key.alg, typ: "at+jwt", ...(key.kid !== undefined && { kid: key.kid }), ...header })
      .sign(key.privateKey);
  }

  async function check(v: JwtVerifier, tok: string, scheme = "Bearer"): Promise<AuthOutcome> {
    const outcome = await v.verify(`${scheme} ${tok}`);
    seen.push({ token: tok, outcome });
    return outcome;
  }

  function refused(outcome: AuthOutcome): { status: number; error: string; description: string } {
    if (outcome.ok) throw new Error(`expected a refusal, got ${outcome.principal.identity}`);
    return { status: outcome.status, error: outcome.error, description: outcome.description };
  }

  beforeAll(async () => {
    [keyA, keyB, stranger] = await Promise.all([makeKey("key-a"), makeKey("key-b"), makeKey("key-a")]);
    await jwks.start();
  });
  afterAll(() => jwks.stop());

  function reset(keys: Key[]): void {
    jwks.keys = keys.map((k) => k.publicJwk);
    jwks.mode = "ok";
    jwks.fetches = 0;
    t = T0;
  }

  it("accepts a valid token: principal from issuer and sub, claims frozen", async () => {
    reset([keyA]);
    const v = verifier();
    const outcome = await check(v, await token(keyA, { scope: "tools:read tasks" }));
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.principal).toMatchObject({ identity: `${ISS}\nalice`, issuer: ISS, subject: "alice" });
    expect(outcome.principal.claims.scope).toBe("tools:read tasks");
    expect(Object.isFrozen(outcome.principal.claims)).toBe(true);
    expect(jwks.fetches).toBe(1);
  });

  it("a refreshed token for the same sub has the same identity; another sub a different one", async () => {
    reset([keyA]);
    const v = verifier();
    const first = await check(v, await token(keyA, { jti: "1" }));
    t += 240_000;
    const refreshedToken = await token(keyA, { jti: "2" });
    const refreshed = await check(v, refreshedToken);
    const bob = await check(v, await token(keyA, { sub: "bob" }));
    if (!first.ok || !refreshed.ok || !bob.ok) throw new Error("expected all three to verify");
    expect(refreshed.principal.identity).toBe(first.principal.identity);
    expect(bob.principal.identity).not.toBe(first.principal.identity);
    expect(bob.principal.subject).toBe("bob");
    // Keys are reused from the cache: one fetch for all three.
    expect(jwks.fetches).toBe(1);
  });

  it("a verified token is trusted again until verifiedCacheMs, never past its exp", async () => {
    reset([keyA]);
    const v = verifier({ verifiedCacheMs: 60_000, clockToleranceSec: 0 });
    const sec = Math.floor(t / 1000);
    const tok = await token(keyA, { exp: sec + 30 });
    expect((await check(v, tok)).ok).toBe(true);
    // The key leaves the JWKS and the cache expires: only the remembered verification still holds.
    jwks.keys = [keyB.publicJwk];
    t += 20_000;
    expect((await check(v, tok)).ok).toBe(true);
    // Past the token's exp the remembered verification ends with it.
    t += 11_000;
    expect(refused(await check(v, tok)).description).toBe("token expired");
  });

  it("a removed key stops being accepted once verifiedCacheMs has passed; 0 checks every request", async () => {
    reset([keyA]);
    const v = verifier({ verifiedCacheMs: 5_000, jwksCacheMaxAgeMs: 1_000 });
    const tok = await token(keyA);
    expect((await check(v, tok)).ok).toBe(true);
    jwks.keys = [keyB.publicJwk];
    t += 6_000;
    expect(refused(await check(v, tok)).description).toBe("no key matches kid");
    reset([keyA]);
    const strict = verifier({ verifiedCacheMs: 0, jwksCacheMaxAgeMs: 1_000 });
    const tok2 = await token(keyA);
    expect((await check(strict, tok2)).ok).toBe(true);
    jwks.keys = [keyB.publicJwk];
    t += 1_500;
    expect(refused(await check(strict, tok2)).description).toBe("no key matches kid");
  });

  it("verifies ES256 and EdDSA tokens, and tries each key when a kid-less token meets several", async () => {
    const es = await makeKey("es", "ES256");
    const ed = await makeKey("ed", "EdDSA");
    const noKid1 = await makeKey(undefined);
    const noKid2 = await makeKey(undefined);
    reset([es, ed, noKid1, noKid2]);
    const v = verifier();
    expect((await check(v, await token(es))).ok).toBe(true);
    expect((await check(v, await token(ed))).ok).toBe(true);
    expect((await check(v, await token(noKid2))).ok).toBe(true);
    const forged = await token(await makeKey(undefined));
    expect(refused(await check(v, forged))).toEqual({
      status: 401,
      error: "invalid_token",
      description: "signature invalid",
    });
  });

  it("refuses expired tokens, within the clock tolerance only", async () => {
    reset([keyA]);
    const v = verifier();
    const sec = Math.floor(t / 1000);
    expect(refused(await check(v, await token(keyA, { iat: sec - 600, exp: sec - 61 })))).toEqual({
      status: 401,
      error: "invalid_token",
      description: "token expired",
    });
    expect((await check(v, await token(keyA, { iat: sec - 600, exp: sec - 30 }))).ok).toBe(true);
    const strict = verifier({ clockToleranceSec: 0 });
    expect(refused(await check(strict, await token(keyA, { iat: sec - 600, exp: sec - 30 }))).description).toBe(
      "token expired",
    );
  });

  it("refuses a token that is not yet valid", async () => {
    reset([keyA]);
    const v = verifier();
    const sec = Math.floor(t / 1000);
    expect(refused(await check(v, await token(keyA, { nbf: sec + 600 })))).toEqual({
      status: 401,
      error: "invalid_token",
      description: "token not yet valid (nbf)",
    });
    expect((await check(v, await token(keyA, { nbf: sec + 30 }))).ok).toBe(true);
  });

  it("refuses the wrong audience and the wrong issuer, and accepts any configured one", async () => {
    reset([keyA]);
    const v = verifier();
    expect(refused(await check(v, await token(keyA, { aud: "https://other.example.com/mcp" }))).description).toBe(
      "audience mismatch",
    );
    expect(refused(await check(v, await token(keyA, { aud: undefined }))).description).toBe(
      "audience mismatch: the token has no aud claim",
    );
    expect(refused(await check(v, await token(keyA, { iss: "https://evil.example.com/" }))).description).toBe(
      "issuer mismatch",
    );
    expect(refused(await check(v, await token(keyA, { iss: undefined }))).description).toBe(
      "issuer mismatch: the token has no iss claim",
    );
    // aud arrays match on any member; issuer and audience lists accept any member.
    expect((await check(v, await token(keyA, { aud: ["https://other.example.com", AUD] }))).ok).toBe(true);
    const multi = verifier({ issuer: ["https://old.example.com/", ISS], audience: ["urn:a", AUD] });
    const ok = await check(multi, await token(keyA));
    expect(ok.ok && ok.principal.issuer).toBe(ISS);
  });

  it("refuses a token without exp, and one without the identity claim", async () => {
    reset([keyA]);
    const v = verifier();
    expect(refused(await check(v, await token(keyA, { exp: undefined }))).description).toBe(
      "the token has no exp claim",
    );
    expect(refused(await check(v, await token(keyA, { sub: undefined })))).toEqual({
      status: 401,
      error: "invalid_token",
      description: "the token has no sub claim",
    });
    const byEmail = verifier({ identityClaim: "email" });
    expect(refused(await check(byEmail, await token(keyA))).description).toBe("the token has no email claim");
    expect(refused(await check(byEmail, await token(keyA, { email: { nested: true } }))).description).toBe(
      "the email claim is not a string",
    );
    const ok = await check(byEmail, await token(keyA, { email: "alice@example.com" }));
    expect(ok.ok && ok.principal).toMatchObject({
      subject: "alice@example.com",
      identity: `${ISS}\nalice@example.com`,
    });
    const numeric = await check(verifier({ identityClaim: "uid" }), await token(keyA, { uid: 42 }));
    expect(numeric.ok && numeric.principal.subject).toBe("42");
  });

  it('refuses alg "none", whatever the claims', async () => {
    reset([keyA]);
    const v = verifier();
    const sec = Math.floor(t / 1000);
    const payload = b64({ iss: ISS, aud: AUD, sub: "alice", exp: sec + 300 });
    for (const header of [{ alg: "none" }, { alg: "none", typ: "JWT" }, { alg: "none", kid: "key-a" }]) {
      for (const unsecured of [`${b64(header)}.${payload}.`, `${b64(header)}.${payload}`]) {
        const outcome = refused(await check(v, unsecured));
        expect(outcome.status).toBe(401);
        expect(outcome.error).toBe("invalid_token");
        expect(["algorithm not allowed", "malformed token"]).toContain(outcome.description);
      }
    }
    expect(refused(await check(v, `${b64({ alg: "none" })}.${payload}.`)).description).toBe("algorithm not allowed");
  });

  it("refuses HS256 signed with the public key as the secret (algorithm confusion)", async () => {
    reset([keyA]);
    const v = verifier();
    const sec = Math.floor(t / 1000);
    const pem = await exportSPKI(keyA.publicKey);
    const claims = { iss: ISS, aud: AUD, sub: "alice", exp: sec + 300 };
    for (const secret of [pem, JSON.stringify(keyA.publicJwk), keyA.publicJwk.n as string]) {
      const signingInput = `${b64({ alg: "HS256", typ: "JWT", kid: "key-a" })}.${b64(claims)}`;
      const forged = `${signingInput}.${createHmac("sha256", secret).update(signingInput).digest("base64url")}`;
      expect(refused(await check(v, forged))).toEqual({
        status: 401,
        error: "invalid_token",
        description: "algorithm not allowed",
      });
    }
    // Same for an algorithm the allow-list leaves out.
    const ps = verifier({ algorithms: ["ES256"] });
    expect(refused(await check(ps, await token(keyA))).description).toBe("algorithm not allowed");
  });

  it("refuses a token signed by a key the JWKS does not hold (same kid) and a tampered payload", async () => {
    reset([keyA]);
    const v = verifier();
    expect(refused(await check(v, await token(stranger)))).toEqual({
      status: 401,
      error: "invalid_token",
      description: "signature invalid",
    });
    const good = await token(keyA);
    const [h, , s] = good.split(".");
    const sec = Math.floor(t / 1000);
    const tampered = `${h}.${b64({ iss: ISS, aud: AUD, sub: "admin", exp: sec + 300 })}.${s}`;
    expect(refused(await check(v, tampered)).description).toBe("signature invalid");
    // A flipped signature byte.
    const sig = Buffer.from(s as string, "base64url");
    sig[0] = (sig[0] as number) ^ 1;
    expect(refused(await check(v, `${h}.${good.split(".")[1]}.${sig.toString("base64url")}`)).description).toBe(
      "signature invalid",
    );
  });

  it("refuses malformed tokens and headers precisely", async () => {
    reset([keyA]);
    const v = verifier();
    const good = await token(keyA);
    const [h, p] = good.split(".");
    for (const bad of [
      "abc",
      "a.b",
      "a.b.c",
      "....",
      `${h}.${p}`,
      `${h}.${p}.x.y.z`,
      `${h}.a.c2ln`,
      `${b64("not json")}.${p}.c2ln`,
      `${h}.${b64("[1,2]")}.c2ln`,
    ]) {
      const outcome = refused(await check(v, bad));
      expect(outcome.status).toBe(401);
      expect(outcome.error).toBe("invalid_token");
      expect(outcome.description, bad).toMatch(/^(malformed token|signature invalid)$/);
    }
    expect(refused(await check(v, "abc")).description).toBe("malformed token");
    expect(refused(await check(v, `${h}.${p}.x.y.z`)).description).toBe("malformed token");
    for (const header of [
      undefined,
      "",
      "Bearer",
      "Bearer   ",
      `Basic ${Buffer.from("u:p").toString("base64")}`,
      `Token ${good}`,
    ]) {
      expect(refused(await v.verify(header))).toEqual({
        status: 401,
        error: "invalid_request",
        description: "missing bearer token",
      });
    }
    expect(refused(await v.verify("Bearer a b"))).toEqual({
      status: 401,
      error: "invalid_request",
      description: "malformed Authorization header",
    });
    expect(refused(await v.verify('Bearer "abc"')).description).toBe("malformed Authorization header");
    // Not RFC 6750 b64token syntax: a malformed request rather than a bad token.
    expect(refused(await v.verify(`Bearer ${h}.!!!.sig`))).toEqual({
      status: 401,
      error: "invalid_request",
      description: "malformed Authorization header",
    });
    // Scheme case-insensitive (RFC 7235), surrounding whitespace tolerated.
    expect((await v.verify(`bearer ${good}`)).ok).toBe(true);
    expect((await v.verify(`  BEARER   ${good}  `)).ok).toBe(true);
  });

  it("key rotation: a new kid verifies after a refetch, and the cooldown bounds refetches", async () => {
    reset([keyA]);
    const v = verifier({ jwksCooldownMs: 30_000, jwksCacheMaxAgeMs: 600_000 });
    expect((await check(v, await token(keyA))).ok).toBe(true);
    expect(jwks.fetches).toBe(1);

    // The authorization server rotates to key B; tokens signed with it arrive at once.
    jwks.keys = [keyB.publicJwk];
    t += 1_000;
    expect(refused(await check(v, await token(keyB))).description).toBe("no key matches kid");
    expect(jwks.fetches).toBe(1); // within the cooldown since the first fetch: not asked again
    // Forged kids cannot make the gateway hammer the authorization server either.
    for (let i = 0; i < 5; i++)
      expect(refused(await check(v, await token(keyB, {}, { kid: `forged-${i}` }))).description).toBe(
        "no key matches kid",
      );
    expect(jwks.fetches).toBe(1);
    // Key A is still held (the cache is fresh): its tokens still verify.
    expect((await check(v, await token(keyA))).ok).toBe(true);

    t += 30_000;
    expect((await check(v, await token(keyB))).ok).toBe(true);
    expect(jwks.fetches).toBe(2);
    // The refetched set replaced the old one: key A is gone, and the cooldown started again.
    expect(refused(await check(v, await token(keyA))).description).toBe("no key matches kid");
    expect(jwks.fetches).toBe(2);
    t += 30_000;
    expect(refused(await check(v, await token(keyA))).description).toBe("no key matches kid");
    expect(jwks.fetches).toBe(3);

    // Past the cache's max age, the set is fetched again before a known kid is used.
    t += 600_000;
    expect((await check(v, await token(keyB))).ok).toBe(true);
    expect(jwks.fetches).toBe(4);
  });

  it("one fetch serves concurrent verifications on a cold cache", async () => {
    reset([keyA]);
    const v = verifier();
    const tok = await token(keyA);
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => check(v, tok)));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(jwks.fetches).toBe(1);
  });

  it("JWKS down: 503, never accepted; failures rate-limited; recovers by itself", async () => {
    reset([keyA]);
    const v = verifier();
    const tok = await token(keyA);
    jwks.mode = "reset";
    const down = refused(await check(v, tok));
    expect(down.status).toBe(503);
    expect(down.error).toBe("temporarily_unavailable");
    expect(down.description).toMatch(/^JWKS unreachable: network error/);
    expect(down.description).not.toContain("127.0.0.1");
    expect(jwks.fetches).toBe(1);
    // Within a second of the failure, requests get 503 without asking again.
    t += 500;
    expect(refused(await check(v, tok)).status).toBe(503);
    expect(jwks.fetches).toBe(1);

    for (const [mode, description] of [
      ["500", "JWKS unreachable: HTTP 500"],
      ["badjson", "JWKS unreachable: response is not JSON"],
      ["notjwks", "JWKS unreachable: response is not a JSON Web Key Set"],
    ] as const) {
      jwks.mode = mode;
      t += 1_000;
      expect(refused(await check(v, tok))).toEqual({ status: 503, error: "temporarily_unavailable", description });
    }

    // The endpoint comes back: the next request after the retry interval fetches and verifies.
    jwks.mode = "ok";
    t += 1_000;
    expect((await check(v, tok)).ok).toBe(true);
    // Keys held and fresh: an outage does not matter until they age out.
    jwks.mode = "reset";
    const fetches = jwks.fetches;
    t += 60_000;
    expect((await check(v, await token(keyA))).ok).toBe(true);
    expect(jwks.fetches).toBe(fetches);
    // Past max age, keys are not used stale: 503 until the endpoint answers again.
    t += 600_000;
    expect(refused(await check(v, await token(keyA))).status).toBe(503);
    jwks.mode = "ok";
    t += 1_000;
    expect((await check(v, await token(keyA))).ok).toBe(true);
  });

  it("JWKS that hangs or is not listening: 503", async () => {
    reset([keyA]);
    jwks.mode = "hang";
    const slow = verifier({ jwksTimeoutMs: 150 });
    expect(refused(await check(slow, await token(keyA)))).toEqual({
      status: 503,
      error: "temporarily_unavailable",
      description: "JWKS unreachable: no answer within 150 ms",
    });
    const dead = new JwtVerifier({
      config: authJwtSchema.parse({ jwksUrl: await getDeadUrl("/jwks"), issuer: ISS, audience: AUD }),
      now,
    });
    expect(refused(await check(dead, await token(keyA)))).toEqual({
      status: 503,
      error: "temporarily_unavailable",
      description: "JWKS unreachable: network error (ECONNREFUSED)",
    });
  });

  it("inline jwks: verifies without any fetch", async () => {
    reset([keyA]);
    const config = authJwtSchema.parse({ jwks: { keys: [keyA.publicJwk] }, issuer: ISS, audience: AUD });
    const v = new JwtVerifier({ config, now });
    const ok = await check(v, await token(keyA));
    expect(ok.ok && ok.principal.identity).toBe(`${ISS}\nalice`);
    expect(refused(await check(v, await token(keyB))).description).toBe("no key matches kid");
    expect(refused(await check(v, await token(stranger))).description).toBe("signature invalid");
    expect(jwks.fetches).toBe(0);
  });

  it("no refusal's description contains the token, or any part of it", () => {
    const refusals = seen.filter((s) => !s.outcome.ok);
    expect(refusals.length).toBeGreaterThan(40);
    for (const { token: tok, outcome } of refusals) {
      if (outcome.ok) continue;
      expect(outcome.description).not.toContain(tok);
      for (const part of tok.split(".")) if (part.length >= 8) expect(outcome.description).not.toContain(part);
      expect(outcome.description).toMatch(/^[\x20-\x7e]+$/);
    }
  });
});
