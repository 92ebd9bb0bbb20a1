// Who is calling: a digest of the caller's credentials, never the credentials
// themselves. MRTR state (and tasks, later) is bound to it, and pooled upstream
// sessions are keyed by (and carry) the credential-bearing headers.
import { createHash } from "node:crypto";

/**
 * The caller's identity digest: of its credential headers by default, or of a
 * configured identity header. Hashed either way, with a different prefix so the
 * two sources can never collide.
 */
export function callerIdentity(value: string | undefined, fromIdentityHeader = false): string {
  return createHash("sha256")
    .update(fromIdentityHeader ? "id:" : "auth:")
    .update(value ?? "")
    .digest("base64url");
}

/**
 * Headers that authorize the caller upstream. Only these go on pooled session
 * requests and into the pool key: per-request headers (trace ids, user agents)
 * must not split sessions.
 */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "x-api-key"]);

export function credentialHeaders(rawHeaders: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (CREDENTIAL_HEADERS.has(name)) out.push(name, rawHeaders[i + 1] as string);
  }
  return out;
}

/**
 * Remembers recent identity digests: a poller sends the same credentials on
 * every tasks/get, and hashing them each time showed in CPU profiles. Bounded,
 * oldest first out; the digest is the same either way.
 */
export class IdentityCache {
  private readonly cache = new Map<string, string>();

  constructor(private readonly max = 1_024) {}

  of(value: string | undefined, fromIdentityHeader: boolean): string {
    const key = `${fromIdentityHeader ? "1" : "0"}${value ?? ""}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const digest = callerIdentity(value, fromIdentityHeader);
    if (this.cache.size >= this.max) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(key, digest);
    return digest;
  }
}
