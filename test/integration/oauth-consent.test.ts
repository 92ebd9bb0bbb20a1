// userConsent end to end (issue 35), with real parts: oidc-provider as the upstream's authorization server,
// an SDK upstream that verifies its bearer tokens and records who called, Chromium clicking through the
// consent, a 2025-11-25 SDK client and raw 2026-07-28 requests. The gateway finds the authorization server
// from the upstream's own 401 (RFC 9728, then RFC 8414) and registers itself there (RFC 7591).
import type { Browser } from "playwright-core";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { callerIdentity } from "../../src/policy/sets/identity.js";
import {
  capturedLog,
  consentAs,
  consentConfig,
  linkOfError,
  linkOfInputRequired,
  modernCall,
  startConsentParts,
  type ConsentParts,
  textOfAnswer,
  URL_CAPS,
  vaultKey,
} from "../helpers/consent-gateway.js";
import type { TestGateway } from "../helpers/gateway.js";
import type { TestIdp } from "../helpers/jwks.js";
import { routeOf } from "../helpers/many-upstreams.js";
import type { AuthServer } from "../helpers/oauth-server.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import type { TokenUpstream } from "../helpers/token-upstream.js";

let idp: TestIdp;
let as: AuthServer;
let upstream: TokenUpstream;
let browser: Browser;
const gateways: TestGateway[] = [];

let parts: ConsentParts | undefined;

beforeAll(async () => {
  parts = await startConsentParts({ accessTokenTtlSec: 120 });
  ({ idp, as, upstream, browser } = parts);
});

afterEach(async () => {
  for (const gw of gateways.splice(0)) await gw.close(0);
});

afterAll(async () => {
  await parts?.close();
});

async function gateway(opts: { now?: () => number; keys?: string[] } = {}) {
  const log = capturedLog();
  const gw = await startGateway(
    consentConfig({
      idp,
      keys: opts.keys ?? [vaultKey()],
      upstreams: { saas: { url: upstream.url, oauth: { mode: "userConsent", scopes: ["mcp:read"] } } },
    }),
    { logger: log.logger, ...(opts.now && { now: opts.now }) },
  );
  gateways.push(gw);
  return { gw, log, url: routeOf(gw, "saas") };
}

const bearer = async (sub: string) => `Bearer ${await idp.token(sub)}`;

describe("userConsent, both client eras", () => {
  it("a 2026-07-28 client gets input_required with the consent link; after consent its retry reaches the upstream as its user", async () => {
    const { gw, url, log } = await gateway();
    const token = await idp.token("bob");
    const first = await modernCall(url, token);
    const link = linkOfInputRequired(first);
    expect(link.startsWith(`${gw.origin}/oauth/saas/start?state=`)).toBe(true);
    expect(upstream.calls.filter((c) => c.sub === "bob")).toHaveLength(0);

    const page = await consentAs(browser, link, "bob", gw.origin, "saas");
    expect(page.text).toContain("You can return to your client");

    const retry = await modernCall(url, token);
    expect(textOfAnswer(retry)).toBe("sub=bob act=-");
    expect(upstream.calls.at(-1)).toMatchObject({ tool: "whoami", sub: "bob", aud: upstream.url });
    // The audit trail: granted, then used once.
    expect(log.text()).toContain('"audit":"consent.granted"');
    expect(log.text()).toContain('"audit":"consent.used"');
  });

  it("a 2026-07-28 client that takes no URL elicitation gets -32042 with the link", async () => {
    const { url } = await gateway();
    const first = await modernCall(url, await idp.token("carol"), "whoami", {
      extensions: URL_CAPS.extensions,
    });
    expect(linkOfError(first.body.error)).toContain("/oauth/saas/start?state=");
  });

  it("a 2025-11-25 SDK client gets -32042 with the link; after consent it connects and calls as its user", async () => {
    const { gw, url } = await gateway();
    const headers = { authorization: await bearer("alice") };
    const refused = await connectSdkClient(url, { headers }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(McpError);
    const link = linkOfError(refused as McpError);
    await consentAs(browser, link, "alice", gw.origin, "saas");
    const client = await connectSdkClient(url, { headers });
    try {
      const result = await client.client.callTool({ name: "whoami", arguments: {} });
      expect(result.content).toEqual([{ type: "text", text: "sub=alice act=-" }]);
    } finally {
      await client.close();
    }
  });

  it("two users each reach the upstream as themselves", async () => {
    const { gw, url } = await gateway();
    for (const user of ["dave", "erin"]) {
      const token = await idp.token(user);
      await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), user, gw.origin, "saas");
    }
    expect(textOfAnswer(await modernCall(url, await idp.token("erin")))).toBe("sub=erin act=-");
    expect(textOfAnswer(await modernCall(url, await idp.token("dave")))).toBe("sub=dave act=-");
  });
});

