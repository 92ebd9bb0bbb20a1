// Where the verification keys come from: an inline JSON Web Key Set, or one
// fetched from the authorization server's jwks_uri and cached.
//
// The remote set is the gateway's own small cache around jose's local key
// matching (createLocalJWKSet: kid, kty, alg, use, key_ops; public keys only),
// rather than jose's createRemoteJWKSet, for two reasons:
//   - every age and cooldown is measured on the injected clock, so behaviour is
//     testable without waiting and the same clock judges tokens and keys;
//   - a failed fetch is remembered for a moment (RETRY_AFTER_FAILURE_MS), so an
//     authorization server that is down is asked about once a second, not once
//     per request; and failures are classified (timeout, HTTP status, not JSON…)
//     for the 503 description and the log, never with the URL's secrets.
// Rules:
//   - no keys yet, or keys older than cacheMaxAgeMs: fetch before verifying (one
//     fetch shared by every waiting request); stale keys are never used;
//   - a token names a kid the set lacks: fetch again, unless the last fetch
//     started less than cooldownMs ago (then "no matching key");
//   - a failed fetch: the request that waited for it, and the next ones for
//     RETRY_AFTER_FAILURE_MS, get JwksUnavailable (503); then a request tries again.
//     Keys already held stay in use until their max age.
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { redactUrl, type Logger } from "../log/logger.js";
import { BodyTooLargeError, readBodyText } from "../web/read-text.js";

/** The keys cannot be had right now: the request gets 503, never acceptance. `reason` names no URL. */
export class JwksUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`JWKS unreachable: ${reason}`);
    this.name = "JwksUnavailable";
  }
}

/** A JWKS larger than this is refused: real ones are a few KiB. */
const MAX_JWKS_BYTES = 512 * 1024;
/** After a failed fetch, requests that need one get 503 at once for this long. */
const RETRY_AFTER_FAILURE_MS = 1_000;

export interface RemoteJwksOptions {
  url: string;
  timeoutMs: number;
  cacheMaxAgeMs: number;
  cooldownMs: number;
  /** Milliseconds since the epoch. */
  now: () => number;
  retryAfterFailureMs?: number;
  fetch?: typeof fetch;
  log?: Logger;
}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

class HttpStatusError extends Error {
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}

async function readLimited(res: Response, limit: number): Promise<string> {
  if (Number(res.headers.get("content-length")) > limit) {
    await res.body?.cancel().catch(() => {});
    throw new BodyTooLargeError(limit);
  }
  return readBodyText(res.body, limit);
}

/** Why a fetch failed, in words fit for a client: no URL, no response body. */
function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof HttpStatusError) return `HTTP ${err.status}`;
  if (err instanceof BodyTooLargeError) return `response larger than ${MAX_JWKS_BYTES} bytes`;
  if (err instanceof SyntaxError) return "response is not JSON";
  if (err instanceof errors.JWKSInvalid) return "response is not a JSON Web Key Set";
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
    return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === "string") return `network error (${cause.code})`;
  return "network error";
}

class RemoteJwks {
  private keys: { set: LocalSet; fetchedAt: number } | undefined;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private lastFailure: { at: number; reason: string } | undefined;
  private pending: Promise<void> | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly retryAfterFailureMs: number;

  /** Why the last fetch failed, while no fetch has succeeded since (readiness); undefined when the keys are fine. */
  get failure(): string | undefined {
    return this.lastFailure?.reason;
  }

  constructor(private readonly options: RemoteJwksOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.retryAfterFailureMs = options.retryAfterFailureMs ?? RETRY_AFTER_FAILURE_MS;
  }

  /** For jose's jwtVerify. Throws JwksUnavailable, or jose's JWKSNoMatchingKey (and the rest of createLocalJWKSet's errors). */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const now = this.options.now();
    if (!this.keys || now - this.keys.fetchedAt >= this.options.cacheMaxAgeMs) await this.refresh(now);
    const held = this.keys as { set: LocalSet };
    try {
      return await held.set(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      // A rotated key the cached set does not have yet, or a forged kid: the cooldown bounds the fetches either causes.
      if (!this.pending && now - this.lastAttemptAt < this.options.cooldownMs) throw err;
      await this.refresh(now);
      return (this.keys as { set: LocalSet }).set(header, token);
    }
  };

  private refresh(now: number): Promise<void> {
    if (this.pending) return this.pending;
    if (this.lastFailure && now - this.lastFailure.at < this.retryAfterFailureMs) {
      return Promise.reject(new JwksUnavailable(this.lastFailure.reason));
    }
    this.lastAttemptAt = now;
    const pending = this.load().finally(() => {
      if (this.pending === pending) this.pending = undefined;
    });
    this.pending = pending;
    return pending;
  }

  private async load(): Promise<void> {
    const { url, timeoutMs } = this.options;
    try {
      const res = await this.fetchImpl(url, {
        headers: { accept: "application/jwk-set+json, application/json" },
        // A redirect is an answer other than the key set: refused like any non-200 (as jose does).
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        throw new HttpStatusError(res.status);
      }
      const set = createLocalJWKSet(JSON.parse(await readLimited(res, MAX_JWKS_BYTES)) as JSONWebKeySet);
      this.keys = { set, fetchedAt: this.options.now() };
      this.lastFailure = undefined;
    } catch (err) {
      const reason = describeFailure(err, timeoutMs);
      this.lastFailure = { at: this.options.now(), reason };
      this.options.log?.warn("cannot fetch the JWKS", { url: redactUrl(url), reason });
      throw new JwksUnavailable(reason);
    }
  }
}

export interface KeySource {
  /** For jose's jwtVerify. */
  getKey: JWTVerifyGetKey;
  /** Why the keys cannot be fetched right now, or undefined (inline keys never fail). */
  failure(): string | undefined;
}

/** The verification keys, inline or remote, as jose's key lookup. */
export function keySource(
  jwks: { jwksUrl?: string | undefined; jwks?: unknown },
  remote: Omit<RemoteJwksOptions, "url">,
): KeySource {
  if (jwks.jwks !== undefined)
    return { getKey: createLocalJWKSet(jwks.jwks as JSONWebKeySet), failure: () => undefined };
  if (jwks.jwksUrl === undefined) throw new Error("auth.jwt needs jwksUrl or jwks");
  const set = new RemoteJwks({ ...remote, url: jwks.jwksUrl });
  return { getKey: set.getKey, failure: () => set.failure };
}
