// Verified identity (auth.jwt): a bearer token is accepted only when it is a
// JWT whose signature verifies under the configured keys with an allowed
// algorithm, whose issuer and audience are the configured ones, which is within
// its validity (exp, nbf; with clock tolerance), and which names the caller in
// the identity claim. Everything else is refused with a precise description
// (which check failed) and never with the token or anything taken from it.
// Keys that cannot be fetched give 503: a token is never accepted unverified.
import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from "jose";
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { LRUCache } from "lru-cache";
import { JwksUnavailable, keySource, type KeySource } from "./jwks.js";

/** The auth.jwt block, defaults filled in. */
export type JwtConfig = NonNullable<GatewayConfig["auth"]>["jwt"];

export interface Principal {
  /** Stable across token refreshes: `${issuer}\n${subject}`. Issuers contain no whitespace (config), so it is unambiguous. */
  identity: string;
  /** The token's iss, one of the configured issuers. */
  issuer: string;
  /** The identity claim's value (a string; an integer claim as its decimal text). */
  subject: string;
  /** The verified payload, deeply frozen. */
  claims: Readonly<Record<string, unknown>>;
}

export type AuthOutcome =
  | { ok: true; principal: Principal }
  /** No valid token: 401 with an RFC 6750 challenge. `description` says which check failed; it never contains the token. */
  | { ok: false; status: 401; error: "invalid_request" | "invalid_token"; description: string }
  /** The keys cannot be fetched (JWKS unreachable): 503, nothing accepted unverified. */
  | { ok: false; status: 503; error: "temporarily_unavailable"; description: string };

type AuthRefusal = Extract<AuthOutcome, { ok: false }>;

export interface JwtVerifierOptions {
  config: JwtConfig;
  /** Milliseconds since the epoch: judges exp/nbf and the JWKS cache ages. Default Date.now. */
  now?: () => number;
  /** For the JWKS fetch. Default the global fetch. */
  fetch?: typeof fetch;
  /** After a failed JWKS fetch, how long requests that need one get 503 without a new fetch. */
  retryAfterFailureMs?: number;
  /** JWKS fetch failures are logged here (URL redacted). */
  log?: Logger;
}

/** RFC 6750 §2.1 b64token. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

export type BearerParse = { ok: true; token: string } | { ok: false; description: string; credentials: boolean };

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
 * `credentials` is false when the request carried no bearer credentials at all
 * (no header, or another scheme): RFC 6750 §3.1 then wants a challenge without
 * an error code.
 */
export function parseBearer(authorization: string | undefined): BearerParse {
  const value = authorization?.trim() ?? "";
  const match = /^bearer(?:\s+(.*))?$/is.exec(value);
  if (!match) return { ok: false, description: "missing bearer token", credentials: false };
  const token = match[1]?.trim() ?? "";
  if (token === "") return { ok: false, description: "missing bearer token", credentials: true };
  if (!B64TOKEN.test(token)) return { ok: false, description: "malformed Authorization header", credentials: true };
  return { ok: true, token };
}

