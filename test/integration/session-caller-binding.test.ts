// auth.jwt with the token dropped before the upstream (upstreamCredentials "drop", the default): the upstream
// cannot tell callers apart, so the gateway binds a legacy pass-through session to the verified caller of its
// first request, in the shared store (issue 23). Two gateways on one Redis in front of the SDK 1.x demo server:
// the session's own subject keeps using it on both (a refreshed token too); another verified subject presenting
// the same Mcp-Session-Id gets 404 on either, and the upstream never hears that request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type RunningGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { INIT_REQUEST, bearerPost } from "../helpers/http.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";

const RESOURCE = "https://gateway.test/mcp";

let idp: TestIdp;
let upstream: SdkUpstream;
let redis: TestRedis;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  [idp, upstream, redis] = await Promise.all([
    startTestIdp({ audience: RESOURCE }),
    startSdkUpstream({ host: "127.0.0.1", port: 0 }),
    testRedis(),
  ]);
});

afterAll(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close(0)));
  await upstream?.close();
  await idp?.close();
  await redis?.cleanup();
});

async function gateway(prefix: string): Promise<RunningGateway> {
  const g = await startGateway({
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    tasks: { store: TEST_REDIS_URL, storePrefix: prefix },
    log: { level: "error" },
    auth: {
      jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE },
      resourceMetadata: { resource: RESOURCE, authorization_servers: [idp.issuer] },
    },
  });
  gateways.push(g);
  return g;
}

const post = bearerPost;

describe("a pass-through session under auth.jwt (token dropped)", () => {
  it("is bound to the caller of its first request, on every replica", async () => {
    const prefix = redis.freshPrefix();
    const [a, b] = [await gateway(prefix), await gateway(prefix)];
    const ada = await idp.token("ada");
    const mallory = await idp.token("mallory");

    const init = await post(a.url, ada, INIT_REQUEST);
    expect(init.status).toBe(200);
    await init.text();
    const sessionId = init.headers.get("mcp-session-id") ?? "";
    expect(sessionId).not.toBe("");
    const first = await post(a.url, ada, { jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
    expect(first.status).toBe(202);
    await first.text();

    for (const g of [a, b]) {
      const stolen = await post(g.url, mallory, { jsonrpc: "2.0", id: 7, method: "tools/list" }, sessionId);
      expect(stolen.status).toBe(404);
      expect(await stolen.json()).toMatchObject({ id: 7, error: { data: { reason: "session_not_found" } } });
      const del = await fetch(g.url, {
        method: "DELETE",
        headers: { authorization: `Bearer ${mallory}`, "mcp-session-id": sessionId },
      });
      expect(del.status).toBe(404);
      await del.text();
    }
    // The session's own caller, with a refreshed token, on both replicas: still its session.
    const refreshed = await idp.token("ada", { ttlSec: 600 });
    for (const g of [a, b]) {
      const list = await post(g.url, refreshed, { jsonrpc: "2.0", id: 8, method: "tools/list" }, sessionId);
      expect(list.status).toBe(200);
      expect(await list.text()).toContain('"echo"');
    }
    // The binding lives in the store, under the replicas' prefix.
    expect(await redis.keys(`${prefix}session-caller:`)).toHaveLength(1);
  });
});
