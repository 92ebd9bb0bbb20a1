// userConsent under attack (issue 35): what an attacker can try with consent links, states and callbacks, against
// the real authorization server (oidc-provider), in Chromium. Each refusal leaves no grant and redeems no code.
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { consentInBrowser } from "../helpers/consent-browser.js";
import {
  capturedLog,
  consentConfig,
  linkOfInputRequired,
  modernCall,
  startConsentParts,
  type ConsentParts,
  textOfAnswer,
  vaultKey,
} from "../helpers/consent-gateway.js";
import type { TestGateway } from "../helpers/gateway.js";
import type { TestIdp } from "../helpers/jwks.js";
import { routeOf } from "../helpers/many-upstreams.js";
import { rawRequest } from "../helpers/http.js";
import type { AuthServer } from "../helpers/oauth-server.js";
import type { TokenUpstream } from "../helpers/token-upstream.js";

let idp: TestIdp;
let as: AuthServer;
let upstream: TokenUpstream;
let browser: Browser;
const gateways: TestGateway[] = [];
const contexts: BrowserContext[] = [];

let parts: ConsentParts | undefined;

beforeAll(async () => {
  parts = await startConsentParts();
  ({ idp, as, upstream, browser } = parts);
});

afterEach(async () => {
  for (const c of contexts.splice(0)) await c.close();
  for (const gw of gateways.splice(0)) await gw.close(0);
});

afterAll(async () => {
  await parts?.close();
});

async function gateway() {
  const log = capturedLog();
  const gw = await startGateway(
    consentConfig({
      idp,
      keys: [vaultKey()],
      upstreams: { saas: { url: upstream.url, oauth: { mode: "userConsent", scopes: ["mcp:read"] } } },
    }),
    { logger: log.logger },
  );
  gateways.push(gw);
  return { gw, log, url: routeOf(gw, "saas") };
}

/**
 * A GET as a browser's page navigation says it is (Fetch Metadata), through node:http: Node's fetch always
 * says sec-fetch-mode "cors", which the consent routes refuse as a browser's fetch would be.
 */
async function navigate(url: string | URL, headers: Record<string, string> = {}): Promise<Response> {
  const raw = await rawRequest(String(url), {
    method: "GET",
    headers: { "sec-fetch-mode": "navigate", "sec-fetch-dest": "document", ...headers },
  });
  const out = new Headers();
  for (const [name, value] of Object.entries(raw.headers))
    for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) out.append(name, v);
  return new Response(raw.status === 302 ? null : new Uint8Array(raw.body), { status: raw.status, headers: out });
}

/** Opens a consent link without a browser: the redirect to the authorization server and the binding cookie. */
async function started(link: string): Promise<{ location: URL; cookie: string; status: number }> {
  const res = await navigate(link);
  await res.body?.cancel();
  const setCookie = res.headers.get("set-cookie") ?? "";
  return {
    status: res.status,
    location: new URL(res.headers.get("location") ?? "http://invalid/"),
    cookie: setCookie.split(";")[0] ?? "",
  };
}

/** A browser holding `cookie` for the gateway follows `url` (the authorization server's) through login and Allow. */
async function completeIn(gw: TestGateway, url: string, cookie: string, username: string): Promise<URL> {
  const context = await browser.newContext();
  contexts.push(context);
  const [name, value] = cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, domain: "127.0.0.1", path: "/oauth/saas/", httpOnly: true }]);
  const page = await context.newPage();
  await page.goto(url);
  await page.fill("#username", username);
  await page.click("#sign-in");
  await page.waitForLoadState("load");
  await page.click("#allow");
  await page.waitForURL((u) => u.href.startsWith(`${gw.origin}/oauth/saas/callback`));
  await page.waitForLoadState("load");
  expect(await page.locator("body").innerText()).toContain("You can return to your client");
  return new URL(page.url());
}

const codeRedemptions = () => as.tokenRequests.filter((r) => r.grantType === "authorization_code").length;

