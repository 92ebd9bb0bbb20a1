// The OAuth test harness of issue 35 proves itself: the real authorization server (oidc-provider,
// test/helpers/oauth-server.ts) issues tokens by client credentials (three client authentications),
// token exchange and authorization code + PKCE clicked through in Chromium; the bearer-checking SDK
// upstream (test/helpers/token-upstream.ts) accepts them, records who called, and refuses a missing
// or expired token with an RFC 9728 challenge. Chromium must be installed: it is never skipped.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { decodeJwt, SignJWT } from "jose";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consentInBrowser, launchChromium } from "../helpers/consent-browser.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { startAuthServer, TOKEN_EXCHANGE, type AuthServer, type RegisteredClient } from "../helpers/oauth-server.js";
import { startTokenUpstream, type TokenUpstream } from "../helpers/token-upstream.js";

const TTL_SEC = 5;
let idp: TestIdp;
let as: AuthServer;
let upstream: TokenUpstream;
// The upstream's clock: a test moves it past a token's expiry instead of waiting.
let clockSkewMs = 0;
let browser: Browser;
let landing: Server;
let redirectUri: string;

beforeAll(async () => {
  idp = await startTestIdp();
  as = await startAuthServer({ accessTokenTtlSec: TTL_SEC, subjectIssuers: [idp] });
  upstream = await startTokenUpstream({ authServer: as, now: () => new Date(Date.now() + clockSkewMs) });
  // The client's redirect_uri: a page the browser lands on with the code.
  landing = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<p>landed</p>"));
  await new Promise<void>((resolve) => landing.listen(0, "127.0.0.1", resolve));
  redirectUri = `http://127.0.0.1:${(landing.address() as AddressInfo).port}/callback`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  landing?.closeAllConnections();
  await new Promise<void>((resolve) => (landing ? landing.close(() => resolve()) : resolve()));
  await upstream?.close();
  await as?.close();
  await idp?.close();
});

type TokenResponse = Record<string, unknown> & { access_token?: string; refresh_token?: string; error?: string };

/** POSTs a form to the token endpoint (or another endpoint), authenticating per the client's method. */
async function post(
  url: string,
  params: Record<string, string>,
  auth: { basic?: RegisteredClient; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: TokenResponse }> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", ...auth.headers };
  if (auth.basic) {
    const id = encodeURIComponent(auth.basic.clientId);
    const secret = encodeURIComponent(auth.basic.clientSecret ?? "");
    headers.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
  }
  const res = await fetch(url, { method: "POST", headers, body: new URLSearchParams(params) });
  const text = await res.text();
  return { status: res.status, body: (text === "" ? {} : JSON.parse(text)) as TokenResponse };
}

/** Calls a tool of the token upstream through the official SDK client, with `token` as the bearer. */
async function callTool(token: string, name = "whoami", args: Record<string, unknown> = {}): Promise<string> {
  const client = new Client({ name: "oauth-harness-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(upstream.url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    const result = await client.callTool({ name, arguments: args });
    const content = result.content as Array<{ type: string; text?: string }>;
    return content.map((c) => c.text ?? "").join("");
  } finally {
    await client.close();
  }
}

/** The MCP initialize a client would send, raw, to read the upstream's HTTP answer. */
async function rawInitialize(token?: string): Promise<Response> {
  return fetch(upstream.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  });
}

