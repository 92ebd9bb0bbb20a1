// Who is calling: a digest of the caller's credentials (as the client sent them), never the credentials
// themselves. MRTR state (and tasks, later) is bound to it, and pooled upstream
// sessions are keyed by (and carry) the credential-bearing headers.
import type { VerifiedCaller } from "./auth-gate.js";
import { canonicalJson } from "../../protocol/json.js";
import { DigestCache, sha256Base64url } from "../../protocol/digest.js";
import type { PolicySet } from "./policy-set.js";

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

/**
 * Whether a header name of this length can be a credential header: the others are not lower-cased to be
 * looked up (every request's identity reads all its headers, and a client sends them capitalized: a new
 * string each).
 */
const CREDENTIAL_LENGTH: readonly boolean[] = (() => {
  const lengths: boolean[] = [];
  for (const name of CREDENTIAL_HEADERS) lengths[name.length] = true;
  return lengths;
})();

/** `identityHeader`: the header that carries a verified subject upstream (auth.upstreamCredentials "identity"). */
export function credentialHeaders(rawHeaders: readonly string[], identityHeader?: string): string[] {
  const out: string[] = [];
  const identityLength = identityHeader?.length;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i] as string;
    if (CREDENTIAL_LENGTH[raw.length] !== true && raw.length !== identityLength) continue;
    const name = raw.toLowerCase();
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
 * Who is calling, per the policy in force: who a verified token says (auth.jwt: issuer + identity claim, the
 * same across refreshes), else the configured identity header, else whoever the credential headers
 * (Authorization, Cookie, X-Api-Key) the client sent say. One per gateway, shared by every route; it keeps the
 * digest cache. The request-level view (server/identify.ts) feeds it the client's own headers.
 */
export class Callers {
  private readonly identities = new IdentityCache();
  /** The digest of a caller without credentials (a gateway without auth): the same text every time, hashed once. */
  private anonymous: string | undefined;

  /** The identity digest from its parts. */
  digest(
    verified: VerifiedCaller | undefined,
    set: Pick<PolicySet, "identityHeader"> | undefined,
    header: (name: string) => string | undefined,
    credentials: () => string[],
  ): string {
    if (verified) return this.identities.of(verified.identity, "jwt");
    if (set?.identityHeader) return this.identities.of(header(set.identityHeader), "header");
    const list = credentials();
    if (list.length === 0) return (this.anonymous ??= this.identities.of(canonicalJson(list), "credentials"));
    return this.identities.of(canonicalJson(list), "credentials");
  }
}

/**
 * How audit lines name the caller: never a token, so a credential-hashed caller has only its digest, and so has
 * one whose identity header is itself a credential header (tasks.identityHeader: "Authorization").
 */
export function auditSubject(
  verified: VerifiedCaller | undefined,
  set: PolicySet,
  header: (name: string) => string | undefined,
): string | undefined {
  const name = set.identityHeader;
  return verified?.subject ?? (name && !CREDENTIAL_HEADERS.has(name) ? header(name) : undefined);
}
