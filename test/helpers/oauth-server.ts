// A real OAuth 2.0 authorization server for tests (issue 35): oidc-provider, a
// certified OpenID Provider, on http://127.0.0.1:<port 0>, in memory.
//
//   const as = await startAuthServer({ accessTokenTtlSec: 5, subjectIssuers: [idp] });
//   const client = await as.registerClient({ grant_types: ["client_credentials"] });   // RFC 7591, open
//   const pkj = await as.registerPrivateKeyJwtClient({ grant_types: ["client_credentials"] });
//   // point the gateway at as.issuer (RFC 8414: /.well-known/oauth-authorization-server) or as.tokenUrl
//   as.tokenRequests          // every token endpoint answer: grant type, client, success or error
//   await as.revokeGrants({ sub: "alice" });   // the operator revokes a user's consent
//   await as.close();
//
// What it serves:
// - client_credentials with RFC 8707 `resource`: a JWT access token whose `aud` is the resource;
// - authorization_code with PKCE (S256 only, required for every client), `iss` in the authorization
//   response (RFC 9207, always on in oidc-provider), refresh tokens for every client allowed the
//   refresh_token grant (rotated on use unless `rotateRefreshToken: false`), revocation (revoking a
//   refresh token revokes its whole grant), introspection;
// - token exchange (RFC 8693) as a custom grant: the subject_token is a caller's JWT from one of
//   `subjectIssuers` (test/helpers/jwks.ts makes them); the answer is a JWT access token for the
//   requested `resource` or `audience` with the subject's `sub` and `act: { sub: <client_id> }`,
//   or `act: { sub: <actor_token's sub> }` when an actor_token is sent;
// - a login + consent page a browser clicks through (test/helpers/consent-browser.ts): any username
//   becomes the `sub`, no password;
// - client authentication client_secret_basic, client_secret_post, private_key_jwt and none (public).
//
// Every access token is a JWT signed by this server's RS256 key (jwksUrl), `iss` = issuer, and lives
// `accessTokenTtlSec`. Plain http is allowed: oidc-provider has no https check on the issuer or token
// endpoint, cookies are simply not marked Secure over http, and nothing here is reachable beyond loopback.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createRemoteJWKSet,
  exportJWK,
  exportPKCS8,
  generateKeyPair,
  jwtVerify,
  type CryptoKey,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
} from "jose";
import Provider, {
  errors,
  type AccessToken,
  type ClientMetadata,
  type Configuration,
  type KoaContextWithOIDC,
  type ResourceServer,
  type TokenEndpointGrantContext,
} from "oidc-provider";
import { memoryAdapter } from "./oauth-memory-adapter.js";
import { renderConsent, renderLogin } from "./oauth-pages.js";

export const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";

/** Who may sign a token-exchange subject_token or actor_token (a TestIdp fits). */
interface TrustedIssuer {
  issuer: string;
  jwksUrl: string;
  /** When set, the token's `aud` must include it. */
  audience?: string;
}

export interface AuthServerOptions {
  /** Lifetime of every access token (client credentials, code, refresh, exchange), in seconds. Default 300. */
  accessTokenTtlSec?: number;
  /** Lifetime of refresh tokens, in seconds. Default 3600. */
  refreshTokenTtlSec?: number;
  /** A new refresh token on every refresh (the old one stops working). Default true. */
  rotateRefreshToken?: boolean;
  /** Scopes every resource server accepts. Default ["mcp:read", "mcp:write"]. */
  resourceScopes?: string[];
  /** Which resource indicators / audiences are known. Default: every value. */
  acceptResource?: (resource: string) => boolean;
  /** The resource a code or refresh grant uses when the client names none. Default: none (an opaque token). */
  defaultResource?: string;
  /** Issuers whose JWTs token exchange accepts as subject_token (and actor_token). */
  subjectIssuers?: TrustedIssuer[];
  /** Clients known from the start (oidc-provider client metadata, with client_id). */
  clients?: ClientMetadata[];
}

/** One answer of the token endpoint. */
interface TokenRequestRecord {
  grantType: string;
  clientId: string | undefined;
  ok: boolean;
  /** The OAuth error code of a failed request. */
  error?: string;
}

/** A consent a user gave on the consent page. */
interface ConsentRecord {
  grantId: string;
  sub: string;
  clientId: string;
  revoked: boolean;
}

export interface RegisteredClient {
  clientId: string;
  /** Absent for private_key_jwt and public clients. */
  clientSecret?: string;
  /** The full RFC 7591 registration response. */
  metadata: Record<string, unknown>;
}