describe("userConsent: refresh and revocation", () => {
  it("refreshes an access token about to expire with its refresh token", async () => {
    let clock = Date.now();
    const { gw, url, log } = await gateway({ now: () => clock });
    const token = await idp.token("frank");
    await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), "frank", gw.origin, "saas");
    const refreshesBefore = as.tokenRequests.filter((r) => r.grantType === "refresh_token").length;
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=frank act=-");
    expect(as.tokenRequests.filter((r) => r.grantType === "refresh_token")).toHaveLength(refreshesBefore);
    // Past the access token's lifetime (120 s, refreshed 30 s before): the next call refreshes first.
    clock += 100_000;
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=frank act=-");
    const refreshes = as.tokenRequests.filter((r) => r.grantType === "refresh_token");
    expect(refreshes).toHaveLength(refreshesBefore + 1);
    expect(refreshes.at(-1)?.ok).toBe(true);
    const metrics = await (
      await fetch(`${gw.origin}/metrics`, { headers: { authorization: "Bearer operator-token-0123456789" } })
    ).text();
    expect(metrics).toMatch(/kind="refresh",outcome="ok"[^\n]*\} 1/);
    expect(log.text()).not.toContain('"level":"error"');
  });

  it("a caller revokes their own grant (and the server's tokens); the next call asks for consent again", async () => {
    const { gw, url, log } = await gateway();
    const revokedGrants: string[] = [];
    as.provider.on("grant.revoked", (_ctx: unknown, grantId: string) => revokedGrants.push(grantId));
    const token = await idp.token("grace");
    await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), "grace", gw.origin, "saas");
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=grace act=-");

    const unauthenticated = await fetch(`${gw.origin}/oauth/saas/grant`, { method: "DELETE" });
    expect(unauthenticated.status).toBe(401);
    const revoked = await fetch(`${gw.origin}/oauth/saas/grant`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await revoked.json()).toEqual({ revoked: true });
    expect(log.text()).toMatch(/"audit":"consent.revoked"[^\n]*"by":"caller"/);
    // The server revoked the grant too (RFC 7009 on its refresh token).
    const grantId = as.consents.find((c) => c.sub === "grace")?.grantId;
    expect(grantId).toBeDefined();
    expect(revokedGrants).toContain(grantId);
    linkOfInputRequired(await modernCall(url, token));
  });

  it("an operator revokes any user's grant with metrics.token", async () => {
    const { gw, url, log } = await gateway();
    const token = await idp.token("heidi");
    await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), "heidi", gw.origin, "saas");
    const without = await fetch(`${gw.origin}/oauth/saas/grants?subject=heidi`, { method: "DELETE" });
    expect(without.status).toBe(401);
    const res = await fetch(`${gw.origin}/oauth/saas/grants?subject=heidi`, {
      method: "DELETE",
      headers: { authorization: "Bearer operator-token-0123456789" },
    });
    expect(await res.json()).toEqual({ revoked: true });
    expect(log.text()).toMatch(/"audit":"consent.revoked"[^\n]*"by":"operator"/);
    linkOfInputRequired(await modernCall(url, token));
    // By identity digest, for a grant that is gone: nothing to revoke.
    const caller = callerIdentity(`${idp.issuer}\nheidi`, "jwt");
    const again = await fetch(`${gw.origin}/oauth/saas/grants?caller=${caller}`, {
      method: "DELETE",
      headers: { authorization: "Bearer operator-token-0123456789" },
    });
    expect(await again.json()).toEqual({ revoked: false });
  });
});

