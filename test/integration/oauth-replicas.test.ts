// Upstream credentials on two replicas that share tasks in Redis (issue 35): a call that becomes a task on
// replica 1 runs with its caller's exchanged token, outlives that token (the gateway's clock moves past its
// expiry while the upstream holds the call), and completes; replica 2 serves the task's result to its caller
// only; a later call after expiry is exchanged afresh. Real authorization server (oidc-provider), real Redis.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthServer, TOKEN_EXCHANGE, type AuthServer } from "../helpers/oauth-server.js";
import { startTokenUpstream, type TokenUpstream } from "../helpers/token-upstream.js";
import { startTestIdp, type TestIdp } from "../helpers/jwks.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { fileRedis, TEST_REDIS_URL } from "../helpers/redis.js";
import type { TestGateway } from "../helpers/gateway.js";

const RESOURCE = "https://gateway.test/mcp";
const { redis, opened } = fileRedis();
let as: AuthServer;
let idp: TestIdp;
let upstream: TokenUpstream;
let client: { clientId: string; clientSecret?: string | undefined };
const clock = { offsetMs: 0 };

beforeAll(async () => {
  idp = await startTestIdp({ audience: RESOURCE });
  as = await startAuthServer({ subjectIssuers: [{ issuer: idp.issuer, jwksUrl: idp.jwksUrl }] });
  upstream = await startTokenUpstream({ authServer: as });
  client = await as.registerClient({ grant_types: [TOKEN_EXCHANGE] });
});

afterAll(async () => {
  await upstream?.close();
  await as?.close();
  await idp?.close();
});

async function replica(prefix: string): Promise<TestGateway> {
  const gw = await startManyGateway(
    {
      upstreams: {
        people: {
          url: upstream.url,
          oauth: {
            mode: "tokenExchange",
            issuer: as.issuer,
            clientId: client.clientId,
            clientSecret: client.clientSecret,
          },
        },
      },
      auth: { jwt: { jwksUrl: idp.jwksUrl, issuer: idp.issuer, audience: RESOURCE } },
      tasks: { store: TEST_REDIS_URL, storePrefix: prefix, rules: [{ tool: "slow_whoami", mode: "always" }] },
    },
    { now: () => Date.now() + clock.offsetMs },
  );
  opened.push(async () => void (await gw.close(0)));
  return gw;
}

const textOf = (result: unknown): string =>
  (((result as { content?: unknown[] } | undefined)?.content ?? []) as Array<{ text?: string }>)
    .map((c) => c.text ?? "")
    .join("");

describe("upstream credentials on two replicas", () => {
  it("a task outlives its caller's exchanged token, completes, and is served on the other replica to its caller only", async () => {
    const prefix = redis.freshPrefix();
    const one = await replica(prefix);
    const two = await replica(prefix);
    const alice = { authorization: `Bearer ${await idp.token("alice", { ttlSec: 3_600 })}` };
    const bob = { authorization: `Bearer ${await idp.token("bob", { ttlSec: 3_600 })}` };

    const created = await callTool(routeOf(one, "people"), "slow_whoami", { key: "held" }, { headers: alice });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task" });
    const taskId = created.body.result?.taskId as string;
    await upstream.holding("held");
    const exchanges = as.tokenRequests.filter((r) => r.grantType === TOKEN_EXCHANGE && r.ok).length;

    // The exchanged token lives 300 s: the gateway's clock moves well past it while the upstream holds the call.
    clock.offsetMs = 900_000;
    upstream.release("held");
    const done = await settledTask(routeOf(two, "people"), taskId, alice);
    expect(done.status).toBe("completed");
    expect(textOf(done.result)).toBe("sub=alice");
    // Another caller cannot see it, on either replica.
    const foreign = await modernRpc(routeOf(two, "people"), "tasks/get", { taskId }, { name: taskId, headers: bob });
    expect(foreign.body.error?.code).toBe(-32602);

    // A new call after the expiry is exchanged afresh (on the replica it lands on), not sent with the old token.
    const later = await callTool(routeOf(two, "people"), "whoami", {}, { headers: alice });
    expect(textOf(later.body.result)).toBe(`sub=alice act=${client.clientId}`);
    expect(as.tokenRequests.filter((r) => r.grantType === TOKEN_EXCHANGE && r.ok).length).toBe(exchanges + 1);
    // Never an expired or foreign token upstream (the gateway's own readiness probe, an OPTIONS for no caller,
    // carries none and is answered 401 "missing", which still tells it the upstream is there).
    expect(upstream.rejections.filter((r) => r !== "missing")).toEqual([]);
    clock.offsetMs = 0;
  });
});
