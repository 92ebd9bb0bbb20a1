// Who is calling: a digest of the caller's credentials, never the credentials
// themselves. MRTR state (and tasks, later) is bound to it, and pooled upstream
// sessions are keyed by (and carry) the credential-bearing headers.
import { createHash } from "node:crypto";

export function callerIdentity(authorization: string | undefined): string {
  return createHash("sha256").update(authorization ?? "").digest("base64url");
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
