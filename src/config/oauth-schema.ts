// upstreams.<name>.oauth: the credentials an upstream gets, obtained per caller by the gateway as an OAuth
// client (issue 35). Three modes: the gateway's own client-credentials token (a service account), a token
// exchanged for the caller's (RFC 8693), or each user's own grant, given once through a consent link.
import { z } from "zod";
import { isLoopbackHost } from "../address/loopback.js";

/** Plain HTTP only to this host (a local authorization server, the tests): tokens and client secrets cross it. */
function httpsOrLoopbackUrl(s: string): boolean {
  try {
    const url = new URL(s);
    return url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname));
  } catch {
    return false;
  }
}

const httpsOrLoopback = z
  .string()
  .refine(httpsOrLoopbackUrl, "must be an https:// URL (plain http:// only on loopback): tokens and secrets cross it");

const OAUTH_MODES = ["clientCredentials", "tokenExchange", "userConsent"] as const;

export const oauthSchema = z
  .object({
    mode: z
      .enum(OAUTH_MODES)
      .describe(
        "clientCredentials: the gateway's own token for this upstream (a service account), shared by every caller. tokenExchange: the caller's verified token exchanged (RFC 8693) for one whose audience is this upstream and whose subject is the caller; needs auth.jwt. userConsent: each caller's own grant (authorization code with PKCE), given once through a consent link the client shows its user; needs auth.jwt and auth.vault.",
      ),
    issuer: httpsOrLoopback
      .optional()
      .describe(
        "The authorization server's issuer: its endpoints are found by RFC 8414 discovery. Give issuer, or tokenUrl (and authorizationUrl for userConsent). For userConsent with neither, the server is found from the upstream's own 401 challenge (RFC 9728 resource_metadata).",
      ),
    tokenUrl: httpsOrLoopback.optional().describe("The token endpoint, when it is not discovered from issuer."),
    authorizationUrl: httpsOrLoopback
      .optional()
      .describe("userConsent: the authorization endpoint, when it is not discovered from issuer."),
    revocationUrl: httpsOrLoopback
      .optional()
      .describe(
        "userConsent: the revocation endpoint (RFC 7009) a revoked grant's tokens are sent to, when not discovered.",
      ),
    clientId: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The gateway's client id at the authorization server (${VAR} allowed). Required for clientCredentials and tokenExchange; for userConsent without one, the gateway registers itself (RFC 7591) with each issuer it meets.",
      ),
    clientSecret: z.string().min(1).optional().describe("The client's secret (${VAR} allowed; never logged or shown)."),
    clientAuth: z
      .enum(["client_secret_basic", "client_secret_post", "private_key_jwt", "none"])
      .optional()
      .describe(
        "How the gateway authenticates to the token endpoint. Default: client_secret_basic with a clientSecret, private_key_jwt with a privateKeyFile, else none (a public client).",
      ),
    privateKeyFile: z
      .string()
      .min(1)
      .optional()
      .describe("private_key_jwt: a PEM file (PKCS #8) holding the key that signs the client assertion (RFC 7523)."),
    privateKeyAlg: z
      .enum(["RS256", "PS256", "ES256", "ES384", "EdDSA"])
      .default("RS256")
      .describe("private_key_jwt: the signing algorithm."),
    keyId: z.string().min(1).optional().describe("private_key_jwt: the kid of the signing key, as registered."),
    scopes: z
      .array(
        z
          .string()
          .min(1)
          .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be a scope token"),
      )
      .default([])
      .describe("Scopes asked for."),
    resource: httpsOrLoopback
      .optional()
      .describe(
        "The RFC 8707 resource indicator sent with every token request. Default: the upstream's URL (its origin and path), so the token is minted for this upstream alone.",
      ),
    audience: z
      .string()
      .min(1)
      .optional()
      .describe(
        "tokenExchange: the audience parameter (RFC 8693), when the server names upstreams by audience rather than resource.",
      ),
    actorToken: z
      .enum(["none", "clientCredentials"])
      .default("none")
      .describe(
        "tokenExchange: none: the client authentication alone says who acts; clientCredentials: the gateway's own client-credentials token goes as the actor_token too (the exchanged token then carries act).",
      ),
    subjectTokenType: z
      .string()
      .min(1)
      .default("urn:ietf:params:oauth:token-type:access_token")
      .describe("tokenExchange: the subject_token_type of the caller's token."),
    refreshBeforeMs: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(30_000)
      .describe("A cached token is replaced this long before it expires, so none lapses in flight."),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(120_000)
      .default(10_000)
      .describe("Deadline for one request to the authorization server (discovery, token, registration)."),
    maxCachedTokens: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe(
        "Most tokens kept for this upstream (one per caller for tokenExchange); the least recently used go first.",
      ),
  })
  .strict()
  .superRefine((o, ctx) => {
    const issue = (path: string, message: string): void => ctx.addIssue({ code: "custom", path: [path], message });
    if (o.mode !== "userConsent") {
      if (o.clientId === undefined) issue("clientId", `is required for ${o.mode}`);
      if (o.issuer === undefined && o.tokenUrl === undefined) issue("tokenUrl", `${o.mode} needs issuer or tokenUrl`);
    }
    if (
      o.mode === "userConsent" &&
      o.tokenUrl !== undefined &&
      o.issuer === undefined &&
      o.authorizationUrl === undefined
    )
      issue("authorizationUrl", "userConsent with tokenUrl needs authorizationUrl too (or give issuer)");
    const method = clientAuthOf(o);
    if ((method === "client_secret_basic" || method === "client_secret_post") && o.clientSecret === undefined)
      issue("clientSecret", `is required for clientAuth ${method}`);
    if (method === "private_key_jwt" && o.privateKeyFile === undefined)
      issue("privateKeyFile", "is required for clientAuth private_key_jwt");
    if (method === "none" && o.mode !== "userConsent")
      issue("clientAuth", `${o.mode} needs a confidential client (a clientSecret or a privateKeyFile)`);
    if (o.actorToken !== "none" && o.mode !== "tokenExchange") issue("actorToken", "applies to tokenExchange only");
  });