async function clientCredentials(client: RegisteredClient): Promise<string> {
  const { status, body } = await post(
    as.tokenUrl,
    { grant_type: "client_credentials", resource: upstream.url, scope: "mcp:read" },
    { basic: client },
  );
  expect(status, JSON.stringify(body.error)).toBe(200);
  return String(body.access_token);
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

describe("client credentials", () => {
  it("gives a JWT for the resource that the upstream accepts, with client_secret_basic", async () => {
    const client = await as.registerClient({ grant_types: ["client_credentials"] });
    const token = await clientCredentials(client);
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ iss: as.issuer, aud: upstream.url, sub: client.clientId, scope: "mcp:read" });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(TTL_SEC);

    expect(await callTool(token)).toBe(`sub=${client.clientId} act=-`);
    expect(upstream.calls.at(-1)).toEqual({
      tool: "whoami",
      sub: client.clientId,
      act: undefined,
      aud: upstream.url,
      scope: "mcp:read",
      clientId: client.clientId,
    });
    expect(as.tokenRequests.at(-1)).toEqual({ grantType: "client_credentials", clientId: client.clientId, ok: true });
  });

  it("authenticates with client_secret_post and refuses a wrong secret", async () => {
    const client = await as.registerClient({
      grant_types: ["client_credentials"],
      token_endpoint_auth_method: "client_secret_post",
    });
    const params = { grant_type: "client_credentials", resource: upstream.url, client_id: client.clientId };
    const ok = await post(as.tokenUrl, { ...params, client_secret: String(client.clientSecret) });
    expect(ok.status).toBe(200);
    expect(decodeJwt(String(ok.body.access_token)).aud).toBe(upstream.url);

    const wrong = await post(as.tokenUrl, { ...params, client_secret: "not-the-secret" });
    expect(wrong).toMatchObject({ status: 401, body: { error: "invalid_client" } });
  });

  it("authenticates with private_key_jwt, signed by the key the helper returns", async () => {
    const client = await as.registerPrivateKeyJwtClient({ grant_types: ["client_credentials"] });
    expect(client.clientSecret).toBeUndefined();
    expect(client.privateJwk).toMatchObject({ kty: "RSA", kid: client.kid, alg: "RS256" });
    expect(client.privateJwk.d).toBeTypeOf("string");
    expect(client.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: client.alg, kid: client.kid })
      .setIssuer(client.clientId)
      .setSubject(client.clientId)
      .setAudience(as.issuer)
      .setJti(randomBytes(16).toString("hex"))
      .setIssuedAt()
      .setExpirationTime("60s")
      .sign(client.privateKey);
    const { status, body } = await post(as.tokenUrl, {
      grant_type: "client_credentials",
      resource: upstream.url,
      client_id: client.clientId,
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: assertion,
    });
    expect(status).toBe(200);
    expect(await callTool(String(body.access_token))).toBe(`sub=${client.clientId} act=-`);
  });
});

describe("token exchange (RFC 8693)", () => {
  const exchange = (client: RegisteredClient, extra: Record<string, string>) =>
    post(
      as.tokenUrl,
      {
        grant_type: TOKEN_EXCHANGE,
        subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
        resource: upstream.url,
        ...extra,
      },
      { basic: client },
    );

  it("turns a caller's IdP token into one for the upstream, with sub = the caller and act = the client", async () => {
    const gateway = await as.registerClient({ grant_types: [TOKEN_EXCHANGE] });
    const { status, body } = await exchange(gateway, { subject_token: await idp.token("alice") });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
      token_type: "Bearer",
      expires_in: TTL_SEC,
    });
    expect(decodeJwt(String(body.access_token))).toMatchObject({
      iss: as.issuer,
      aud: upstream.url,
      sub: "alice",
      act: { sub: gateway.clientId },
    });
    expect(await callTool(String(body.access_token))).toBe(`sub=alice act=${gateway.clientId}`);
    expect(upstream.calls.at(-1)).toMatchObject({ sub: "alice", act: { sub: gateway.clientId }, aud: upstream.url });
  });

  it("names the actor_token's subject as the actor, and takes an audience instead of a resource", async () => {
    const gateway = await as.registerClient({ grant_types: [TOKEN_EXCHANGE] });
    const { status, body } = await exchange(gateway, {
      subject_token: await idp.token("bob"),
      actor_token: await idp.token("gateway-service"),
      actor_token_type: "urn:ietf:params:oauth:token-type:jwt",
    });
    expect(status).toBe(200);
    expect(decodeJwt(String(body.access_token))).toMatchObject({ sub: "bob", act: { sub: "gateway-service" } });

    const byAudience = await post(
      as.tokenUrl,
      {
        grant_type: TOKEN_EXCHANGE,
        subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
        subject_token: await idp.token("bob"),
        audience: "internal-api",
      },
      { basic: gateway },
    );
    expect(byAudience.status).toBe(200);
    expect(decodeJwt(String(byAudience.body.access_token))).toMatchObject({ sub: "bob", aud: "internal-api" });
  });

  it("refuses a subject token the IdP did not sign, or one that expired", async () => {
    const gateway = await as.registerClient({ grant_types: [TOKEN_EXCHANGE] });
    const other = await startTestIdp();
    try {
      const forged = await exchange(gateway, { subject_token: await other.token("mallory") });
      expect(forged).toMatchObject({ status: 400, body: { error: "invalid_grant" } });
    } finally {
      await other.close();
    }
    const expired = await idp.token("alice", { nowSec: Math.floor(Date.now() / 1000) - 3600, ttlSec: 60 });
    expect(await exchange(gateway, { subject_token: expired })).toMatchObject({
      status: 400,
      body: { error: "invalid_grant" },
    });
    // A client not registered for the grant may not exchange at all.
    const stranger = await as.registerClient({ grant_types: ["client_credentials"] });
    expect(await exchange(stranger, { subject_token: await idp.token("alice") })).toMatchObject({
      status: 400,
      body: { error: "invalid_request", error_description: "requested grant type is not allowed for this client" },
    });
  });
});

