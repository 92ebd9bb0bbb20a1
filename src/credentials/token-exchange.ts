// tokenExchange (RFC 8693): the caller's verified token is the subject_token; the authorization server mints a
// token whose audience is this upstream and whose subject is the caller (and whose act names the gateway when
// an actor token goes too). Kept per caller and per presented token until just before it expires: a caller
// who comes back with a new token gets a new exchange, so the upstream never sees a subject the caller no
// longer holds a token for.
import { createHash } from "node:crypto";
import type { OAuthConfig } from "../config/oauth-schema.js";
import type { AuthServer } from "./auth-server.js";
import type { ClientCredentialsSource } from "./client-credentials.js";
import { countedToken, type TokenCache } from "./token-cache.js";
import {
  CredentialError,
  type CredentialObserver,
  type CredentialOutcome,
  type CredentialRequest,
  type CredentialSource,
} from "./source.js";

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token";

export class TokenExchangeSource implements CredentialSource {
  readonly mode = "tokenExchange" as const;

  constructor(
    private readonly server: AuthServer,
    private readonly oauth: OAuthConfig,
    private readonly resource: string,
    private readonly cache: TokenCache,
    /** The gateway's own token, sent as actor_token (oauth.actorToken clientCredentials). */
    private readonly actor: ClientCredentialsSource | undefined,
    private readonly observer: CredentialObserver | undefined,
  ) {}

  async get(req: CredentialRequest): Promise<CredentialOutcome> {
    const subjectToken = req.token;
    if (subjectToken === undefined)
      throw new CredentialError(
        `no credentials for upstream ${this.server.upstream}: a token exchange needs the caller's verified token`,
        "upstream_credentials_refused",
      );
    // The presented token is part of the key (as a digest: the cache holds no caller token).
    const key = `${req.caller}:${createHash("sha256").update(subjectToken).digest("base64url")}`;
    const exchange = async () => {
      const actorToken = this.actor ? await this.actor.token() : undefined;
      return this.server.token({
        grant_type: TOKEN_EXCHANGE,
        subject_token: subjectToken,
        subject_token_type: this.oauth.subjectTokenType,
        requested_token_type: ACCESS_TOKEN,
        resource: this.resource,
        audience: this.oauth.audience,
        scope: this.oauth.scopes.length > 0 ? this.oauth.scopes.join(" ") : undefined,
        actor_token: actorToken,
        actor_token_type: actorToken === undefined ? undefined : ACCESS_TOKEN,
      });
    };
    const count =
      this.observer &&
      ((kind: "fetch" | "exchange" | "cache_hit", ok: boolean) =>
        this.observer?.token(this.server.upstream, this.mode, kind, ok));
    const accessToken = await countedToken(this.cache, key, "exchange", exchange, req.fresh === true, count);
    return { kind: "token", accessToken };
  }

  async close(): Promise<void> {}
}
