// userConsent: each caller's own grant for an upstream. get() gives the caller's access token, refreshed with
// its refresh token shortly before it expires (one refresh per caller at a time in this process); a caller
// with no grant (or one the server no longer honours) gets the consent link instead, which the pipeline's
// credential step turns into a URL elicitation. The link's flow (start, callback, revoke) is in flow.ts.
import type { OAuthConfig } from "../../config/oauth-schema.js";
import type { Logger } from "../../log/logger.js";
import {
  CredentialError,
  type CredentialObserver,
  type CredentialOutcome,
  type CredentialRequest,
  type CredentialSource,
} from "../source.js";
import { tokenRequest, TokenEndpointError, type AuthServerMetadata, type ClientAuth } from "../token-endpoint.js";
import { ConsentAuthority } from "./authority.js";
import type { GrantSlot, GrantStore, StoredGrant } from "./grant-store.js";
import { newNonce, STATE_TTL_MS, type StateSigner } from "./state.js";

/** What the consent flow's events are told (audit lines, metrics): never a token. */
export interface ConsentEvents {
  granted(upstream: string, who: { subject?: string | undefined; caller: string }): void;
  used(upstream: string, who: { subject?: string | undefined; caller: string }): void;
  revoked(upstream: string, who: { subject?: string | undefined; caller: string }, by: "caller" | "operator"): void;
}

export interface ConsentSourceParts {
  store: GrantStore;
  signer: StateSigner;
  events: ConsentEvents;
  observer: CredentialObserver | undefined;
  log: Logger;
  now: () => number;
}

/** The callback URL of an upstream under `base` (server.publicUrl or the request's origin). */
export function callbackUrl(base: string, upstream: string): string {
  return `${base.replace(/\/$/, "")}/oauth/${encodeURIComponent(upstream)}/callback`;
}

export class ConsentSource implements CredentialSource {
  readonly mode = "userConsent" as const;
  private readonly refreshing = new Map<string, Promise<CredentialOutcome>>();

  constructor(
    readonly upstream: string,
    readonly oauth: OAuthConfig,
    /** The RFC 8707 resource every code and refresh request names. */
    readonly resource: string,
    readonly authority: ConsentAuthority,
    readonly parts: ConsentSourceParts,
  ) {}

  async slot(caller: string): Promise<{ slot: GrantSlot; metadata: AuthServerMetadata }> {
    const metadata = await this.authority.metadata();
    return { slot: { issuer: ConsentAuthority.issuerKey(metadata), upstream: this.upstream, caller }, metadata };
  }

  async get(req: CredentialRequest): Promise<CredentialOutcome> {
    const { slot, metadata } = await this.slot(req.caller);
    const read = await this.parts.store.read(slot);
    if (read.kind === "unreadable") {
      // Tampered, or sealed under a key since removed: of no use, so consent is asked again.
      this.parts.log.warn("a stored grant could not be opened; asking for consent again", {
        upstream: this.upstream,
        cause: read.why,
      });
      await this.parts.store.remove(slot);
    }
    if (read.kind !== "grant") return this.consent(req);
    const grant = read.grant;
    const now = this.parts.now();
    const good = grant.expiresAt === undefined || grant.expiresAt - this.oauth.refreshBeforeMs > now;
    if (good && req.fresh !== true) {
      this.parts.observer?.token(this.upstream, this.mode, "cache_hit", true);
      if (grant.used !== true) {
        this.parts.events.used(this.upstream, { subject: grant.subject, caller: req.caller });
        await this.parts.store.write(slot, { ...grant, used: true });
      }
      return { kind: "token", accessToken: grant.accessToken };
    }
    if (grant.refreshToken === undefined) {
      await this.parts.store.remove(slot);
      return this.consent(req);
    }
    // One refresh per caller at a time: a burst of calls waits on the one refresh.
    let pending = this.refreshing.get(req.caller);
    if (!pending) {
      pending = this.refresh(req, slot, metadata, grant).finally(() => this.refreshing.delete(req.caller));
      this.refreshing.set(req.caller, pending);
    }
    return pending;
  }

  private async refresh(
    req: CredentialRequest,
    slot: GrantSlot,
    metadata: AuthServerMetadata,
    grant: StoredGrant,
  ): Promise<CredentialOutcome> {
    const client = await this.clientFor(metadata, grant.clientId, req.origin);
    try {
      const set = await tokenRequest(
        metadata.token_endpoint,
        { grant_type: "refresh_token", refresh_token: grant.refreshToken, resource: this.resource },
        client,
        {
          timeoutMs: this.oauth.timeoutMs,
          now: this.parts.now,
          assertionAudience: metadata.issuer || metadata.token_endpoint,
        },
      );
      this.parts.observer?.token(this.upstream, this.mode, "refresh", true);
      await this.parts.store.write(slot, {
        ...grant,
        accessToken: set.accessToken,
        expiresAt: set.expiresAt,
        // RFC 6749 §6: a server that does not rotate the refresh token keeps the old one good.
        refreshToken: set.refreshToken ?? grant.refreshToken,
        scope: set.scope ?? grant.scope,
        used: true,
      });
      return { kind: "token", accessToken: set.accessToken };
    } catch (err) {
      this.parts.observer?.token(this.upstream, this.mode, "refresh", false);
      if (!(err instanceof TokenEndpointError) || err.oauthError !== "invalid_grant")
        throw new CredentialError(
          `no credentials for upstream ${this.upstream}: ${err instanceof TokenEndpointError ? err.message : "the refresh failed"}`,
          err instanceof TokenEndpointError && err.status !== undefined && err.status < 500
            ? "upstream_credentials_refused"
            : "upstream_credentials_unavailable",
        );
      // Another replica may have refreshed (a rotated refresh token) meanwhile: its grant is the one to use.
      const again = await this.parts.store.read(slot);
      if (again.kind === "grant" && again.grant.refreshToken !== grant.refreshToken)
        return { kind: "token", accessToken: again.grant.accessToken };
      // The server no longer honours the grant (revoked there, expired): consent again.
      await this.parts.store.remove(slot);
      return this.consent(req);
    }
  }

  /** The client a grant was made with: the configured one, or the registration whose client id it names. */
  async clientFor(metadata: AuthServerMetadata, clientId: string, base: string | undefined): Promise<ClientAuth> {
    return this.authority.knownClient(
      metadata,
      clientId,
      base === undefined ? undefined : callbackUrl(base, this.upstream),
    );
  }

  /** The consent link for this caller: its ticket binds the caller, the upstream and where it was asked. */
  consent(req: CredentialRequest): CredentialOutcome {
    const nonce = newNonce();
    const base = req.origin.replace(/\/$/, "");
    const ticket = this.parts.signer.sign({
      typ: "start",
      caller: req.caller,
      upstream: this.upstream,
      base,
      nonce,
      exp: this.parts.now() + STATE_TTL_MS,
      ...(req.subject !== undefined && { subject: req.subject }),
    });
    this.parts.observer?.token(this.upstream, this.mode, "consent_required", true);
    return {
      kind: "consent",
      url: `${base}/oauth/${encodeURIComponent(this.upstream)}/start?state=${ticket}`,
      elicitationId: nonce,
      message: `Open this link to let the gateway call ${this.upstream} on your behalf, then try again.`,
    };
  }

  async close(): Promise<void> {}
}
