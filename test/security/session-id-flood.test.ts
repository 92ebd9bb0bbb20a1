// Stops: any verified caller filling the shared Redis with 24-hour keys by sending made-up Mcp-Session-Ids
// (issue 33, finding 6).
//
// The attack: under auth.jwt with the token dropped (upstreamCredentials "drop"), the gateway binds a session id to
// the caller of the first request that carries it, with one SET NX of a 24-hour key (store/session-owners.ts:
// `<storePrefix>session-caller:{<session id>}`). It does so for any id a client sends, before the rate limits are
// checked and whether or not the upstream ever issued that id. One caller, limited to 5 requests, writes one key
// per request: 300 requests, 300 keys that live a day.
// Fixed behaviour: a session id that neither the gateway nor the upstream issued writes nothing to Redis; each such
// request is answered 404 (unknown session) or 429 (over the limit); the gateway keeps serving everyone else, and a
// session the upstream really returned through the gateway stays its caller's (404 to anyone else).
// Real parts: the SDK 1.x demo upstream, a local JWKS (jwks.ts), the shared Redis under a per-run prefix (redis.ts).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, bearerPost } from "../helpers/http.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { fileRedis, TEST_REDIS_URL } from "../helpers/redis.js";

const RESOURCE = "https://gateway.test/mcp";
const FLOOD = 300;
/** Requests in flight at once during the flood. */
const PARALLEL = 20;

const { redis, opened } = fileRedis();
let idp: TestIdp;
let upstream: SdkUpstream;

beforeAll(async () => {
  [idp, upstream] = await Promise.all([
    startTestIdp({ audience: RESOURCE }),
    startSdkUpstream({ host: "127.0.0.1", port: 0 }),
  ]);
});
afterAll(async () => {
  await upstream?.close();
  await idp?.close();
});

async function gateway(prefix: string): Promise<TestGateway> {
  const g = await startGateway({
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: { store: TEST_REDIS_URL, storePrefix: prefix },
    auth: {
      jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE },
      upstreamCredentials: "drop",
    },
    limits: { rules: [{ name: "five", method: "*", requests: 5, perMs: 600_000 }] },
  });
  opened.push(() => g.close(0).then(() => undefined));
  return g;
}

const post = bearerPost;

/** A real legacy session through the gateway: initialize, then notifications/initialized; its id. */
async function openSession(url: string, token: string): Promise<string> {
  const init = await post(url, token, INIT_REQUEST);
  expect(init.status).toBe(200);
  await init.text();
  const sessionId = init.headers.get("mcp-session-id") ?? "";
  expect(sessionId).not.toBe("");
  const initialized = await post(url, token, { jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
  expect(initialized.status).toBe(202);
  await initialized.text();
  return sessionId;
}

async function listTools(url: string, token: string, sessionId: string): Promise<{ status: number; text: string }> {
  const res = await post(url, token, { jsonrpc: "2.0", id: 2, method: "tools/list" }, sessionId);
  return { status: res.status, text: await res.text() };
}

describe("made-up Mcp-Session-Ids from a verified caller (auth.jwt, upstreamCredentials drop, Redis store)", () => {
  it("300 of them write no Redis key, each is 404 or 429, and real sessions stay their callers'", async () => {
    const prefix = redis.freshPrefix();
    const g = await gateway(prefix);
    const [ada, eve, mallory, carol] = await Promise.all(["ada", "eve", "mallory", "carol"].map((s) => idp.token(s)));
    const bindings = async (): Promise<string[]> => await redis.keys(`${prefix}session-caller:`);

    // A session the upstream really issued, through the gateway: its caller's, and nobody else's.
    const adaSession = await openSession(g.url, ada as string);
    expect((await listTools(g.url, ada as string, adaSession)).status).toBe(200);
    expect((await listTools(g.url, eve as string, adaSession)).status).toBe(404);

    const keysBefore = await redis.keys(prefix);
    const bindingsBefore = await bindings();
    const ids = Array.from({ length: FLOOD }, () => randomUUID());
    const statuses: number[] = [];
    for (let i = 0; i < ids.length; i += PARALLEL) {
      const batch = ids.slice(i, i + PARALLEL).map(async (id, j) => {
        const res = await post(g.url, mallory as string, { jsonrpc: "2.0", id: i + j, method: "tools/list" }, id);
        await res.text();
        return res.status;
      });
      statuses.push(...(await Promise.all(batch)));
    }

    // The attack: one key per made-up id, each kept for 24 hours.
    const keysAfter = await redis.keys(prefix);
    const written = keysAfter.filter((k) => !keysBefore.includes(k) && ids.some((id) => k.includes(id)));
    expect(written.length, `keys written for made-up session ids (e.g. ${written[0] ?? "none"})`).toBe(0);
    expect((await bindings()).length).toBe(bindingsBefore.length);
    // Each made-up id is an unknown session, or over the caller's limit.
    expect(statuses.filter((s) => s !== 404 && s !== 429)).toEqual([]);

    // Everyone else is still served: ada's session is hers (eve still refused), and a new caller opens one.
    const again = await listTools(g.url, ada as string, adaSession);
    expect(again.status).toBe(200);
    expect(again.text).toContain('"echo"');
    expect((await listTools(g.url, eve as string, adaSession)).status).toBe(404);
    const carolSession = await openSession(g.url, carol as string);
    expect((await listTools(g.url, carol as string, carolSession)).status).toBe(200);
  });
});
