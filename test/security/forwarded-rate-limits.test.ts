// Issue 33, finding 3: rate limits hold on a session another replica holds.
//
// Attack stopped: a caller whose session is held by one replica sends its tools/call to any other replica. That
// replica forwards the request to the session's owner over the internal listener, and the owner exempts forwarded
// requests from rate limits ("checked where it arrived"), but the replica it arrived at never checked it: every
// request that lands away from the owner is free, so a balancer spreading a caller's requests over N replicas
// multiplies its budget by nearly N. Fixed, the budget is one, wherever each request lands.
//
// Two replica processes sharing the test Redis (a key prefix of their own), a stdio upstream (server-everything:
// its sessions are the gateway's, held by the replica that opened them), a per-caller limit of 4 tools/call in a
// window far longer than the test (nothing refills meanwhile), and 12 calls on one session alternating between
// the replicas: at most 4 are served, every other one is 429 with reason rate_limited.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { replicaConfig, Replicas, type Json, START_LINE } from "../helpers/replicas.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { everythingCommand, rpc } from "../helpers/stdio-servers.js";

const PROTOCOL = "2025-11-25";
/** Who calls (per-caller budgets are keyed by the credential headers' digest when auth.jwt is off). */
const CALLER = { authorization: "Bearer finding-3-caller" };
const BUDGET = 4;
const CALLS = 12;
/** 4 per hour: one request's worth refills every 15 minutes, far beyond the test. */
const LIMITS: Json = {
  rules: [{ name: "four-calls", method: "tools/call", per: "caller", requests: BUDGET, perMs: 3_600_000 }],
};

const replicas = new Replicas();
let redis: TestRedis;

beforeAll(async () => {
  redis = await testRedis();
});

afterEach(async () => {
  await replicas.killAll();
});

afterAll(async () => {
  await replicas.cleanup();
  await redis?.cleanup();
});

function config(prefix: string): Json {
  return replicaConfig(
    { command: everythingCommand() },
    TEST_REDIS_URL,
    prefix,
    { adaptive: false },
    { limits: LIMITS },
  );
}

/** initialize + notifications/initialized on `url`: a session of the replica behind it. */
async function openSession(url: string): Promise<Record<string, string>> {
  const init = await rpc(
    url,
    {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "finding-3", version: "1" } },
    },
    CALLER,
  );
  const sessionId = init.headers.get("mcp-session-id");
  if (init.status !== 200 || !sessionId)
    throw new Error(`initialize failed: ${init.status} ${JSON.stringify(init.message)}`);
  const headers = { ...CALLER, "mcp-session-id": sessionId, "mcp-protocol-version": PROTOCOL };
  const ack = await rpc(url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
  expect(ack.status).toBe(202);
  return headers;
}

describe("a session held by one replica, called through both", () => {
  it("spends one budget: at most 4 of 12 tools/call are served, the rest are 429 rate_limited", async () => {
    const prefix = redis.freshPrefix();
    const [owner, other] = await Promise.all([
      replicas.start("owner", config(prefix), [], START_LINE),
      replicas.start("other", config(prefix), [], START_LINE),
    ]);
    // Opened on the owner directly: the owner holds the stdio session; the other replica forwards to it.
    const session = await openSession(owner.url);

    const outcomes: Array<{ via: string; status: number; reason: unknown; text: string | undefined }> = [];
    for (let i = 0; i < CALLS; i++) {
      const via = i % 2 === 0 ? owner : other;
      const answer = await rpc(
        via.url,
        {
          jsonrpc: "2.0",
          id: 100 + i,
          method: "tools/call",
          params: { name: "echo", arguments: { message: `m${i}` } },
        },
        session,
      );
      const result = answer.message?.result as { content?: Array<{ text?: string }> } | undefined;
      const error = answer.message?.error as { data?: { reason?: unknown } } | undefined;
      outcomes.push({
        via: via.name,
        status: answer.status,
        reason: error?.data?.reason,
        text: result?.content?.[0]?.text,
      });
    }

    const served = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    // Every served call is a real echo on the session (the session works on both replicas).
    for (const o of served) expect(o.text, JSON.stringify(o)).toMatch(/^Echo: m\d+$/);
    expect(served.length, `served: ${JSON.stringify(outcomes)}`).toBeGreaterThan(0);
    // The attack: on today's code about 10 of the 12 are served (every call that landed on `other` is free).
    expect(served.length, `more than ${BUDGET} served: ${JSON.stringify(outcomes)}`).toBeLessThanOrEqual(BUDGET);
    expect(refused).toHaveLength(CALLS - served.length);
    for (const o of refused) expect(o).toMatchObject({ status: 429, reason: "rate_limited" });
  }, 60_000);
});
