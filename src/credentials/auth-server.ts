// One upstream's authorization server as the gateway sees it: its endpoints (configured, or discovered once
// from the issuer and kept; a failed discovery is tried again on the next request), the client's
// authentication, and token requests whose failures become CredentialErrors that name no secret.
import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { clientAuthOf, type OAuthConfig } from "../config/oauth-schema.js";
import {
  discoverAuthServer,
  tokenRequest,
  TokenEndpointError,
  type AuthServerMetadata,
  type ClientAuth,
  type TokenSet,
} from "./token-endpoint.js";
import { CredentialError } from "./source.js";

export class AuthServer {
  private discovered: Promise<AuthServerMetadata> | undefined;

  private constructor(
    readonly upstream: string,
    private readonly oauth: OAuthConfig,
    readonly client: ClientAuth,
    private readonly now: () => number,
  ) {}

  /** Reads the private key file (private_key_jwt) at build time, so a missing or bad key fails the start, not a call. */
  static build(upstream: string, oauth: OAuthConfig, now: () => number): AuthServer {
    const method = clientAuthOf(oauth);
    const privateKey = method === "private_key_jwt" ? readClientKey(oauth) : undefined;
    const client: ClientAuth = {
      clientId: oauth.clientId ?? "",
      method,
      clientSecret: oauth.clientSecret,
      privateKey,
      alg: oauth.privateKeyAlg,
      keyId: oauth.keyId,
    };
    return new AuthServer(upstream, oauth, client, now);
  }

  /** The server's endpoints: the configured ones over what discovery says. */
  async metadata(): Promise<AuthServerMetadata> {
    const configured = {
      ...(this.oauth.tokenUrl !== undefined && { token_endpoint: this.oauth.tokenUrl }),
      ...(this.oauth.authorizationUrl !== undefined && { authorization_endpoint: this.oauth.authorizationUrl }),
      ...(this.oauth.revocationUrl !== undefined && { revocation_endpoint: this.oauth.revocationUrl }),
    };
    const issuer = this.oauth.issuer;
    if (issuer === undefined) return { issuer: "", token_endpoint: "", ...configured };
    if (!this.discovered) {
      const attempt = discoverAuthServer(issuer, { timeoutMs: this.oauth.timeoutMs, now: this.now });
      this.discovered = attempt;
      // A failure is not kept: the next request discovers again (the server may be back).
      attempt.catch(() => {
        if (this.discovered === attempt) this.discovered = undefined;
      });
    }
    try {
      return { ...(await this.discovered), ...configured };
    } catch (err) {
      throw asCredentialError(this.upstream, err);
    }
  }

  /** A token request with this client's authentication; failures become CredentialErrors. */
  async token(grant: Record<string, string | readonly string[] | undefined>): Promise<TokenSet> {
    const metadata = await this.metadata();
    try {
      return await tokenRequest(metadata.token_endpoint, grant, this.client, {
        timeoutMs: this.oauth.timeoutMs,
        now: this.now,
        // RFC 7523 §3: the assertion's audience identifies the server; its issuer does, where known.
        assertionAudience: metadata.issuer || metadata.token_endpoint,
      });
    } catch (err) {
      throw asCredentialError(this.upstream, err);
    }
  }
}

/**
 * The private_key_jwt signing key of an oauth block; throws naming the file and why (never the key) when it is
 * missing, unreadable, or not a private key. --check and the start both use it.
 */
export function readClientKey(oauth: OAuthConfig): KeyObject | undefined {
  const file = oauth.privateKeyFile;
  if (file === undefined) return undefined;
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`privateKeyFile ${file} cannot be read (${(err as { code?: string }).code ?? "error"})`);
  }
  try {
    return createPrivateKey(pem);
  } catch {
    throw new Error(`privateKeyFile ${file} holds no private key in PEM`);
  }
}

/**
 * A refusal by the server (a 4xx: invalid_grant, invalid_client, …) is `refused`; no answer or a 5xx is
 * `unavailable` (it may pass). The message names the upstream, never a token.
 */
function asCredentialError(upstream: string, err: unknown): CredentialError {
  if (err instanceof CredentialError) return err;
  const status = err instanceof TokenEndpointError ? err.status : undefined;
  const refused = status !== undefined && status >= 400 && status < 500;
  const detail = err instanceof TokenEndpointError ? err.message : "the authorization server could not be asked";
  return new CredentialError(
    `no credentials for upstream ${upstream}: ${detail}`,
    refused ? "upstream_credentials_refused" : "upstream_credentials_unavailable",
  );
}