function refuse(error: "invalid_request" | "invalid_token", description: string): AuthRefusal & { status: 401 } {
  return { ok: false, status: 401, error, description };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** jose's failures in words: which check failed, nothing from the token. */
function describeJoseError(err: unknown): AuthRefusal {
  if (err instanceof JwksUnavailable) {
    return { ok: false, status: 503, error: "temporarily_unavailable", description: err.message };
  }
  if (err instanceof errors.JWTExpired) return refuse("invalid_token", "token expired");
  if (err instanceof errors.JWTClaimValidationFailed) {
    const missing = err.reason === "missing";
    switch (err.claim) {
      case "iss":
        return refuse("invalid_token", missing ? "issuer mismatch: the token has no iss claim" : "issuer mismatch");
      case "aud":
        return refuse("invalid_token", missing ? "audience mismatch: the token has no aud claim" : "audience mismatch");
      case "exp":
        return refuse("invalid_token", missing ? "the token has no exp claim" : "the exp claim is not a number");
      case "nbf":
        return refuse(
          "invalid_token",
          err.reason === "check_failed" ? "token not yet valid (nbf)" : "the nbf claim is not a number",
        );
      case "iat":
        return refuse("invalid_token", "the iat claim is not a number");
      default:
        return refuse("invalid_token", "token claims invalid");
    }
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return refuse("invalid_token", "algorithm not allowed");
  if (err instanceof errors.JWSSignatureVerificationFailed) return refuse("invalid_token", "signature invalid");
  if (err instanceof errors.JWKSNoMatchingKey) return refuse("invalid_token", "no key matches kid");
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid)
    return refuse("invalid_token", "malformed token");
  // A key of the right type whose import failed, a weak RSA key, a key set serving private keys, crit headers…
  if (err instanceof errors.JOSENotSupported || err instanceof errors.JWKSInvalid || err instanceof errors.JWKInvalid) {
    return refuse("invalid_token", "no usable key for the token's algorithm");
  }
  return refuse("invalid_token", "token could not be verified");
}

export class JwtVerifier {
  private readonly getKey: JWTVerifyGetKey;
  /**
   * Tokens that verified, with how long that holds: the signature check is the
   * cost of auth (100-200 µs of CPU), and a poller repeats the same token. Keyed
   * by the token itself, so only the very same bytes hit; bounded, LRU.
   */
  private readonly verified:
    LRUCache<string, { outcome: Extract<AuthOutcome, { ok: true }>; until: number }> | undefined;
  private readonly keys: KeySource;
  private readonly now: () => number;
  private readonly config: JwtConfig;

  constructor(options: JwtVerifierOptions) {
    this.config = options.config;
    this.now = options.now ?? Date.now;
    const c = options.config;
    this.keys = keySource(c, {
      timeoutMs: c.jwksTimeoutMs,
      cacheMaxAgeMs: c.jwksCacheMaxAgeMs,
      cooldownMs: c.jwksCooldownMs,
      now: this.now,
      ...(options.retryAfterFailureMs !== undefined && { retryAfterFailureMs: options.retryAfterFailureMs }),
      ...(options.fetch && { fetch: options.fetch }),
      ...(options.log && { log: options.log }),
    });
    this.getKey = this.keys.getKey;
    this.verified = c.verifiedCacheMs > 0 ? new LRUCache({ max: c.verifiedCacheEntries }) : undefined;
  }

  /** Why tokens cannot be verified right now (the JWKS cannot be fetched), for readiness; undefined when they can. */
  keysUnavailable(): string | undefined {
    return this.keys.failure();
  }

  /** Judges an Authorization header value. Never throws. */
  async verify(authorization: string | undefined): Promise<AuthOutcome> {
    const bearer = parseBearer(authorization);
    if (!bearer.ok) return refuse("invalid_request", bearer.description);
    const now = this.now();
    const cached = this.verified?.get(bearer.token);
    // A remembered verification holds only while the token itself is still within its exp (with the tolerance).
    if (cached && now < cached.until) return cached.outcome;
    const outcome = await this.judge(bearer.token);
    if (outcome.ok && this.verified) {
      const exp = (outcome.principal.claims.exp as number) * 1000 + this.config.clockToleranceSec * 1000;
      this.verified.set(bearer.token, { outcome, until: Math.min(exp, now + this.config.verifiedCacheMs) });
    }
    return outcome;
  }

  /** The full check of one token: signature, algorithm, claims, identity. */
  private async judge(token: string): Promise<AuthOutcome> {
    let payload: JWTPayload;
    try {
      payload = await this.verifyToken(token);
    } catch (err) {
      return describeJoseError(err);
    }
    const claim = this.config.identityClaim;
    const value = Object.hasOwn(payload, claim) ? payload[claim] : undefined;
    let subject: string;
    if (typeof value === "string" && value !== "") subject = value;
    else if (typeof value === "number" && Number.isSafeInteger(value)) subject = String(value);
    else if (value === undefined || value === null || value === "")
      return refuse("invalid_token", `the token has no ${claim} claim`);
    else return refuse("invalid_token", `the ${claim} claim is not a string`);
    // jwtVerify checked iss against the configured issuer(s), which are strings.
    const issuer = payload.iss as string;
    return {
      ok: true,
      principal: {
        identity: `${issuer}\n${subject}`,
        issuer,
        subject,
        claims: deepFreeze(payload as Record<string, unknown>),
      },
    };
  }

  private async verifyToken(token: string): Promise<JWTPayload> {
    const c = this.config;
    const options: JWTVerifyOptions = {
      algorithms: [...c.algorithms],
      issuer: typeof c.issuer === "string" ? c.issuer : [...c.issuer],
      audience: typeof c.audience === "string" ? c.audience : [...c.audience],
      clockTolerance: c.clockToleranceSec,
      currentDate: new Date(this.now()),
      // A token without exp never expires: not one the gateway honours.
      requiredClaims: ["exp"],
    };
    try {
      return (await jwtVerify(token, this.getKey, options)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
      // No kid, several keys of the token's type (a key set mid-rotation): jose leaves trying each to the caller.
      for await (const key of err) {
        try {
          return (await jwtVerify(token, key, options)).payload;
        } catch (inner) {
          if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  }
}