describe("userConsent: a configured authorization server and client", () => {
  it("uses the issuer and the registered confidential client named in the config", async () => {
    const log = capturedLog();
    const keys = [vaultKey()];
    const config = (direct?: { clientId: string; clientSecret: string }) =>
      consentConfig({
        idp,
        keys,
        upstreams: {
          saas: { url: upstream.url, oauth: { mode: "userConsent", scopes: ["mcp:read"] } },
          ...(direct && {
            direct: {
              url: upstream.url,
              oauth: { mode: "userConsent", issuer: as.issuer, scopes: ["mcp:read"], ...direct },
            },
            // The same server named by its endpoints alone (no discovery at all).
            byurl: {
              url: upstream.url,
              oauth: {
                mode: "userConsent",
                tokenUrl: as.tokenUrl,
                authorizationUrl: as.authorizationUrl,
                revocationUrl: as.revocationUrl,
                scopes: ["mcp:read"],
                ...direct,
              },
            },
          }),
        },
      });
    const gw = await startGateway(config(), { logger: log.logger });
    gateways.push(gw);
    // The client is registered for the gateway's callback once its port is known, then configured by a reload.
    const client = await as.registerClient({
      redirect_uris: [`${gw.origin}/oauth/direct/callback`, `${gw.origin}/oauth/byurl/callback`],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    });
    gw.reload(config({ clientId: client.clientId, clientSecret: String(client.clientSecret) }));
    const url = routeOf(gw, "direct");
    const token = await idp.token("ivan");
    const link = linkOfInputRequired(await modernCall(url, token));
    expect(new URL(link).pathname).toBe("/oauth/direct/start");
    await consentAs(browser, link, "ivan", gw.origin, "direct");
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=ivan act=-");
    expect(upstream.calls.at(-1)).toMatchObject({ sub: "ivan", clientId: client.clientId });
    const redeemed = as.tokenRequests.filter((r) => r.grantType === "authorization_code").at(-1);
    expect(redeemed).toMatchObject({ clientId: client.clientId, ok: true });

    const byUrl = routeOf(gw, "byurl");
    const other = await idp.token("kim");
    await consentAs(browser, linkOfInputRequired(await modernCall(byUrl, other)), "kim", gw.origin, "byurl");
    expect(textOfAnswer(await modernCall(byUrl, other))).toBe("sub=kim act=-");
    // The client's secret is in no log line.
    expect(log.text()).not.toContain(String(client.clientSecret));
  });
});

describe("userConsent: the authorization server's word on a grant", () => {
  it("a grant revoked at the authorization server fails its refresh with invalid_grant and asks for consent again", async () => {
    let clock = Date.now();
    const { gw, url } = await gateway({ now: () => clock });
    const token = await idp.token("judy");
    await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), "judy", gw.origin, "saas");
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=judy act=-");
    expect(await as.revokeGrants({ sub: "judy" })).toBeGreaterThan(0);
    clock += 100_000;
    linkOfInputRequired(await modernCall(url, token));
    const refreshes = as.tokenRequests.filter((r) => r.grantType === "refresh_token");
    expect(refreshes.at(-1)).toMatchObject({ ok: false, error: "invalid_grant" });
  });

  it("concurrent calls of one user past expiry share one refresh (the server rotates refresh tokens)", async () => {
    let clock = Date.now();
    const { gw, url } = await gateway({ now: () => clock });
    const token = await idp.token("mallory");
    await consentAs(browser, linkOfInputRequired(await modernCall(url, token)), "mallory", gw.origin, "saas");
    const before = as.tokenRequests.filter((r) => r.grantType === "refresh_token").length;
    clock += 100_000;
    const answers = await Promise.all(Array.from({ length: 5 }, () => modernCall(url, token)));
    for (const answer of answers) expect(textOfAnswer(answer)).toBe("sub=mallory act=-");
    const refreshes = as.tokenRequests.filter((r) => r.grantType === "refresh_token").slice(before);
    expect(refreshes).toEqual([expect.objectContaining({ ok: true })]);
  });
});
