// The credential a replica puts on a request it forwards to another replica's internal listener (forward.ts), and
// the check the internal listener makes (internal-listener.ts). It proves, under a key only replicas know (derived
// from the secret they share through the store):
//   - which replica sent it, and what that replica decided where the request landed (rate limits counted there);
//   - that it is for this request only: its method, its path and a SHA-256 digest of its body are in the MAC;
//   - that it is fresh: it expires FORWARD_TOKEN_TTL_MS after it was made;
//   - that it is used once: its 128-bit nonce is remembered until the token expires, and a second use is refused.
// So a captured credential is worth nothing: it cannot be replayed, moved to another body or path, or kept.
// It never leaves the replicas: protocol/headers.ts drops the header from everything sent to an upstream.
//
// Format: v2.<replica, base64url>.<expiry ms>.<nonce>.<verdict>.<mac>; verdict "l" = limits decided, "-" not.
// A namespace import: crypto.hash is looked for at run time (a named import of it would not link before Node 20.12).
import * as crypto from "node:crypto";
import { FORWARDED_HEADER } from "../protocol/headers.js";
import { randomToken } from "../protocol/random-token.js";
import type { ForwardedVerdict } from "../server/exchange.js";

export { FORWARDED_HEADER };

/** How long a credential is good for: transit and a forwarded request's wait to be read, nothing more. */
export const FORWARD_TOKEN_TTL_MS = 30_000;

/** Clock skew between hosts tolerated on top of the lifetime (a token may not claim to expire later than that). */
const SKEW_MS = 5_000;

const VERSION = "v2";

/** What a credential is bound to. */
export interface ForwardedRequest {
  method: string;
  /** The path on the receiving side (the route the request came to), without the query. */
  path: string;
  body: Buffer | undefined;
}

/** The forwarding key: a key of its own, derived from the replicas' shared secret. */
export function forwardingKey(sharedSecret: Buffer): Buffer {
  return crypto.createHmac("sha256", sharedSecret).update("mcp-task-gateway replica forwarding").digest();
}

/**
 * SHA-256 in one call: crypto.hash (Node ≥ 20.12) makes no Hash object (a native handle, a stream wrapper and a
 * weak reference the collector must clear, per digest); createHash on an older Node 20.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: string) => unknown }).hash;
function sha256(data: Uint8Array, encoding: "base64url"): string;
function sha256(data: Uint8Array, encoding: "buffer"): Buffer;
function sha256(data: Uint8Array, encoding: "base64url" | "buffer"): string | Buffer {
  if (oneShot) return oneShot("sha256", data, encoding) as string | Buffer;
  const h = crypto.createHash("sha256").update(data);
  return encoding === "buffer" ? h.digest() : h.digest(encoding);
}

const NO_BODY = Buffer.alloc(0);

function bodyDigest(body: Buffer | undefined): string {
  return sha256(body ?? NO_BODY, "base64url");
}

// node:crypto's HMAC, not one assembled from SHA-256 calls: a hand-made MAC would save ≈ 20 µs of a forward's ≈ 1 ms
// (bench/investigations/forwarded-steps.ts), not worth owning cryptographic code on the replicas' trust boundary.
function mac(key: Buffer, head: string, req: ForwardedRequest): string {
  return crypto
    .createHmac("sha256", key)
    .update(`${head}\n${req.method}\n${req.path}\n${bodyDigest(req.body)}`)
    .digest("base64url");
}

/** A credential for one request, made at `now`. */
export function forwardToken(
  key: Buffer,
  replicaId: string,
  req: ForwardedRequest,
  limitsDecided: boolean,
  now: number,
): string {
  const head = `${VERSION}.${label(replicaId)}.${now + FORWARD_TOKEN_TTL_MS}.${randomToken()}.${limitsDecided ? "l" : "-"}`;
  return `${head}.${mac(key, head, req)}`;
}