interface PrivateKeyJwtClient extends RegisteredClient {
  /** The client's signing key: sign its client_assertion with it (jose SignJWT). */
  privateKey: CryptoKey;
  /** The same key as a private JWK (with kid and alg), for configs that take a JWK. */
  privateJwk: JWK;
  /** The same key as PKCS#8 PEM, for configs that take a key file. */
  privateKeyPem: string;
  kid: string;
  alg: "RS256";
}

export interface AuthServer {
  issuer: string;
  /** RFC 8414 metadata (`/.well-known/oauth-authorization-server`; the OIDC one is served too). */
  metadataUrl: string;
  tokenUrl: string;
  authorizationUrl: string;
  jwksUrl: string;
  registrationUrl: string;
  revocationUrl: string;
  introspectionUrl: string;
  /** The oidc-provider instance, for anything this helper does not wrap. */
  provider: Provider;
  /** Every token endpoint answer, in order (no token values). */
  readonly tokenRequests: readonly TokenRequestRecord[];
  /** Every consent given on the consent page, in order. */
  readonly consents: readonly ConsentRecord[];
  /** Errors oidc-provider reported as server_error (a test can assert there were none). */
  readonly serverErrors: readonly Error[];
  /** Dynamic client registration (RFC 7591) through the real endpoint; by default a confidential client_credentials client (client_secret_basic, no redirect URIs). */
  registerClient(metadata?: Partial<ClientMetadata>): Promise<RegisteredClient>;
  /** Registers a client that authenticates with private_key_jwt (a fresh RS256 key, its public JWK registered). */
  registerPrivateKeyJwtClient(metadata?: Partial<ClientMetadata>): Promise<PrivateKeyJwtClient>;
  /** Revokes the matching consents and every token issued under them; returns how many. */
  revokeGrants(match: { sub?: string; clientId?: string }): Promise<number>;
  close(): Promise<void>;
}

const ALLOW_ALL = (): boolean => true;

