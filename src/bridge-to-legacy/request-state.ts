// MRTR `requestState`: an opaque, tamper-proof pointer from a client's retry to
// the upstream call still running inside the gateway. The client holds it, so it
// is attacker-controlled: it is HMAC-signed, expires, and is bound to the caller,
// the method and a digest of the request's salient params (MRTR §Server Requirements).
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { canonicalJson, isRecord, type JsonObject } from "../protocol/json.js";

export interface RequestStateClaims {
  /** Exchange id: 128 random bits. */
  x: string;
  /** Caller identity digest. */
  p: string;
  m: string;
  /** Digest of the params that identify the request. */
  d: string;
  /** Expiry, ms since epoch. */
  e: number;
  /** The replica holding the parked call (a retry landing elsewhere is forwarded there). */
  r?: string;
}

export type OpenResult =
  | { ok: true; claims: RequestStateClaims }
  | { ok: false; reason: "malformed" | "bad_signature" | "expired" | "wrong_caller" | "wrong_request" };

export function newExchangeId(): string {
  return randomBytes(16).toString("base64url");
}

/** What must stay the same between an MRTR round and its retry: the target and its arguments. */
export function paramsDigest(method: string, params: JsonObject): string {
  const { _meta: _m, inputResponses: _ir, requestState: _rs, task: _t, ...salient } = params;
  return createHash("sha256").update(method).update("\0").update(canonicalJson(salient)).digest("base64url");
}

export class RequestStateCodec {
  private readonly key: Buffer;

  constructor(
    private readonly now: () => number,
    key: Buffer = randomBytes(32),
  ) {
    if (key.byteLength < 32) throw new Error("requestState key must have at least 32 bytes");
    this.key = key;
  }

  private mac(payload: string): Buffer {
    return createHmac("sha256", this.key).update(payload).digest();
  }

  seal(claims: Omit<RequestStateClaims, "e">, ttlMs: number): string {
    const payload = Buffer.from(JSON.stringify({ ...claims, e: this.now() + ttlMs })).toString("base64url");
    return `${payload}.${this.mac(payload).toString("base64url")}`;
  }

  /** `expect.d` is computed only after the signature checks out, so unauthenticated input costs no digest. */
  open(token: unknown, expect: { p: string; m: string; d: string | (() => string) }): OpenResult {
    if (typeof token !== "string" || token.length > 4096) return { ok: false, reason: "malformed" };
    const dot = token.indexOf(".");
    if (dot <= 0) return { ok: false, reason: "malformed" };
    const payload = token.slice(0, dot);
    // Compared as canonical text: base64url's unused trailing bits must not admit a second valid signature.
    const given = Buffer.from(token.slice(dot + 1));
    const wanted = Buffer.from(this.mac(payload).toString("base64url"));
    if (given.byteLength !== wanted.byteLength || !timingSafeEqual(given, wanted)) {
      return { ok: false, reason: "bad_signature" };
    }
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return { ok: false, reason: "malformed" };
    }
    if (
      !isRecord(claims) ||
      typeof claims.x !== "string" ||
      typeof claims.p !== "string" ||
      typeof claims.m !== "string" ||
      typeof claims.d !== "string" ||
      typeof claims.e !== "number"
    ) {
      return { ok: false, reason: "malformed" };
    }
    if (claims.e <= this.now()) return { ok: false, reason: "expired" };
    if (claims.p !== expect.p) return { ok: false, reason: "wrong_caller" };
    if (claims.m !== expect.m) return { ok: false, reason: "wrong_request" };
    let digest: string;
    try {
      digest = typeof expect.d === "function" ? expect.d() : expect.d;
    } catch {
      return { ok: false, reason: "malformed" };
    }
    if (claims.d !== digest) return { ok: false, reason: "wrong_request" };
    if (claims.r !== undefined && typeof claims.r !== "string") return { ok: false, reason: "malformed" };
    return { ok: true, claims: claims as unknown as RequestStateClaims };
  }
}