/** The last replica id encoded, and its base64url: a replica mints every credential under its one id. */
let labelled: [string, string] = ["", ""];

function label(replicaId: string): string {
  if (labelled[0] !== replicaId) labelled = [replicaId, Buffer.from(replicaId).toString("base64url")];
  return labelled[1];
}

interface Parsed {
  head: string;
  replica: string;
  expiresAt: number;
  nonce: string;
  limitsDecided: boolean;
  mac: string;
}

function parse(token: string | undefined): Parsed | undefined {
  if (token === undefined || token.length > 512) return undefined;
  const parts = token.split(".");
  if (parts.length !== 6 || parts[0] !== VERSION) return undefined;
  const [, replica, expiry, nonce, verdict, given] = parts as [string, string, string, string, string, string];
  const expiresAt = Number(expiry);
  if (!/^\d{1,16}$/.test(expiry) || !Number.isSafeInteger(expiresAt) || nonce.length < 16) return undefined;
  if (verdict !== "l" && verdict !== "-") return undefined;
  return {
    head: parts.slice(0, 5).join("."),
    replica: Buffer.from(replica, "base64url").toString(),
    expiresAt,
    nonce,
    limitsDecided: verdict === "l",
    mac: given,
  };
}

declare const screenedBrand: unique symbol;
/**
 * A credential whose form and time ForwardTokenCheck.screen checked, before its request's body is read. Only screen()
 * makes one (the brand is this module's), so verify() never takes a verdict or a replica from anywhere but the header.
 */
export type Screened = Readonly<Parsed> & { readonly [screenedBrand]: true };

/** Nonces remembered at most: more credentials than this within one lifetime are refused until older ones expire. */
const MAX_REMEMBERED = 100_000;

/** The receiving side: a credential is accepted once, for the request it was made for, while it is fresh. */
export class ForwardTokenCheck {
  /** Nonce → when its credential expires; insertion order is close to expiry order (one lifetime for all). */
  private readonly used = new Map<string, number>();

  constructor(
    private readonly key: Buffer,
    private readonly maxRemembered = MAX_REMEMBERED,
  ) {}

  /**
   * The credential read, when it could be good at all (its form and its time), before its request's body is read;
   * handed to verify() once the body is in, so the credential is parsed once. Proves nothing yet.
   */
  screen(token: string | undefined, now: number): Screened | undefined {
    const p = parse(token);
    return p !== undefined && fresh(p, now) ? (p as Screened) : undefined;
  }

  /**
   * The verdict the credential carries, when it is good for `req` and was never used; else undefined. `token`: as
   * it came, or as screen() read it (its time is checked again: the body took time to arrive).
   */
  verify(token: string | Screened | undefined, req: ForwardedRequest, now: number): ForwardedVerdict | undefined {
    const p = typeof token === "object" ? token : parse(token);
    if (!p || !fresh(p, now)) return undefined;
    const given = Buffer.from(p.mac);
    const wanted = Buffer.from(mac(this.key, p.head, req));
    if (given.byteLength !== wanted.byteLength || !crypto.timingSafeEqual(given, wanted)) return undefined;
    this.forgetExpired(now);
    if (this.used.has(p.nonce) || this.used.size >= this.maxRemembered) return undefined;
    this.used.set(p.nonce, p.expiresAt);
    return { replica: p.replica, limitsDecided: p.limitsDecided };
  }

  /** How many nonces are remembered now. */
  get remembered(): number {
    return this.used.size;
  }

  private forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of this.used) {
      // A token whose clock ran a little ahead may sit behind one that expires later: the sweep stops at the
      // first live one, and the skew allowance bounds how long an expired one can wait behind it.
      if (expiresAt + SKEW_MS > now) break;
      this.used.delete(nonce);
    }
  }
}

function fresh(p: Readonly<Parsed>, now: number): boolean {
  return p.expiresAt + SKEW_MS > now && p.expiresAt - now <= FORWARD_TOKEN_TTL_MS + SKEW_MS;
}
