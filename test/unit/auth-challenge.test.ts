import { describe, expect, it } from "vitest";
import {
  bearerChallenge,
  resourceMetadataDocument,
  resourceMetadataPaths,
  resourceMetadataUrl,
} from "../../src/auth/challenge.js";
import { parseBearer } from "../../src/auth/jwt-verifier.js";
import { authJwtSchema, authSchema, gatewayConfigSchema, resourceMetadataSchema } from "../../src/config/schema.js";

describe("bearerChallenge (RFC 6750 §3)", () => {
  it("is a bare Bearer challenge when nothing is given (a request without credentials)", () => {
    expect(bearerChallenge({})).toBe("Bearer");
    expect(bearerChallenge({ realm: undefined, resourceMetadata: undefined })).toBe("Bearer");
    expect(bearerChallenge({ resourceMetadata: "https://gw.example/.well-known/oauth-protected-resource/mcp" })).toBe(
      'Bearer resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"',
    );
  });

  it("names realm, error, error_description, scope and resource_metadata, in that order", () => {
    expect(
      bearerChallenge({
        realm: "mcp",
        error: "invalid_token",
        errorDescription: "token expired",
        scope: "tools:read tasks",
        resourceMetadata: "https://gw.example/.well-known/oauth-protected-resource/mcp",
      }),
    ).toBe(
      'Bearer realm="mcp", error="invalid_token", error_description="token expired", scope="tools:read tasks", resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"',
    );
  });

  it("leaves error_description out without an error", () => {
    expect(bearerChallenge({ errorDescription: "ignored" })).toBe("Bearer");
  });

  it("escapes quotes and backslashes in quoted strings and drops control characters (no header splitting)", () => {
    expect(bearerChallenge({ realm: 'a "quoted" \\ realm' })).toBe('Bearer realm="a \\"quoted\\" \\\\ realm"');
    const v = bearerChallenge({
      realm: "x\r\nSet-Cookie: a=b",
      error: "invalid_token",
      errorDescription: "bad\r\ninjected",
    });
    expect(v).not.toMatch(/[\r\n]/);
    expect(v).toBe('Bearer realm="xSet-Cookie: a=b", error="invalid_token", error_description="bad??injected"');
  });

  it("keeps error_description within RFC 6750's character set", () => {
    const v = bearerChallenge({ error: "invalid_request", errorDescription: 'say "hi" \\ ünïcode' });
    expect(v).toBe(`Bearer error="invalid_request", error_description="say 'hi' / ?n?code"`);
  });
});

describe("RFC 9728 metadata locations", () => {
  it("inserts the well-known segment between host and path", () => {
    expect(resourceMetadataUrl("https://gw.example/mcp")).toBe(
      "https://gw.example/.well-known/oauth-protected-resource/mcp",
    );
    expect(resourceMetadataUrl("https://gw.example:8443/a/mcp")).toBe(
      "https://gw.example:8443/.well-known/oauth-protected-resource/a/mcp",
    );
    expect(resourceMetadataUrl("https://gw.example/")).toBe("https://gw.example/.well-known/oauth-protected-resource");
    expect(resourceMetadataUrl("https://gw.example")).toBe("https://gw.example/.well-known/oauth-protected-resource");
    expect(resourceMetadataUrl("https://gw.example/mcp?tenant=a")).toBe(
      "https://gw.example/.well-known/oauth-protected-resource/mcp?tenant=a",
    );
  });

  it("serves the path-specific document and the root one", () => {
    expect(resourceMetadataPaths("/mcp")).toEqual([
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource",
    ]);
    expect(resourceMetadataPaths("/")).toEqual(["/.well-known/oauth-protected-resource"]);
    expect(resourceMetadataPaths("/mcp", "https://gw.example/mcp")).toEqual([
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource",
    ]);
    expect(resourceMetadataPaths("/mcp", "https://gw.example/team-a/mcp")).toEqual([
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource/team-a/mcp",
      "/.well-known/oauth-protected-resource",
    ]);
  });

  it("builds the document from the config: RFC names, header-only bearer method by default, unset fields left out", () => {
    const config = resourceMetadataSchema.parse({
      resource: "https://gw.example/mcp",
      authorization_servers: ["https://as.example/"],
      scopes_supported: ["tools:read"],
    });
    const document = resourceMetadataDocument(config);
    expect(document).toEqual({
      resource: "https://gw.example/mcp",
      authorization_servers: ["https://as.example/"],
      scopes_supported: ["tools:read"],
      bearer_methods_supported: ["header"],
    });
    expect(Object.isFrozen(document)).toBe(true);
    expect(JSON.parse(JSON.stringify(document))).toEqual(document);
  });
});