describe("consent links and states", () => {
  it("a callback replayed, even with the browser's cookie, is refused and redeems nothing", async () => {
    const { gw, url, log } = await gateway();
    const token = await idp.token("alice");
    const start = await started(linkOfInputRequired(await modernCall(url, token)));
    expect(start.status).toBe(302);
    const landed = await completeIn(gw, start.location.href, start.cookie, "alice");
    expect(textOfAnswer(await modernCall(url, token))).toBe("sub=alice act=-");
    const before = codeRedemptions();
    const replay = await navigate(landed.href, { cookie: start.cookie });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain("not valid");
    expect(codeRedemptions()).toBe(before);
    // The code and the state never reach a log line.
    expect(log.text()).not.toContain(String(landed.searchParams.get("code")));
    expect(log.text()).not.toContain(String(landed.searchParams.get("state")));
  });

  it("a consent link opens once", async () => {
    const { url } = await gateway();
    const link = linkOfInputRequired(await modernCall(url, await idp.token("alice")));
    expect((await started(link)).status).toBe(302);
    const again = await navigate(link);
    expect(again.status).toBe(400);
  });

  it("a flow started for user A and completed in user B's browser is refused: no grant for either", async () => {
    const { gw, url } = await gateway();
    const alice = await idp.token("alice");
    const bob = await idp.token("bob");
    // The attacker (alice) starts the flow and sends the authorization server's URL to bob.
    const start = await started(linkOfInputRequired(await modernCall(url, alice)));
    const landed = await consentInBrowser(browser, start.location.href, {
      username: "bob",
      landsOn: `${gw.origin}/oauth/saas/callback`,
    });
    expect(landed.text).toContain("started in another browser");
    linkOfInputRequired(await modernCall(url, alice));
    linkOfInputRequired(await modernCall(url, bob));
    expect(upstream.calls.filter((c) => c.sub === "bob")).toHaveLength(0);
  });

  it("a consent link opened with another caller's verified token, or a token that does not verify, is refused", async () => {
    const { url } = await gateway();
    const link = linkOfInputRequired(await modernCall(url, await idp.token("alice")));
    const asBob = await fetch(link, {
      redirect: "manual",
      headers: { authorization: `Bearer ${await idp.token("bob")}` },
    });
    expect(asBob.status).toBe(403);
    const forged = await navigate(link, { authorization: "Bearer not.a.token" });
    expect(forged.status).toBe(401);
    // Still good for its own caller.
    const asAlice = await navigate(link, { authorization: `Bearer ${await idp.token("alice")}` });
    expect(asAlice.status).toBe(302);
  });

  it("a callback whose iss is not the flow's issuer, or lacks it, is refused (RFC 9207)", async () => {
    const { url } = await gateway();
    const token = await idp.token("alice");
    for (const iss of ["https://evil.example", undefined]) {
      const start = await started(linkOfInputRequired(await modernCall(url, token)));
      const callback = new URL(start.location.searchParams.get("redirect_uri") ?? "");
      callback.searchParams.set("code", "attacker-code");
      callback.searchParams.set("state", start.location.searchParams.get("state") ?? "");
      if (iss !== undefined) callback.searchParams.set("iss", iss);
      const before = codeRedemptions();
      const res = await navigate(callback, { cookie: start.cookie });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("authorization server other than");
      expect(codeRedemptions()).toBe(before);
    }
  });

  it("a state altered to name another caller does not verify", async () => {
    const { url } = await gateway();
    const start = await started(linkOfInputRequired(await modernCall(url, await idp.token("alice"))));
    const state = start.location.searchParams.get("state") ?? "";
    const [payload, mac] = state.split(".") as [string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const forged = `${Buffer.from(JSON.stringify({ ...claims, caller: "mallory" })).toString("base64url")}.${mac}`;
    const callback = new URL(start.location.searchParams.get("redirect_uri") ?? "");
    callback.searchParams.set("code", "x");
    callback.searchParams.set("state", forged);
    callback.searchParams.set("iss", as.issuer);
    const res = await navigate(callback, { cookie: start.cookie });
    expect(res.status).toBe(400);
  });

  it("a user who declines gets a page that says so, and no grant", async () => {
    const { gw, url } = await gateway();
    const token = await idp.token("carol");
    const landed = await consentInBrowser(browser, linkOfInputRequired(await modernCall(url, token)), {
      username: "carol",
      landsOn: `${gw.origin}/oauth/saas/callback`,
      deny: true,
    });
    expect(landed.text).toContain("declined");
    linkOfInputRequired(await modernCall(url, token));
  });

  it("the consent routes refuse a request the browser marks as not a page navigation (a fetch, a frame)", async () => {
    const { url } = await gateway();
    const link = linkOfInputRequired(await modernCall(url, await idp.token("alice")));
    const res = await fetch(link, {
      redirect: "manual",
      headers: { "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    // Refused before the link was used: it still opens as a page.
    expect((await started(link)).status).toBe(302);
  });

  it("a revocation from another origin's page is refused; an unknown upstream is a 404", async () => {
    const { gw, url } = await gateway();
    const token = await idp.token("alice");
    const res = await fetch(`${gw.origin}/oauth/saas/grant`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}`, origin: "https://evil.example" },
    });
    expect(res.status).toBe(403);
    // Unknown upstreams are said so, to the caller who may ask.
    const unknown = await fetch(`${gw.origin}/oauth/nope/grant`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(unknown.status).toBe(404);
    linkOfInputRequired(await modernCall(url, token));
  });
});
