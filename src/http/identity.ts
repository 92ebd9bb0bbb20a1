// Who is calling: a digest of the caller's credentials, never the credentials
// themselves. MRTR state (and tasks, later) is bound to it, and pooled upstream
// sessions are keyed by (and carry) the credential-bearing headers.
import type { Context } from "hono";
import type { Caller } from "../calls/caller.js";
import { canonicalJson } from "../protocol/json.js";
import { DigestCache, sha256Base64url } from "../protocol/digest.js";
import { rawRequestHeaders, requestHeader, type NodeEnv } from "./node-env.js";
import type { PolicySet } from "./policy-set.js";
import { verifiedCaller, type VerifiedCaller } from "./request-auth.js";
import { traceHeaders } from "../telemetry/trace.js";

/** Where a caller's identity comes from; each hashes under its own prefix, so two sources never collide. */
export type IdentitySource = "credentials" | "header" | "jwt";

const PREFIX: Record<IdentitySource, string> = { credentials: "auth:", header: "id:", jwt: "jwt:" };

/**
 * The caller's identity digest: of its credential headers by default, of a
 * configured identity header, or of a verified token's issuer and identity
 * claim (auth.jwt), which stay the same when the client refreshes its token.
 */
export function callerIdentity(value: string | undefined, source: IdentitySource = "credentials"): string {
  return sha256Base64url(`${PREFIX[source]}${value ?? ""}`);
}

/**
 * Headers that authorize the caller upstream. Only these go on pooled session
 * requests and into the pool key: per-request headers (trace ids, user agents)
 * must not split sessions.
 */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "x-api-key"]);

/** `identityHeader`: the header that carries a verified subject upstream (auth.upstreamCredentials "identity"). */
export function credentialHeaders(rawHeaders: readonly string[], identityHeader?: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (CREDENTIAL_HEADERS.has(name) || name === identityHeader) out.push(name, rawHeaders[i + 1] as string);
  }
  return out;
}

/** Recent identity digests (see DigestCache): a poller sends the same credentials on every tasks/get. */
export class IdentityCache {
  private readonly digests: DigestCache;

  constructor(max = 1_024) {
    this.digests = new DigestCache(max);
  }

  /** How many digests are kept. */
  get size(): number {
    return this.digests.size;
  }

  /** callerIdentity(value, source), remembered. */
  of(value: string | undefined, source: IdentitySource): string {
    return this.digests.of(`${PREFIX[source]}${value ?? ""}`);
  }
}

/**
 * Who is calling, per the policy in force: who a verified token says (auth.jwt:
 * issuer + identity claim, the same across refreshes), else the configured
 * identity header, else whoever the credential headers (Authorization, Cookie,
 * X-Api-Key) say. One per gateway, shared by every route; it keeps the digest cache.
 */
export class Callers {
  private readonly identities = new IdentityCache();

  /** `credentials`: the request's credential headers when the caller has them at hand already. */
  of(c: Context, env: NodeEnv | undefined, set: PolicySet, credentials?: string[]): string {
    return this.digest(
      verifiedCaller(c),
      set,
      (name) => requestHeader(c, env, name),
      () => credentials ?? credentialHeaders(rawRequestHeaders(c, env)),
    );
  }

  /**
   * The identity digest from its parts, without a Hono context: what `of` computes, and what the lean
   * tasks/get path (http/task-poll-path.ts) computes from the Node request itself.
   */
  digest(
    verified: VerifiedCaller | undefined,
    set: PolicySet,
    header: (name: string) => string | undefined,
    credentials: () => string[],
  ): string {
    if (verified) return this.identities.of(verified.identity, "jwt");
    if (set.identityHeader) return this.identities.of(header(set.identityHeader), "header");
    return this.identities.of(canonicalJson(credentials()), "credentials");
  }

  /**
   * The caller of every route (calls/caller.ts), computed one way for all of them: the identity digest, how
   * audit lines name it, the verified claims, the credential headers that travel on upstream sessions (with
   * the verified subject's header in auth.upstreamCredentials "identity"), and the headers as the upstream
   * sees them. `signal`: the route's own (it decides when a request's end matters, and may stop it itself).
   */
  identify(c: Context, env: NodeEnv | undefined, set: PolicySet, signal: AbortSignal): Caller {
    const raw = rawRequestHeaders(c, env);
    const credentials = credentialHeaders(
      raw,
      set.auth?.upstreamCredentials === "identity" ? set.auth.upstreamIdentityHeader : undefined,
    );
    const caller = this.of(c, env, set, credentials);
    const verified = verifiedCaller(c);
    return {
      caller,
      subject: this.subject(c, env, set),
      claims: verified?.claims,
      // A verified caller never shares a pooled upstream session with another subject, even when the token is not forwarded.
      partition: verified ? caller : undefined,
      credentialHeaders: credentials,
      upstreamHeaders: raw,
      traceHeaders: traceHeaders(raw),
      signal,
    };
  }

  /**
   * How audit lines name the caller: never a token, so a credential-hashed caller has only its digest, and
   * so has one whose identity header is itself a credential header (tasks.identityHeader: "Authorization").
   */
  subject(c: Context, env: NodeEnv | undefined, set: PolicySet): string | undefined {
    const header = set.identityHeader;
    return (
      verifiedCaller(c)?.subject ??
      (header && !CREDENTIAL_HEADERS.has(header) ? requestHeader(c, env, header) : undefined)
    );
  }
}
