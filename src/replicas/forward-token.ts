// The credential a replica puts on a request it forwards to another replica's internal listener (forward.ts):
// the sending replica, a timestamp, and an HMAC of both under a key only replicas know (derived from the secret
// they share through the store). The internal listener accepts nothing else.
//
// A token carries no nonce and may be presented again for as long as it is fresh, so a sender reuses one for a
// second and a receiver remembers the ones it verified: the HMAC is computed once per second per pair of
// replicas, not twice per forwarded request.
import { createHmac, timingSafeEqual } from "node:crypto";

/** The header a forwarded request carries its credential in. */
export const FORWARDED_HEADER = "mcp-gateway-forwarded";

/** How old a forwarding credential may be (clock skew between hosts plus transit). */
const FORWARD_TOKEN_MAX_AGE_MS = 60_000;

/** The forwarding key: a key of its own, derived from the replicas' shared secret. */
export function forwardingKey(sharedSecret: Buffer): Buffer {
  return createHmac("sha256", sharedSecret).update("mcp-task-gateway replica forwarding").digest();
}

export function forwardToken(key: Buffer, replicaId: string, now: number): string {
  const claim = `${replicaId}.${now}`;
  return `${claim}.${createHmac("sha256", key).update(claim).digest("base64url")}`;
}

/** The time a token was made at ("<replica>.<time>.<mac>"); NaN when it has none. */
function tokenTime(token: string): number {
  const last = token.lastIndexOf(".");
  return last <= 0 ? Number.NaN : Number(token.slice(token.lastIndexOf(".", last - 1) + 1, last));
}

export function verifyForwardToken(key: Buffer, token: string | undefined, now: number): boolean {
  if (token === undefined || token.length > 256) return false;
  const last = token.lastIndexOf(".");
  if (last <= 0) return false;
  const given = Buffer.from(token.slice(last + 1));
  const wanted = Buffer.from(createHmac("sha256", key).update(token.slice(0, last)).digest("base64url"));
  if (given.byteLength !== wanted.byteLength || !timingSafeEqual(given, wanted)) return false;
  const at = tokenTime(token);
  return Number.isFinite(at) && Math.abs(now - at) <= FORWARD_TOKEN_MAX_AGE_MS;
}

/** How long a sender reuses a token: far inside FORWARD_TOKEN_MAX_AGE_MS, so a reused one is never near stale. */
const REUSE_MS = 1_000;

/** The tokens one replica sends: a new one each REUSE_MS. */
export class ForwardTokens {
  private token = "";
  private issuedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly key: Buffer,
    private readonly replicaId: string,
  ) {}

  current(now: number): string {
    if (now - this.issuedAt >= REUSE_MS || now < this.issuedAt) {
      this.token = forwardToken(this.key, this.replicaId, now);
      this.issuedAt = now;
    }
    return this.token;
  }
}

/** Tokens remembered as verified: each sender has one live token at a time, so this bounds a few dozen replicas. */
const REMEMBERED = 64;

/** The receiving side: verifyForwardToken, with the tokens verified lately remembered until they go stale. */
export class ForwardTokenCheck {
  /** Token → the time in it; insertion order is age order. */
  private readonly verified = new Map<string, number>();

  constructor(private readonly key: Buffer) {}

  verify(token: string | undefined, now: number): boolean {
    if (token === undefined) return false;
    const at = this.verified.get(token);
    if (at !== undefined) {
      if (Math.abs(now - at) <= FORWARD_TOKEN_MAX_AGE_MS) return true;
      this.verified.delete(token);
      return false;
    }
    if (!verifyForwardToken(this.key, token, now)) return false;
    if (this.verified.size >= REMEMBERED) {
      const [oldest] = this.verified.keys();
      if (oldest !== undefined) this.verified.delete(oldest);
    }
    this.verified.set(token, tokenTime(token));
    return true;
  }
}