export type OAuthConfig = z.output<typeof oauthSchema>;

/** The client authentication in force: the configured one, else what the credentials given imply. */
export function clientAuthOf(o: {
  clientAuth?: OAuthConfig["clientAuth"] | undefined;
  clientSecret?: string | undefined;
  privateKeyFile?: string | undefined;
}): NonNullable<OAuthConfig["clientAuth"]> {
  if (o.clientAuth !== undefined) return o.clientAuth;
  if (o.clientSecret !== undefined) return "client_secret_basic";
  if (o.privateKeyFile !== undefined) return "private_key_jwt";
  return "none";
}

/** auth.vault: the keys that encrypt stored user grants (userConsent). */
export const vaultSchema = z
  .object({
    keys: z
      .array(
        z
          .string()
          .refine((k) => Buffer.from(k, "base64").length === 32, "must be 32 bytes, base64 (openssl rand -base64 32)"),
      )
      .min(1)
      .describe(
        "AES-256-GCM keys for stored grants, base64 (32 bytes each; ${VAR} allowed), newest first: the first encrypts, every one decrypts, so a new key is added at the front and an old one dropped once its grants have been re-encrypted or have expired.",
      ),
  })
  .strict();

interface OAuthSetView {
  upstream?: { oauth?: OAuthConfig | undefined } | undefined;
  upstreams: Record<
    string,
    { oauth?: OAuthConfig | undefined; auth?: { upstreamCredentials?: string | undefined } | undefined }
  >;
  auth?: { upstreamCredentials: string; vault?: unknown } | undefined;
}

/** What an oauth block needs of the rest of the config: a verified caller to act for, keys to keep grants under. */
export function refineOAuth(c: OAuthSetView, ctx: z.RefinementCtx): void {
  const blocks: [string[], OAuthConfig, string | undefined][] = [];
  if (c.upstream?.oauth) blocks.push([["upstream", "oauth"], c.upstream.oauth, c.auth?.upstreamCredentials]);
  for (const [name, block] of Object.entries(c.upstreams))
    if (block.oauth)
      blocks.push([
        ["upstreams", name, "oauth"],
        block.oauth,
        block.auth?.upstreamCredentials ?? c.auth?.upstreamCredentials,
      ]);
  for (const [path, oauth, credentials] of blocks) {
    if (oauth.mode !== "clientCredentials" && c.auth === undefined)
      ctx.addIssue({
        code: "custom",
        path: [...path, "mode"],
        message: `${oauth.mode} needs auth.jwt: the caller's verified token ${oauth.mode === "tokenExchange" ? "is what is exchanged" : "names whose grant is used"}`,
      });
    if (oauth.mode === "userConsent" && c.auth !== undefined && c.auth.vault === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["auth", "vault", "keys"],
        message: "userConsent needs auth.vault.keys: stored grants are encrypted",
      });
    if (credentials === "forward")
      ctx.addIssue({
        code: "custom",
        path,
        message:
          "oauth sends the upstream a token of its own, but upstreamCredentials is forward (the caller's token); choose one",
      });
  }
}
