// Which authorization server issues an upstream's user grants, and the gateway's client there. The server is
// the configured one (issuer, by RFC 8414 discovery; or tokenUrl + authorizationUrl); with none configured, it
// is found from the upstream's own challenge: an unauthenticated request gets 401 with `WWW-Authenticate:
// Bearer resource_metadata="…"` (RFC 9728), whose document names the server, which RFC 8414 then describes.
// The client is the configured clientId, or one the gateway registers itself (RFC 7591) with that issuer for
// that callback URL: kept sealed in the grant store's backend so replicas share it, under a key and AAD that
// name the issuer, so a registration is never used with another one.
import { createHash } from "node:crypto";
import type { OAuthConfig } from "../../config/oauth-schema.js";
import { AuthServer } from "../auth-server.js";
import { CredentialError } from "../source.js";
import { discoverAuthServer, type AuthServerMetadata, type ClientAuth } from "../token-endpoint.js";
import type { GrantBackend } from "./grant-store.js";
import type { GrantVault } from "./vault.js";

/** A registration is kept this long (or until the server says its secret expires). */
const REGISTRATION_TTL_MS = 30 * 24 * 3_600_000;

interface Registration {
  issuer: string;
  redirectUri: string;
  clientId: string;
  clientSecret?: string | undefined;
  method: "none" | "client_secret_basic" | "client_secret_post";
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

async function getJson(url: string, timeoutMs: number, what: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    throw new Error(`${what} at ${new URL(url).origin} could not be fetched`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${what} at ${new URL(url).origin} answered ${res.status}`);
  }
  const body: unknown = await res.json().catch(() => undefined);
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new Error(`${what} at ${new URL(url).origin} is not a JSON object`);
  return body as Record<string, unknown>;
}

/** The resource_metadata URL of a `WWW-Authenticate: Bearer …` challenge (RFC 9728 §5.1), if it names one. */
export function resourceMetadataOf(challenge: string | null): string | undefined {
  if (challenge === null) return undefined;
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))/i.exec(challenge);
  return match?.[1] ?? match?.[2];
}

/**
 * The upstream's authorization server from its challenge. The metadata's `resource` must be the upstream (RFC
 * 9728 §3.3), so an upstream cannot send its users' consent to a server that is not its own.
 */
async function fromChallenge(upstreamUrl: string, timeoutMs: number): Promise<string> {
  let res: Response;
  try {
    res = await fetch(upstreamUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    throw new Error("the upstream could not be reached to find its authorization server");
  }
  await res.body?.cancel();
  const url = new URL(upstreamUrl);
  const named = resourceMetadataOf(res.headers.get("www-authenticate"));
  // RFC 9728 §3.1: without a challenge naming it, the well-known location under the resource's path.
  const metadataUrl =
    named ?? `${url.origin}/.well-known/oauth-protected-resource${url.pathname === "/" ? "" : url.pathname}`;
  const metadata = await getJson(metadataUrl, timeoutMs, "protected resource metadata");
  const resource = typeof metadata.resource === "string" ? metadata.resource.replace(/\/$/, "") : undefined;
  if (resource !== `${url.origin}${url.pathname}`.replace(/\/$/, ""))
    throw new Error("the upstream's protected resource metadata is for another resource");
  const servers = metadata.authorization_servers;
  const first = Array.isArray(servers) ? (servers[0] as unknown) : undefined;
  if (typeof first !== "string")
    throw new Error("the upstream's protected resource metadata names no authorization server");
  return first;
}

export class ConsentAuthority {
  private readonly configured: AuthServer | undefined;
  private found: Promise<AuthServerMetadata> | undefined;
  private readonly registering = new Map<string, Promise<ClientAuth>>();

  constructor(
    readonly upstream: string,
    private readonly oauth: OAuthConfig,
    private readonly upstreamUrl: string,
    private readonly backend: GrantBackend,
    private readonly vault: GrantVault,
    private readonly now: () => number,
  ) {
    this.configured =
      oauth.issuer !== undefined || oauth.tokenUrl !== undefined ? AuthServer.build(upstream, oauth, now) : undefined;
  }

  /** The server's endpoints, discovered once (a failure is tried again next time). */
  async metadata(): Promise<AuthServerMetadata> {
    if (this.configured) return this.configured.metadata();
    if (!this.found) {
      const attempt = (async () => {
        const issuer = await fromChallenge(this.upstreamUrl, this.oauth.timeoutMs);
        return discoverAuthServer(issuer, { timeoutMs: this.oauth.timeoutMs, now: this.now });
      })();
      this.found = attempt;
      attempt.catch(() => {
        if (this.found === attempt) this.found = undefined;
      });
    }
    try {
      return await this.found;
    } catch (err) {
      throw new CredentialError(
        `no credentials for upstream ${this.upstream}: ${(err as Error).message}`,
        "upstream_credentials_unavailable",
      );
    }
  }

  /** What grants are kept under: the issuer, or the token endpoint of a server configured by URLs alone. */
  static issuerKey(metadata: AuthServerMetadata): string {
    return metadata.issuer || metadata.token_endpoint;
  }

  /** The client at this server for this callback: the configured one, else a registration (made once). */
  async client(metadata: AuthServerMetadata, redirectUri: string): Promise<ClientAuth> {
    if (this.oauth.clientId !== undefined) {
      if (this.configured) return this.configured.client;
      // Configured client id, server found from the upstream's challenge.
      return AuthServer.build(this.upstream, { ...this.oauth }, this.now).client;
    }
    const issuer = ConsentAuthority.issuerKey(metadata);
    const slot = `${issuer}\n${redirectUri}`;
    let pending = this.registering.get(slot);
    if (!pending) {
      pending = this.registration(metadata, issuer, redirectUri);
      this.registering.set(slot, pending);
      pending.catch(() => this.registering.delete(slot));
    }
    return pending;
  }

  /** Forgets the client kept for a callback (a server that no longer knows it). */
  forgetClient(metadata: AuthServerMetadata, redirectUri: string): void {
    this.registering.delete(`${ConsentAuthority.issuerKey(metadata)}\n${redirectUri}`);
  }

  /**
   * The client a grant names, without registering anything: the configured one, else the registration kept for
   * this callback when it is that client, else the client id alone (the gateway registers public clients).
   */
  async knownClient(
    metadata: AuthServerMetadata,
    clientId: string,
    redirectUri: string | undefined,
  ): Promise<ClientAuth> {
    if (this.oauth.clientId !== undefined) return this.client(metadata, redirectUri ?? "");
    const kept =
      redirectUri === undefined ? undefined : await this.kept(ConsentAuthority.issuerKey(metadata), redirectUri);
    return kept?.clientId === clientId ? kept : { clientId, method: "none" };
  }

  private registrationKey(issuer: string, redirectUri: string): { key: string; aad: string } {
    return { key: `reg:${digest(`${issuer}\n${redirectUri}`)}`, aad: `registration\n${issuer}\n${redirectUri}` };
  }

  private async kept(issuer: string, redirectUri: string): Promise<ClientAuth | undefined> {
    const { key, aad } = this.registrationKey(issuer, redirectUri);
    const blob = await this.backend.get(key);
    if (blob === undefined) return undefined;
    try {
      const reg = JSON.parse(this.vault.open(blob, aad)) as Registration;
      // The AAD already binds it; the record says so too.
      if (reg.issuer !== issuer || reg.redirectUri !== redirectUri) return undefined;
      return { clientId: reg.clientId, method: reg.method, clientSecret: reg.clientSecret };
    } catch {
      return undefined;
    }
  }

  private async registration(metadata: AuthServerMetadata, issuer: string, redirectUri: string): Promise<ClientAuth> {
    const kept = await this.kept(issuer, redirectUri);
    if (kept) return kept;
    const endpoint = metadata.registration_endpoint;
    if (endpoint === undefined)
      throw new CredentialError(
        `no credentials for upstream ${this.upstream}: no clientId is configured and the authorization server offers no dynamic registration`,
        "upstream_credentials_unavailable",
      );
    const reg = await this.register(endpoint, issuer, redirectUri);
    const ttl = reg.expiresAt !== undefined ? Math.max(60_000, reg.expiresAt - this.now()) : REGISTRATION_TTL_MS;
    // First writer wins: a replica that registered at the same moment uses the kept one, so every flow of this
    // issuer and callback names one client.
    const { key, aad } = this.registrationKey(issuer, redirectUri);
    const sealed = this.vault.seal(JSON.stringify(reg.registration), aad);
    if (await this.backend.setIfAbsent(key, sealed, ttl)) return reg.client;
    return (await this.kept(issuer, redirectUri)) ?? reg.client;
  }

  private async register(
    endpoint: string,
    issuer: string,
    redirectUri: string,
  ): Promise<{ client: ClientAuth; registration: Registration; expiresAt: number | undefined }> {
    const fail = (why: string): CredentialError =>
      new CredentialError(
        `no credentials for upstream ${this.upstream}: dynamic client registration at ${new URL(endpoint).origin} ${why}`,
        "upstream_credentials_unavailable",
      );
    let res: Response;
    try {
      res = await fetch(endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({
          client_name: "mcp-task-gateway",
          redirect_uris: [redirectUri],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        }),
        redirect: "error",
        signal: AbortSignal.timeout(this.oauth.timeoutMs),
      });
    } catch {
      throw fail("could not be reached");
    }
    const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!res.ok || typeof body?.client_id !== "string")
      throw fail(`answered ${res.status}${typeof body?.error === "string" ? ` ${body.error.slice(0, 60)}` : ""}`);
    const secret = typeof body.client_secret === "string" ? body.client_secret : undefined;
    const asked = body.token_endpoint_auth_method;
    const method: Registration["method"] =
      secret === undefined ? "none" : asked === "client_secret_post" ? "client_secret_post" : "client_secret_basic";
    const expires = typeof body.client_secret_expires_at === "number" ? body.client_secret_expires_at : 0;
    const registration: Registration = { issuer, redirectUri, clientId: body.client_id, clientSecret: secret, method };
    return {
      client: { clientId: body.client_id, method, clientSecret: secret },
      registration,
      expiresAt: expires > 0 ? expires * 1000 : undefined,
    };
  }
}