describe("authorization code with PKCE, in Chromium", () => {
  /** Clicks through login and consent; returns the code the browser landed with, and its PKCE verifier. */
  async function authorize(client: RegisteredClient, username: string) {
    const { verifier, challenge } = pkce();
    const state = randomBytes(16).toString("base64url");
    const url = new URL(as.authorizationUrl);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: redirectUri,
      scope: "mcp:read",
      resource: upstream.url,
      state,
      code_challenge: challenge,
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v);
    const landed = await consentInBrowser(browser, url.href, { username, landsOn: redirectUri });
    expect(landed.signedIn).toBe(true);
    expect(landed.text).toContain("landed");
    expect(landed.url.searchParams.get("state")).toBe(state);
    // RFC 9207: the authorization response names its issuer.
    expect(landed.url.searchParams.get("iss")).toBe(as.issuer);
    return { code: String(landed.url.searchParams.get("code")), verifier };
  }

  const redeem = (client: RegisteredClient, code: string, verifier: string) =>
    post(
      as.tokenUrl,
      { grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier },
      { basic: client },
    );

  async function consent(client: RegisteredClient, username: string) {
    const { code, verifier } = await authorize(client, username);
    const tokens = await redeem(client, code, verifier);
    expect(tokens.status).toBe(200);
    return tokens.body;
  }

  const codeClient = () =>
    as.registerClient({
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    });

  it("signs a user in, asks consent, and gives tokens that say who the user is; refresh rotates", async () => {
    const client = await codeClient();
    const tokens = await consent(client, "alice");
    expect(decodeJwt(String(tokens.access_token))).toMatchObject({ sub: "alice", aud: upstream.url, iss: as.issuer });
    expect(tokens.refresh_token).toBeTypeOf("string");
    expect(await callTool(String(tokens.access_token))).toBe("sub=alice act=-");
    expect(as.consents.at(-1)).toMatchObject({ sub: "alice", clientId: client.clientId, revoked: false });

    const refreshed = await post(
      as.tokenUrl,
      { grant_type: "refresh_token", refresh_token: String(tokens.refresh_token) },
      { basic: client },
    );
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(String(refreshed.body.access_token))).toMatchObject({ sub: "alice", aud: upstream.url });
    expect(await callTool(String(refreshed.body.access_token))).toBe("sub=alice act=-");
  });

  it("refuses a code redeemed with the wrong verifier, and a code redeemed twice", async () => {
    const client = await codeClient();
    const first = await authorize(client, "carol");
    expect(await redeem(client, first.code, pkce().verifier)).toMatchObject({
      status: 400,
      body: { error: "invalid_grant" },
    });
    const second = await authorize(client, "carol");
    expect((await redeem(client, second.code, second.verifier)).status).toBe(200);
    expect(await redeem(client, second.code, second.verifier)).toMatchObject({
      status: 400,
      body: { error: "invalid_grant" },
    });
  });

  it("stops refreshing once the refresh token is revoked (RFC 7009), or the operator revokes the grant", async () => {
    const client = await codeClient();
    const first = await consent(client, "dave");
    const revoked = await post(
      as.revocationUrl,
      { token: String(first.refresh_token), token_type_hint: "refresh_token" },
      { basic: client },
    );
    expect(revoked.status).toBe(200);
    const afterRevocation = await post(
      as.tokenUrl,
      { grant_type: "refresh_token", refresh_token: String(first.refresh_token) },
      { basic: client },
    );
    expect(afterRevocation).toMatchObject({ status: 400, body: { error: "invalid_grant" } });

    const second = await consent(client, "erin");
    expect(await as.revokeGrants({ sub: "erin" })).toBe(1);
    expect(as.consents.find((c) => c.sub === "erin")?.revoked).toBe(true);
    const afterHook = await post(
      as.tokenUrl,
      { grant_type: "refresh_token", refresh_token: String(second.refresh_token) },
      { basic: client },
    );
    expect(afterHook).toMatchObject({ status: 400, body: { error: "invalid_grant" } });
  });

  it("sends the browser back with access_denied when the user clicks Deny", async () => {
    const client = await codeClient();
    const { challenge } = pkce();
    const authorize = new URL(as.authorizationUrl);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: redirectUri,
      scope: "mcp:read",
      resource: upstream.url,
      state: "s1",
      code_challenge: challenge,
      code_challenge_method: "S256",
    }))
      authorize.searchParams.set(k, v);
    const landed = await consentInBrowser(browser, authorize.href, {
      username: "frank",
      landsOn: redirectUri,
      deny: true,
    });
    expect(landed.url.searchParams.get("error")).toBe("access_denied");
    expect(landed.url.searchParams.get("code")).toBeNull();
    expect(landed.url.searchParams.get("iss")).toBe(as.issuer);
  });
});

