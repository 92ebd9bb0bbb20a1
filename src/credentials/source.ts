// What every mode of upstreams.<name>.oauth offers the request path: given who is calling (and, for a token
// exchange, with what token), the access token this upstream is to get, or the consent link its user must
// follow first. The pipeline's credential step asks; the mode decides how the token comes about.
import type { OAuthConfig } from "../config/oauth-schema.js";

type OAuthMode = OAuthConfig["mode"];

export interface CredentialRequest {
  /** The upstream's configured name. */
  upstream: string;
  /** The caller's identity digest: what grants and exchanged tokens are kept under. */
  caller: string;
  /** The verified subject, for audit lines. */
  subject?: string | undefined;
  /** The caller's own verified bearer token (the subject_token of an exchange). Never sent anywhere else. */
  token?: string | undefined;
  /** The origin (scheme://host[:port]) of the client's request: consent links use it when server.publicUrl is unset. */
  origin: string;
  /** Skip any cached token: the upstream has just refused one. */
  fresh?: boolean | undefined;
}

export type CredentialOutcome =
  | { kind: "token"; accessToken: string }
  /** The caller has no grant for this upstream: its user must open `url` first (URL-mode elicitation). */
  | { kind: "consent"; url: string; elicitationId: string; message: string };

export interface CredentialSource {
  readonly mode: OAuthMode;
  get(req: CredentialRequest): Promise<CredentialOutcome>;
  close(): Promise<void>;
}

/** What /status shows of an upstream's credentials: the mode, and how the last requests for a token went. Never a token. */
export interface CredentialHealth {
  mode: OAuthMode;
  /** When a token (or a consent link) was last had (ms since the epoch). */
  lastOkAt?: number | undefined;
  /** The last failure, when it came after the last success: its stable reason and message (which name no secret). */
  lastError?: { at: number; reason: string; message: string } | undefined;
}

/**
 * The authorization server could not give a token (it refused, it is unreachable, the caller's token cannot be
 * exchanged). `reason` is stable (data.reason of the client's error); the message names no secret.
 */
export class CredentialError extends Error {
  override readonly name = "CredentialError";
  constructor(
    message: string,
    readonly reason: "upstream_credentials_unavailable" | "upstream_credentials_refused",
  ) {
    super(message);
  }
}

/** Told of every token the sources obtain or serve (the metrics). */
export interface CredentialObserver {
  /** kind: fetch (a new token), exchange, refresh, cache_hit, consent_required (a consent link sent); outcome: ok or error. */
  token(
    upstream: string,
    mode: OAuthMode,
    kind: "fetch" | "exchange" | "refresh" | "cache_hit" | "consent_required",
    ok: boolean,
  ): void;
}
