// The gateway as an OAuth client of an authorization server: finding its endpoints (RFC 8414), authenticating
// to it (client_secret_basic, client_secret_post, private_key_jwt per RFC 7523, or none for a public client) and
// asking its token endpoint for tokens. Every mode of upstreams.<name>.oauth goes through here.
//
// Nothing secret leaves this file in an error: a failure names the endpoint's origin and the server's own
// `error` code (RFC 6749 §5.2), never a token, a code, a verifier or the client's secret.
import { randomBytes } from "node:crypto";
import { SignJWT, type CryptoKey, type KeyObject } from "jose";

type ClientAuthMethod = "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "none";

export interface ClientAuth {
  clientId: string;
  method: ClientAuthMethod;
  clientSecret?: string | undefined;
  /** private_key_jwt: the key that signs the client assertion, its JWS algorithm and key id. */
  privateKey?: CryptoKey | KeyObject | undefined;
  alg?: string | undefined;
  keyId?: string | undefined;
}

/** The parts of an RFC 8414 metadata document the gateway uses. */
export interface AuthServerMetadata {
  issuer: string;
  token_endpoint: string;
  authorization_endpoint?: string | undefined;
  revocation_endpoint?: string | undefined;
  registration_endpoint?: string | undefined;
  code_challenge_methods_supported?: string[] | undefined;
  authorization_response_iss_parameter_supported?: boolean | undefined;
}

export interface TokenSet {
  accessToken: string;
  /** When the access token expires (ms since the epoch); undefined when the server did not say. */
  expiresAt: number | undefined;
  refreshToken?: string | undefined;
  scope?: string | undefined;
  tokenType: string;
}

/** A token endpoint or discovery failure. `oauthError` is the server's error code (invalid_grant, …), when it gave one. */
export class TokenEndpointError extends Error {
  override readonly name = "TokenEndpointError";
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly oauthError: string | undefined,
  ) {
    super(message);
  }
}

export interface HttpOptions {
  timeoutMs: number;
  now: () => number;
}

/** How long an error description from a server may be when it is quoted (a server's text is not ours to trust). */
const MAX_DESCRIPTION = 200;

function quoted(text: unknown): string {
  if (typeof text !== "string") return "";
  // Control characters would let a server forge log lines; long texts bloat every error.
  return text.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, MAX_DESCRIPTION);
}

async function readJson(res: Response, what: string, origin: string): Promise<Record<string, unknown>> {
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TokenEndpointError(`${what} at ${origin} answered ${res.status} with no JSON`, res.status, undefined);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new TokenEndpointError(
      `${what} at ${origin} answered ${res.status} with no JSON object`,
      res.status,
      undefined,
    );
  return parsed as Record<string, unknown>;
}

async function send(url: string, init: RequestInit, what: string, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "error", signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown } }).cause?.code;
    const why =
      (err as Error).name === "TimeoutError" ? `no answer in ${timeoutMs} ms` : String(cause ?? (err as Error).name);
    throw new TokenEndpointError(`${what} at ${new URL(url).origin} failed: ${why}`, undefined, undefined);
  }
}

/**
 * The RFC 8414 well-known URLs of an issuer: the OAuth one first, then OpenID Connect's, each with the issuer's
 * path placed as the RFCs say (8414 §3.1 inserts it after the well-known segment; OIDC appends).
 */
function wellKnownUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    ...(path === "" ? [] : [`${url.origin}${path}/.well-known/openid-configuration`]),
  ];
}

/**
 * Fetches an authorization server's metadata. The document's `issuer` must be the issuer asked for, exactly
 * (RFC 8414 §3.3): otherwise a server could pass itself off as another.
 */