describe("dynamic client registration (RFC 7591) and discovery (RFC 8414)", () => {
  it("registers a client without an initial access token, at the endpoint the metadata names", async () => {
    const metadata = (await (await fetch(as.metadataUrl)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: as.issuer,
      token_endpoint: as.tokenUrl,
      authorization_endpoint: as.authorizationUrl,
      jwks_uri: as.jwksUrl,
      registration_endpoint: as.registrationUrl,
      revocation_endpoint: as.revocationUrl,
      authorization_response_iss_parameter_supported: true,
      code_challenge_methods_supported: ["S256"],
    });
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(["client_credentials", "authorization_code", "refresh_token", TOKEN_EXCHANGE]),
    );

    const res = await fetch(String(metadata.registration_endpoint), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "a public MCP client",
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ client_name: "a public MCP client", token_endpoint_auth_method: "none" });
    expect(body.client_id).toBeTypeOf("string");
    expect(body.client_secret).toBeUndefined();
  });
});

describe("the token upstream's challenge (RFC 9728)", () => {
  it("answers a missing token and an expired one with 401 and the resource metadata URL", async () => {
    const missing = await rawInitialize();
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${upstream.resourceMetadataUrl}"`);

    const token = await clientCredentials(await as.registerClient({ grant_types: ["client_credentials"] }));
    clockSkewMs = (TTL_SEC + 1) * 1000;
    try {
      const expired = await rawInitialize(token);
      expect(expired.status).toBe(401);
      const challenge = String(expired.headers.get("www-authenticate"));
      expect(challenge).toContain('error="invalid_token"');
      expect(challenge).toContain(`resource_metadata="${upstream.resourceMetadataUrl}"`);
      expect(challenge).not.toContain(token);
    } finally {
      clockSkewMs = 0;
    }
    expect(upstream.rejections.slice(-2)).toEqual(["missing", "expired"]);

    const metadata = (await (await fetch(upstream.resourceMetadataUrl)).json()) as Record<string, unknown>;
    expect(metadata).toEqual({
      resource: upstream.url,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ["header"],
    });
  });

  it("refuses a token for another audience", async () => {
    const client = await as.registerClient({ grant_types: ["client_credentials"] });
    const { body } = await post(
      as.tokenUrl,
      { grant_type: "client_credentials", resource: "https://elsewhere.test/mcp" },
      { basic: client },
    );
    const res = await rawInitialize(String(body.access_token));
    expect(res.status).toBe(401);
    expect(upstream.rejections.at(-1)).toBe("invalid");
  });

  it("lets a call that started with a valid token finish after the token expires", async () => {
    const client = await as.registerClient({ grant_types: ["client_credentials"] });
    const token = await clientCredentials(client);
    const answer = callTool(token, "slow_whoami", { key: "outlive" });
    await upstream.holding("outlive");
    clockSkewMs = (TTL_SEC + 1) * 1000;
    try {
      expect((await rawInitialize(token)).status).toBe(401);
      upstream.release("outlive");
      expect(await answer).toBe(`sub=${client.clientId}`);
    } finally {
      clockSkewMs = 0;
    }
  });
});

it("reported no server error along the way", () => {
  expect(as.serverErrors).toEqual([]);
});