export async function startAuthServer(opts: AuthServerOptions = {}): Promise<AuthServer> {
  const ttl = opts.accessTokenTtlSec ?? 300;
  const resourceScopes = (opts.resourceScopes ?? ["mcp:read", "mcp:write"]).join(" ");
  const acceptResource = opts.acceptResource ?? ALLOW_ALL;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const signingJwk = { ...(await exportJWK(privateKey)), kid: "as-key-1", alg: "RS256", use: "sig" };

  const http = createServer();
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => resolve());
  });
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const resourceServer = (resource: string): ResourceServer => ({
    scope: resourceScopes,
    audience: resource,
    accessTokenTTL: ttl,
    accessTokenFormat: "jwt",
    jwt: { sign: { alg: "RS256" } },
  });
  // `act` of an exchanged token: extraTokenClaims reads it back when the JWT is built.
  const acts = new WeakMap<object, Record<string, unknown>>();

  const configuration: Configuration = {
    adapter: memoryAdapter(),
    clients: opts.clients ?? [],
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    scopes: ["openid", "offline_access"],
    pkce: { required: () => true },
    rotateRefreshToken: opts.rotateRefreshToken ?? true,
    // Refresh tokens for every client allowed the grant, as most SaaS servers do (offline_access optional).
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    // Tokens outlive the browser session that consented: the gateway uses them without it.
    expiresWithSession: () => false,
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    extraTokenClaims: (_ctx, token) => {
      const act = acts.get(token);
      return act === undefined ? undefined : { act };
    },
    ttl: {
      AccessToken: ttl,
      ClientCredentials: ttl,
      AuthorizationCode: 60,
      Grant: opts.refreshTokenTtlSec ?? 3600,
      IdToken: ttl,
      Interaction: 600,
      RefreshToken: opts.refreshTokenTtlSec ?? 3600,
      Session: 3600,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true, initialAccessToken: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? opts.defaultResource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (!acceptResource(resource)) throw new errors.InvalidTarget();
          return resourceServer(resource);
        },
      },
    },
  };

  const provider = new Provider(issuer, configuration);
  const trusted = (opts.subjectIssuers ?? []).map((t) => ({ ...t, keys: createRemoteJWKSet(new URL(t.jwksUrl)) }));
  const ownKeys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    (ctx: TokenEndpointGrantContext) =>
      exchange(ctx, provider, { trusted, ownKeys, acceptResource, resourceServer, acts }),
    [
      "subject_token",
      "subject_token_type",
      "actor_token",
      "actor_token_type",
      "requested_token_type",
      "audience",
      "resource",
      "scope",
    ],
    ["audience", "resource"],
  );

  const tokenRequests: TokenRequestRecord[] = [];
  const consents: ConsentRecord[] = [];
  const serverErrors: Error[] = [];
  const grantTypeOf = (ctx: KoaContextWithOIDC): string => String(ctx.oidc.params?.grant_type ?? "");
  provider.on("grant.success", (ctx: KoaContextWithOIDC) => {
    tokenRequests.push({ grantType: grantTypeOf(ctx), clientId: ctx.oidc.client?.clientId, ok: true });
  });
  provider.on("grant.error", (ctx: KoaContextWithOIDC, err: errors.OIDCProviderError) => {
    tokenRequests.push({
      grantType: grantTypeOf(ctx),
      clientId: ctx.oidc.client?.clientId,
      ok: false,
      error: err.error,
    });
  });
  provider.on("server_error", (_ctx: KoaContextWithOIDC, err: Error) => void serverErrors.push(err));

  const callback = provider.callback();
  http.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", issuer).pathname;
    // RFC 8414 discovery at its own well-known name; oidc-provider serves the same document as OIDC discovery.
    if (path === "/.well-known/oauth-authorization-server") req.url = "/.well-known/openid-configuration";
    if (path.startsWith("/interaction/")) {
      interaction(provider, req, res, path, consents).catch((err: unknown) => {
        serverErrors.push(err instanceof Error ? err : new Error(String(err)));
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end("interaction failed");
      });
      return;
    }
    void callback(req, res);
  });

  const registrationUrl = `${issuer}/reg`;
  const registerClient = async (metadata: Partial<ClientMetadata> = {}): Promise<RegisteredClient> => {
    const res = await fetch(registrationUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: [], response_types: [], grant_types: ["client_credentials"], ...metadata }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${String(body.error_description)}`);
    return {
      clientId: String(body.client_id),
      ...(typeof body.client_secret === "string" && { clientSecret: body.client_secret }),
      metadata: body,
    };
  };

  let closing: Promise<void> | undefined;
  return {
    issuer,
    metadataUrl: `${issuer}/.well-known/oauth-authorization-server`,
    tokenUrl: `${issuer}/token`,
    authorizationUrl: `${issuer}/auth`,
    jwksUrl: `${issuer}/jwks`,
    registrationUrl,
    revocationUrl: `${issuer}/token/revocation`,
    introspectionUrl: `${issuer}/token/introspection`,
    provider,
    tokenRequests,
    consents,
    serverErrors,
    registerClient,
    registerPrivateKeyJwtClient: async (metadata = {}) => {
      const pair = await generateKeyPair("RS256", { extractable: true });
      const kid = `client-key-${randomBytes(4).toString("hex")}`;
      const publicJwk = { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256", use: "sig" };
      const client = await registerClient({
        token_endpoint_auth_method: "private_key_jwt",
        token_endpoint_auth_signing_alg: "RS256",
        jwks: { keys: [publicJwk] },
        ...metadata,
      });
      return {
        ...client,
        privateKey: pair.privateKey,
        privateJwk: { ...(await exportJWK(pair.privateKey)), kid, alg: "RS256" },
        privateKeyPem: await exportPKCS8(pair.privateKey),
        kid,
        alg: "RS256",
      };
    },
    revokeGrants: async (match) => {
      let n = 0;
      for (const c of consents) {
        if (c.revoked || (match.sub !== undefined && c.sub !== match.sub)) continue;
        if (match.clientId !== undefined && c.clientId !== match.clientId) continue;
        await Promise.all([
          provider.AccessToken.revokeByGrantId(c.grantId),
          provider.RefreshToken.revokeByGrantId(c.grantId),
          provider.AuthorizationCode.revokeByGrantId(c.grantId),
        ]);
        await (await provider.Grant.find(c.grantId))?.destroy();
        c.revoked = true;
        n++;
      }
      return n;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      });
      return closing;
    },
  };
}

/** Verifies a JWT against the first trusted issuer that accepts it. */
async function verifyTrusted(
  token: string,
  trusted: ReadonlyArray<TrustedIssuer & { keys: JWTVerifyGetKey }>,
): Promise<JWTPayload | undefined> {
  for (const t of trusted) {
    try {
      const { payload } = await jwtVerify(token, t.keys, {
        issuer: t.issuer,
        ...(t.audience !== undefined && { audience: t.audience }),
      });
      return payload;
    } catch {
      // Not this issuer's, or invalid: try the next one.
    }
  }
  return undefined;
}

interface ExchangeDeps {
  trusted: ReadonlyArray<TrustedIssuer & { keys: JWTVerifyGetKey }>;
  ownKeys: JWTVerifyGetKey;
  acceptResource: (resource: string) => boolean;
  resourceServer: (resource: string) => ResourceServer;
  acts: WeakMap<object, Record<string, unknown>>;
}

const single = (v: unknown): string | undefined =>
  typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : undefined;

/** RFC 8693 token exchange: a caller's JWT in, a JWT access token for one audience out. */
async function exchange(ctx: TokenEndpointGrantContext, provider: Provider, deps: ExchangeDeps): Promise<void> {
  const { client, params } = ctx.oidc;
  const subjectToken = single(params.subject_token);
  const subjectType = single(params.subject_token_type);
  if (subjectToken === undefined || subjectType === undefined)
    throw new errors.InvalidRequest("subject_token and subject_token_type are required");
  if (subjectType !== ACCESS_TOKEN_TYPE && subjectType !== JWT_TOKEN_TYPE)
    throw new errors.InvalidRequest("unsupported subject_token_type");
  const requested = single(params.requested_token_type);
  if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE)
    throw new errors.InvalidRequest("unsupported requested_token_type");
  const subject = await verifyTrusted(subjectToken, deps.trusted);
  if (subject?.sub === undefined) throw new errors.InvalidGrant("subject_token is invalid");

  let act: Record<string, unknown> = { sub: client.clientId };
  const actorToken = single(params.actor_token);
  if (actorToken !== undefined) {
    const actor =
      (await verifyTrusted(actorToken, deps.trusted)) ??
      (await verifyTrusted(actorToken, [{ issuer: provider.issuer, jwksUrl: "", keys: deps.ownKeys }]));
    if (actor?.sub === undefined) throw new errors.InvalidGrant("actor_token is invalid");
    act = { sub: actor.sub };
  }
  // A delegation chain keeps the subject token's own actor (RFC 8693 section 4.1).
  if (typeof subject.act === "object" && subject.act !== null) act.act = subject.act;

  const audiences = [params.resource, params.audience].flat().filter((v): v is string => typeof v === "string");
  if (audiences.length !== 1) throw new errors.InvalidTarget("exactly one resource or audience is required");
  const target = audiences[0] as string;
  if (!deps.acceptResource(target)) throw new errors.InvalidTarget();
  const info = deps.resourceServer(target);
  const offered = new Set(info.scope.split(" "));
  const scope = String(params.scope ?? info.scope)
    .split(" ")
    .filter((s) => offered.has(s))
    .join(" ");

  const grant = new provider.Grant({ accountId: subject.sub, clientId: client.clientId });
  if (scope !== "") grant.addResourceScope(target, scope);
  const grantId = await grant.save();
  const token: AccessToken = new provider.AccessToken({
    accountId: subject.sub,
    client,
    grantId,
    gty: TOKEN_EXCHANGE,
    scope: scope || undefined,
    resourceServer: new provider.ResourceServer(target, info),
  });
  deps.acts.set(token, act);
  const value = await token.save();
  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: "Bearer",
    expires_in: token.expiration,
    ...(scope !== "" && { scope }),
  };
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

/** The login and consent pages: GET shows the current prompt, POST …/login, …/confirm or …/abort answers it. */
async function interaction(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  consents: ConsentRecord[],
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params } = details;
  const action = path.split("/")[3];
  const clientId = String(params.client_id);
  if (req.method === "GET" && action === undefined) {
    const html =
      prompt.name === "login"
        ? renderLogin(uid, clientId)
        : renderConsent(uid, clientId, String(params.scope ?? ""), params.resource);
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(html);
    return;
  }
  if (req.method !== "POST") {
    res.writeHead(405).end();
    return;
  }
  if (action === "abort") {
    await provider.interactionFinished(req, res, { error: "access_denied", error_description: "the user said no" });
    return;
  }
  if (action === "login") {
    const username = (await readForm(req)).get("username")?.trim() ?? "";
    if (username === "") {
      res.writeHead(400, { "content-type": "text/html; charset=utf-8" });
      res.end(renderLogin(uid, clientId, "Type a username."));
      return;
    }
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: username } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  if (action === "confirm" && prompt.name === "consent" && details.session !== undefined) {
    const accountId = details.session.accountId;
    const grant =
      details.grantId !== undefined
        ? ((await provider.Grant.find(details.grantId)) ?? new provider.Grant({ accountId, clientId }))
        : new provider.Grant({ accountId, clientId });
    const missing = prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
      grant.addResourceScope(resource, scopes.join(" "));
    const grantId = await grant.save();
    if (!consents.some((c) => c.grantId === grantId))
      consents.push({ grantId, sub: accountId, clientId, revoked: false });
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  res.writeHead(400, { "content-type": "text/plain" });
  res.end("unexpected interaction step");
}
