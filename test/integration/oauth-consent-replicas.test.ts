// userConsent on replicas that share Redis (issue 35): a grant given through one replica is used by another
// (each test on its own key prefix, cleaned up), a revocation on one is seen by all, a grant tampered with in
// Redis or sealed under a key since removed asks for consent again, a federated endpoint's member uses the
// grant too, and no token, code or verifier appears in any log line, metric or status page.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GrantStore } from "../../src/credentials/consent/grant-store.js";
import { RedisGrantBackend } from "../../src/credentials/consent/redis-grants.js";
import { GrantVault } from "../../src/credentials/consent/vault.js";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import { callerIdentity } from "../../src/policy/sets/identity.js";
import {
  capturedLog,
  consentAs,
  consentConfig,
  linkOfInputRequired,
  modernCall,
  startConsentParts,
  type ConsentParts,
  textOfAnswer,
  vaultKey,
  type CapturedLog,
} from "../helpers/consent-gateway.js";
import type { TestGateway } from "../helpers/gateway.js";
import type { TestIdp } from "../helpers/jwks.js";
import { routeOf } from "../helpers/many-upstreams.js";
import type { AuthServer } from "../helpers/oauth-server.js";
import { fileRedis, TEST_REDIS_URL } from "../helpers/redis.js";
import type { TokenUpstream } from "../helpers/token-upstream.js";

const { redis, opened } = fileRedis();
let idp: TestIdp;
let as: AuthServer;
let upstream: TokenUpstream;
let browser: Browser;

let parts: ConsentParts | undefined;

beforeAll(async () => {
  parts = await startConsentParts();
  ({ idp, as, upstream, browser } = parts);
});

afterAll(async () => {
  await parts?.close();
});

/** One replica on `prefix`, with the vault `keys`: the upstream saas and a federated endpoint over it. */
async function replica(prefix: string, keys: string[]): Promise<{ gw: TestGateway; log: CapturedLog }> {
  const log = capturedLog();
  const config: GatewayConfigInput = consentConfig({
    idp,
    keys,
    upstreams: { saas: { url: upstream.url, oauth: { mode: "userConsent", scopes: ["mcp:read"] } } },
    extra: {
      federated: { all: { upstreams: ["saas"] } },
      tasks: { store: TEST_REDIS_URL, storePrefix: prefix },
    },
  });
  const gw = await startGateway(config, { logger: log.logger });
  opened.push(async () => void (await gw.close(0)));
  return { gw, log };
}

/** The grant as Redis keeps it, opened with the test's copy of the key (what no log may show). */
async function storedGrant(prefix: string, key: string, sub: string) {
  const store = new GrantStore(new RedisGrantBackend(redis.client, prefix), new GrantVault([key]), 60_000, Date.now);
  const read = await store.read({
    issuer: as.issuer,
    upstream: "saas",
    caller: callerIdentity(`${idp.issuer}\n${sub}`, "jwt"),
  });
  if (read.kind !== "grant") throw new Error(`no grant for ${sub}: ${read.kind}`);
  return read.grant;
}

