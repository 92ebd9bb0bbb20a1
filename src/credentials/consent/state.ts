// The signed values the consent flow hands to a browser: the ticket in the consent link (/oauth/<upstream>/start
// ?state=…) and the OAuth `state` the authorization server returns to the callback. Each is a JSON payload and
// its HMAC-SHA256, under a key derived from the vault's (HKDF; the newest signs, every listed one verifies), so
// every replica that shares auth.vault.keys accepts what another signed. Each binds the caller, the upstream,
// a nonce (claimed once in the grant store: a replayed value is refused) and an expiry; the callback state
// also carries the PKCE verifier sealed by the vault (the browser and the authorization server see it only
// encrypted), the client id it was started with and a digest of the browser binding cookie.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { GrantVault } from "./vault.js";

/** How long a consent link and a started flow stay good: enough to sign in, short enough to be worth little. */
export const STATE_TTL_MS = 10 * 60_000;

/** The consent link's ticket: who asked for consent to which upstream, and where the gateway was reached. */
export interface StartTicket {
  typ: "start";
  /** The caller's identity digest: the grant is kept under it. */
  caller: string;
  upstream: string;
  /** The base URL (server.publicUrl or the request's origin) the callback is reached at. */
  base: string;
  nonce: string;
  /** ms since the epoch */
  exp: number;
  /** The verified subject (shown on no page; the grant keeps it for audit lines). */
  subject?: string | undefined;
}

/** The OAuth `state` of a started flow. */
export interface CallbackState {
  typ: "callback";
  caller: string;
  upstream: string;
  base: string;
  nonce: string;
  exp: number;
  /** The issuer the flow was started with ("" when the server was configured by URLs alone). */
  issuer: string;
  clientId: string;
  /** The PKCE verifier and the verified subject, sealed by the vault (AAD: the nonce). */
  sealed: string;
  /** base64url SHA-256 of the browser binding cookie set by /start. */
  browser: string;
}

type Signed = StartTicket | CallbackState;

export type StateCheck<T> = { ok: true; value: T } | { ok: false; why: string };

const INFO = "mcp-task-gateway consent state v1";

export function newNonce(): string {
  return randomBytes(16).toString("base64url");
}

export class StateSigner {
  private readonly keys: Buffer[];

  constructor(vault: GrantVault) {
    this.keys = vault.derivedKeys(INFO);
  }

  sign(value: Signed): string {
    const payload = Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
    return `${payload}.${this.mac(this.keys[0] as Buffer, payload)}`;
  }

  /** The value when it is signed by a listed key, of the type asked, and not expired at `now`. */
  verify<T extends Signed>(text: string | undefined, typ: T["typ"], now: number): StateCheck<T> {
    if (text === undefined || text === "") return { ok: false, why: "no state" };
    const dot = text.indexOf(".");
    if (dot < 0 || text.length > 8_192) return { ok: false, why: "malformed state" };
    const payload = text.slice(0, dot);
    const given = Buffer.from(text.slice(dot + 1), "base64url");
    const good = this.keys.some((key) => {
      const wanted = Buffer.from(this.mac(key, payload), "base64url");
      return wanted.length === given.length && timingSafeEqual(wanted, given);
    });
    if (!good) return { ok: false, why: "state signature does not verify" };
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return { ok: false, why: "malformed state" };
    }
    const v = value as Partial<Signed>;
    if (v.typ !== typ) return { ok: false, why: "state of another kind" };
    if (typeof v.exp !== "number" || v.exp <= now) return { ok: false, why: "state expired" };
    return { ok: true, value: value as T };
  }

  private mac(key: Buffer, payload: string): string {
    return createHmac("sha256", key).update(payload).digest("base64url");
  }
}