export async function discoverAuthServer(issuer: string, http: HttpOptions): Promise<AuthServerMetadata> {
  let last: TokenEndpointError | undefined;
  for (const url of wellKnownUrls(issuer)) {
    const res = await send(url, { headers: { accept: "application/json" } }, "discovery", http.timeoutMs);
    if (!res.ok) {
      await res.body?.cancel();
      last = new TokenEndpointError(
        `discovery at ${new URL(url).origin} answered ${res.status}`,
        res.status,
        undefined,
      );
      continue;
    }
    const doc = await readJson(res, "discovery", new URL(url).origin);
    if (doc.issuer !== issuer)
      throw new TokenEndpointError(
        `discovery for ${issuer} returned metadata for another issuer (${quoted(doc.issuer)})`,
        res.status,
        undefined,
      );
    if (typeof doc.token_endpoint !== "string")
      throw new TokenEndpointError(`discovery for ${issuer} names no token_endpoint`, res.status, undefined);
    return doc as unknown as AuthServerMetadata;
  }
  throw last ?? new TokenEndpointError(`discovery for ${issuer} failed`, undefined, undefined);
}

/** The form fields and headers that authenticate the client (RFC 6749 §2.3, RFC 7523 §2.2). */
async function clientAuthentication(
  client: ClientAuth,
  audience: string,
  now: () => number,
): Promise<{ fields: Record<string, string>; headers: Record<string, string> }> {
  switch (client.method) {
    case "client_secret_basic": {
      // RFC 6749 §2.3.1: each part form-urlencoded before base64.
      const user = encodeURIComponent(client.clientId);
      const pass = encodeURIComponent(client.clientSecret ?? "");
      return { fields: {}, headers: { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}` } };
    }
    case "client_secret_post":
      return { fields: { client_id: client.clientId, client_secret: client.clientSecret ?? "" }, headers: {} };
    case "private_key_jwt": {
      if (client.privateKey === undefined) throw new Error("private_key_jwt needs a private key");
      const seconds = Math.floor(now() / 1000);
      const assertion = await new SignJWT({})
        .setProtectedHeader({ alg: client.alg ?? "RS256", ...(client.keyId !== undefined && { kid: client.keyId }) })
        .setIssuer(client.clientId)
        .setSubject(client.clientId)
        .setAudience(audience)
        .setIssuedAt(seconds)
        .setExpirationTime(seconds + 60)
        .setJti(randomBytes(16).toString("base64url"))
        .sign(client.privateKey);
      return {
        fields: {
          client_id: client.clientId,
          client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
          client_assertion: assertion,
        },
        headers: {},
      };
    }
    case "none":
      return { fields: { client_id: client.clientId }, headers: {} };
  }
}

/**
 * One token request: `grant` fields (grant_type and its own), the client's authentication, and the answer as a
 * TokenSet. `audience` is what a private_key_jwt assertion names (the issuer when known, else the endpoint).
 */
export async function tokenRequest(
  endpoint: string,
  grant: Record<string, string | readonly string[] | undefined>,
  client: ClientAuth,
  http: HttpOptions & { assertionAudience?: string | undefined },
): Promise<TokenSet> {
  const auth = await clientAuthentication(client, http.assertionAudience ?? endpoint, http.now);
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(grant)) {
    if (value === undefined) continue;
    // RFC 8707 allows several resource parameters; each is its own field.
    for (const v of typeof value === "string" ? [value] : value) form.append(name, v);
  }
  for (const [name, value] of Object.entries(auth.fields)) form.set(name, value);
  const origin = new URL(endpoint).origin;
  const res = await send(
    endpoint,
    {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", ...auth.headers },
      body: form.toString(),
    },
    "token request",
    http.timeoutMs,
  );
  const body = await readJson(res, "token endpoint", origin);
  if (!res.ok) {
    const code = typeof body.error === "string" ? quoted(body.error) : undefined;
    const description = quoted(body.error_description);
    throw new TokenEndpointError(
      `token endpoint at ${origin} refused (${res.status}${code ? ` ${code}` : ""})${description ? `: ${description}` : ""}`,
      res.status,
      code,
    );
  }
  if (typeof body.access_token !== "string" || body.access_token === "")
    throw new TokenEndpointError(`token endpoint at ${origin} answered no access_token`, res.status, undefined);
  const expiresIn = typeof body.expires_in === "number" ? body.expires_in : Number(body.expires_in);
  return {
    accessToken: body.access_token,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? http.now() + expiresIn * 1000 : undefined,
    ...(typeof body.refresh_token === "string" && { refreshToken: body.refresh_token }),
    ...(typeof body.scope === "string" && { scope: body.scope }),
    tokenType: typeof body.token_type === "string" ? body.token_type : "Bearer",
  };
}