describe("userConsent on two replicas sharing Redis", () => {
  it("a grant given through replica 1 is used by replica 2, on its named route and its federated endpoint", async () => {
    const prefix = redis.freshPrefix();
    const key = vaultKey();
    const one = await replica(prefix, [key]);
    const two = await replica(prefix, [key]);
    const token = await idp.token("alice");
    const link = linkOfInputRequired(await modernCall(routeOf(one.gw, "saas"), token));
    await consentAs(browser, link, "alice", one.gw.origin, "saas");
    expect(textOfAnswer(await modernCall(routeOf(two.gw, "saas"), token))).toBe("sub=alice act=-");
    expect(textOfAnswer(await modernCall(routeOf(two.gw, "all"), token, "saas__whoami"))).toBe("sub=alice act=-");
    expect(upstream.calls.at(-1)).toMatchObject({ sub: "alice", aud: upstream.url });

    // Revoked through replica 2: replica 1 asks for consent again.
    const revoked = await fetch(`${two.gw.origin}/oauth/saas/grant`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await revoked.json()).toEqual({ revoked: true });
    linkOfInputRequired(await modernCall(routeOf(one.gw, "saas"), token));
  });

  it("a federated endpoint's call with no grant answers with the consent link, which works", async () => {
    const prefix = redis.freshPrefix();
    const { gw } = await replica(prefix, [vaultKey()]);
    const token = await idp.token("bob");
    const first = await modernCall(routeOf(gw, "all"), token, "saas__whoami");
    const link = linkOfInputRequired(first);
    expect(link).toContain("/oauth/saas/start?state=");
    await consentAs(browser, link, "bob", gw.origin, "saas");
    expect(textOfAnswer(await modernCall(routeOf(gw, "all"), token, "saas__whoami"))).toBe("sub=bob act=-");
  });

  it("a grant tampered with in Redis, or sealed under a key no longer listed, asks for consent again", async () => {
    const prefix = redis.freshPrefix();
    const [oldKey, newKey] = [vaultKey(), vaultKey()];
    const first = await replica(prefix, [oldKey]);
    const token = await idp.token("carol");
    await consentAs(
      browser,
      linkOfInputRequired(await modernCall(routeOf(first.gw, "saas"), token)),
      "carol",
      first.gw.origin,
      "saas",
    );

    // Used once (the grant is rewritten, still under the old key), so the next replica only reads it.
    expect(textOfAnswer(await modernCall(routeOf(first.gw, "saas"), token))).toBe("sub=carol act=-");
    // Rotation: a replica with the new key first still opens the old key's grant.
    const rotated = await replica(prefix, [newKey, oldKey]);
    expect(textOfAnswer(await modernCall(routeOf(rotated.gw, "saas"), token))).toBe("sub=carol act=-");
    // Without the old key: consent again.
    const dropped = await replica(prefix, [newKey]);
    linkOfInputRequired(await modernCall(routeOf(dropped.gw, "saas"), token));
    expect(dropped.log.text()).toContain("no longer listed");

    // A new grant, then one byte of its ciphertext flipped in Redis.
    await consentAs(
      browser,
      linkOfInputRequired(await modernCall(routeOf(dropped.gw, "saas"), token)),
      "carol",
      dropped.gw.origin,
      "saas",
    );
    expect(textOfAnswer(await modernCall(routeOf(dropped.gw, "saas"), token))).toBe("sub=carol act=-");
    const [grantKey] = (await redis.keys(`${prefix}oauth:grant:`)) as [string];
    const blob = (await redis.client.get(grantKey)) as string;
    const last = blob.at(-2) === "A" ? "B" : "A";
    await redis.client.set(grantKey, `${blob.slice(0, -2)}${last}${blob.slice(-1)}`, "KEEPTTL");
    linkOfInputRequired(await modernCall(routeOf(dropped.gw, "saas"), token));
    expect(dropped.log.text()).toContain("does not authenticate");
  });

  it("no token, code, verifier or vault key appears in a log line, a metric, the status page or an answer", async () => {
    const prefix = redis.freshPrefix();
    const key = vaultKey();
    const { gw, log } = await replica(prefix, [key]);
    const token = await idp.token("dave");
    const link = linkOfInputRequired(await modernCall(routeOf(gw, "saas"), token));
    const landed = await consentAs(browser, link, "dave", gw.origin, "saas");
    const answer = await modernCall(routeOf(gw, "saas"), token);
    expect(textOfAnswer(answer)).toBe("sub=dave act=-");
    const grant = await storedGrant(prefix, key, "dave");
    const state = String(landed.url.searchParams.get("state"));
    // The PKCE verifier, sealed in the state: opened with the test's copy of the key.
    const claims = JSON.parse(Buffer.from(state.split(".")[0] as string, "base64url").toString()) as {
      sealed: string;
      nonce: string;
    };
    const { verifier } = JSON.parse(new GrantVault([key]).open(claims.sealed, `pkce\n${claims.nonce}`)) as {
      verifier: string;
    };
    const secrets = {
      accessToken: grant.accessToken,
      refreshToken: grant.refreshToken as string,
      code: String(landed.url.searchParams.get("code")),
      verifier,
      vaultKey: key,
      callerToken: token,
    };
    const auth = { authorization: "Bearer operator-token-0123456789" };
    const places = {
      log: log.text(),
      metrics: await (await fetch(`${gw.origin}/metrics`, { headers: auth })).text(),
      status: await (await fetch(`${gw.origin}/status.json`, { headers: auth })).text(),
      answer: answer.text,
      page: landed.text,
    };
    for (const [place, text] of Object.entries(places))
      for (const [name, secret] of Object.entries(secrets))
        expect(text.includes(secret), `${name} in ${place}`).toBe(false);
    expect(grant.refreshToken).toBeDefined();
  });
});
