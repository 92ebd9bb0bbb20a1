// clientCredentials: the gateway's own token for an upstream (a service account), the same for every caller.
// One token at a time, refreshed before it expires; a burst of requests without one waits on a single fetch.
import type { OAuthConfig } from "../config/oauth-schema.js";
import type { AuthServer } from "./auth-server.js";
import { countedToken, type TokenCache } from "./token-cache.js";
import type { CredentialObserver, CredentialOutcome, CredentialRequest, CredentialSource } from "./source.js";

/** The cache key of the gateway's own token (a caller digest is hex, so it never collides). */
const OWN = "client-credentials";

export class ClientCredentialsSource implements CredentialSource {
  readonly mode = "clientCredentials" as const;

  constructor(
    private readonly server: AuthServer,
    private readonly oauth: OAuthConfig,
    /** The RFC 8707 resource: the upstream. */
    private readonly resource: string,
    private readonly cache: TokenCache,
    private readonly observer: CredentialObserver | undefined,
  ) {}

  async get(req: CredentialRequest): Promise<CredentialOutcome> {
    return { kind: "token", accessToken: await this.token(req.fresh === true) };
  }

  /** The gateway's own token (also the actor token of an exchange). */
  token(fresh = false): Promise<string> {
    const grant = {
      grant_type: "client_credentials",
      resource: this.resource,
      scope: this.oauth.scopes.length > 0 ? this.oauth.scopes.join(" ") : undefined,
    };
    const count =
      this.observer &&
      ((kind: "fetch" | "exchange" | "cache_hit", ok: boolean) =>
        this.observer?.token(this.server.upstream, this.mode, kind, ok));
    return countedToken(this.cache, OWN, "fetch", () => this.server.token(grant), fresh, count);
  }

  async close(): Promise<void> {}
}