describe("parseBearer", () => {
  it("tells no credentials from bad ones", () => {
    expect(parseBearer(undefined)).toEqual({ ok: false, description: "missing bearer token", credentials: false });
    expect(parseBearer("Basic dTpw")).toEqual({ ok: false, description: "missing bearer token", credentials: false });
    expect(parseBearer("Bearer")).toEqual({ ok: false, description: "missing bearer token", credentials: true });
    expect(parseBearer("Bearer a b")).toEqual({
      ok: false,
      description: "malformed Authorization header",
      credentials: true,
    });
    expect(parseBearer("bearer abc.def.ghi")).toEqual({ ok: true, token: "abc.def.ghi" });
    expect(parseBearer("Bearer abc+/=")).toEqual({ ok: true, token: "abc+/=" });
  });
});

describe("auth config", () => {
  const base = {
    jwksUrl: "https://as.example/jwks",
    issuer: "https://as.example/",
    audience: "https://gw.example/mcp",
  };

  it("fills defaults", () => {
    expect(authJwtSchema.parse(base)).toEqual({
      ...base,
      algorithms: ["RS256", "ES256", "PS256", "EdDSA"],
      clockToleranceSec: 60,
      identityClaim: "sub",
      jwksTimeoutMs: 5_000,
      jwksCacheMaxAgeMs: 600_000,
      jwksCooldownMs: 30_000,
      verifiedCacheMs: 60_000,
      verifiedCacheEntries: 10_000,
    });
    const auth = authSchema.parse({ jwt: base });
    expect(auth.upstreamCredentials).toBe("drop");
    expect(auth.upstreamIdentityHeader).toBe("x-mcp-gateway-subject");
    expect(auth.realm).toBeUndefined();
  });

  it("needs exactly one of jwksUrl and jwks", () => {
    const { jwksUrl: _url, ...noKeys } = base;
    expect(authJwtSchema.safeParse(noKeys).success).toBe(false);
    expect(authJwtSchema.safeParse({ ...base, jwks: { keys: [] } }).success).toBe(false);
    expect(
      authJwtSchema.safeParse({ ...noKeys, jwks: { keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y" }] } }).success,
    ).toBe(true);
  });

  it("refuses private and symmetric keys inline", () => {
    const { jwksUrl: _url, ...noKeys } = base;
    expect(
      authJwtSchema.safeParse({ ...noKeys, jwks: { keys: [{ kty: "RSA", n: "n", e: "AQAB", d: "secret" }] } }).success,
    ).toBe(false);
    expect(authJwtSchema.safeParse({ ...noKeys, jwks: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } }).success).toBe(false);
  });

  it('never allows "none" or HS* algorithms', () => {
    for (const alg of ["none", "HS256", "HS384", "HS512"]) {
      expect(authJwtSchema.safeParse({ ...base, algorithms: [alg] }).success, alg).toBe(false);
    }
    expect(authJwtSchema.safeParse({ ...base, algorithms: [] }).success).toBe(false);
    expect(authJwtSchema.safeParse({ ...base, algorithms: ["ES384", "Ed25519"] }).success).toBe(true);
  });

  it("accepts issuer and audience lists", () => {
    expect(
      authJwtSchema.safeParse({ ...base, issuer: ["https://a/", "https://b/"], audience: ["x", "y"] }).success,
    ).toBe(true);
    expect(authJwtSchema.safeParse({ ...base, issuer: [] }).success).toBe(false);
    expect(authJwtSchema.safeParse({ ...base, issuer: "has space" }).success).toBe(false);
  });

  it("refuses an identity header the gateway or the transport uses", () => {
    for (const h of ["Authorization", "cookie", "Mcp-Session-Id", "bad header"]) {
      expect(
        authSchema.safeParse({ jwt: base, upstreamCredentials: "identity", upstreamIdentityHeader: h }).success,
        h,
      ).toBe(false);
    }
  });

  it("is an optional block of the gateway config; the metadata resource has no fragment", () => {
    const auth = {
      jwt: base,
      realm: "mcp",
      resourceMetadata: { resource: "https://gw.example/mcp", authorization_servers: ["https://as.example/"] },
    };
    const parsed = gatewayConfigSchema.parse({ upstream: { url: "http://127.0.0.1:1/mcp" }, auth });
    expect(parsed.auth?.resourceMetadata?.bearer_methods_supported).toEqual(["header"]);
    expect(gatewayConfigSchema.parse({ upstream: { url: "http://127.0.0.1:1/mcp" } }).auth).toBeUndefined();
    const withFragment = {
      ...auth,
      resourceMetadata: { ...auth.resourceMetadata, resource: "https://gw.example/mcp#x" },
    };
    expect(
      gatewayConfigSchema.safeParse({ upstream: { url: "http://127.0.0.1:1/mcp" }, auth: withFragment }).success,
    ).toBe(false);
    expect(
      authSchema.safeParse({
        ...auth,
        resourceMetadata: { resource: "https://gw.example/mcp", authorization_servers: [] },
      }).success,
    ).toBe(false);
  });
});
