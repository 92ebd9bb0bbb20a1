// Builds the credential source of one upstream's oauth block (gateway/upstream-route.ts calls this for each
// upstream; a reload builds new ones with the new block).
import type { OAuthConfig } from "../config/oauth-schema.js";
import { AuthServer } from "./auth-server.js";
import { ClientCredentialsSource } from "./client-credentials.js";
import { TokenCache } from "./token-cache.js";
import { TokenExchangeSource } from "./token-exchange.js";
import { CredentialError, type CredentialHealth, type CredentialObserver, type CredentialSource } from "./source.js";

/** A source that remembers how its last requests went, for /status. */
export interface ObservedCredentialSource extends CredentialSource {
  health(): CredentialHealth;
}

function withHealth(source: CredentialSource, now: () => number): ObservedCredentialSource {
  const health: CredentialHealth = { mode: source.mode };
  return {
    mode: source.mode,
    async get(req) {
      try {
        const outcome = await source.get(req);
        health.lastOkAt = now();
        health.lastError = undefined;
        return outcome;
      } catch (err) {
        if (err instanceof CredentialError) health.lastError = { at: now(), reason: err.reason, message: err.message };
        throw err;
      }
    },
    close: () => source.close(),
    health: () => ({ ...health }),
  };
}

export interface CredentialParts {
  now: () => number;
  observer: CredentialObserver | undefined;
  /** userConsent: the consent flow's source for this upstream (credentials/consent/flow.ts); undefined without auth.vault. */
  consent?:
    ((upstream: string, oauth: OAuthConfig, resource: string, upstreamUrl: string) => CredentialSource) | undefined;
}

/** A token with no stated lifetime is kept this long (RFC 6749 leaves expires_in optional). */
const DEFAULT_TOKEN_TTL_MS = 5 * 60_000;

/** The RFC 8707 resource an upstream's tokens are minted for: its URL without query or fragment (they may hold secrets). */
function resourceOf(upstreamUrl: string, oauth: OAuthConfig): string {
  if (oauth.resource !== undefined) return oauth.resource;
  const url = new URL(upstreamUrl);
  return `${url.origin}${url.pathname}`;
}

export function buildCredentialSource(
  upstream: string,
  upstreamUrl: string,
  oauth: OAuthConfig,
  parts: CredentialParts,
): ObservedCredentialSource {
  return withHealth(sourceFor(upstream, upstreamUrl, oauth, parts), parts.now);
}

function sourceFor(
  upstream: string,
  upstreamUrl: string,
  oauth: OAuthConfig,
  parts: CredentialParts,
): CredentialSource {
  const resource = resourceOf(upstreamUrl, oauth);
  if (oauth.mode === "userConsent") {
    if (!parts.consent) throw new Error(`upstream ${upstream}: userConsent is not available in this build`);
    return parts.consent(upstream, oauth, resource, upstreamUrl);
  }
  const server = AuthServer.build(upstream, oauth, parts.now);
  const cache = (): TokenCache =>
    new TokenCache({
      maxEntries: oauth.maxCachedTokens,
      skewMs: oauth.refreshBeforeMs,
      defaultTtlMs: DEFAULT_TOKEN_TTL_MS,
      now: parts.now,
    });
  const own = new ClientCredentialsSource(server, oauth, resource, cache(), parts.observer);
  if (oauth.mode === "clientCredentials") return own;
  return new TokenExchangeSource(
    server,
    oauth,
    resource,
    cache(),
    oauth.actorToken === "clientCredentials" ? own : undefined,
    parts.observer,
  );
}
