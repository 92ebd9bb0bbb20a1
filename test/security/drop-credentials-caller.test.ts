// Stops: one caller reading, cancelling and spending another caller's tasks and rate limits through an upstream
// whose credentials are dropped without auth.jwt (issue 33, finding 2).
//
// The attack: with no auth.jwt, a caller is known by a digest of its credential headers (Authorization, Cookie,
// X-Api-Key). An upstream block with auth.upstreamCredentials "drop" strips Authorization from the headers before
// the caller's digest is taken, so every caller hashes to the same empty set of credentials: caller B (and a
// request with no credentials at all) is caller A, sees and cancels A's tasks, and uses up A's rate-limit budget.
// Fixed behaviour: the identity comes from the client's own headers; drop only changes what the upstream gets
// (still no Authorization there). The upstream is the SDK 1.x demo server behind a recording proxy, on the named
// route of upstreams.<name>.auth.upstreamCredentials "drop" (the single `upstream` block has no auth setting).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { behindRecordingProxy, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { expectUnknownTaskOn, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";

const A = { authorization: "Bearer A-token-6d1f" };
const B = { authorization: "Bearer B-token-93ce" };
const NONE: Record<string, string> = {};
const ROUTE = "dropped";

type Proxied = { url: string; upstream: SdkUpstream; recorder: RecordingProxy; close(): Promise<void> };
let upstream: Proxied;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  upstream = await behindRecordingProxy(await startSdkUpstream({ host: "127.0.0.1", port: 0 }));
});
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.close(0);
});
afterAll(async () => {
  await upstream?.close();
});

async function gateway(
  extra: { limits?: Parameters<typeof startManyGateway>[0]["limits"] } = {},
  now?: () => number,
): Promise<string> {
  const g = await startManyGateway(
    {
      upstreams: { [ROUTE]: { url: upstream.url, auth: { upstreamCredentials: "drop" } } },
      tasks: { thresholdMs: 60_000, rules: [{ tool: "slow_task", mode: "always" }] },
      ...extra,
    },
    now ? { now } : {},
  );
  gateways.push(g);
  return routeOf(g, ROUTE);
}

/** The upstream never got a client's Authorization header (drop still works); it did get requests. */
function expectNoAuthorizationUpstream(): void {
  const seen = upstream.recorder.exchanges;
  expect(seen.length).toBeGreaterThan(0);
  expect(seen.filter((x) => x.headers.authorization !== undefined).map((x) => x.headers.authorization)).toEqual([]);
}

describe("upstreamCredentials drop without auth.jwt: tasks stay their caller's", () => {
  it("B's and an anonymous tasks/get and tasks/cancel on A's task are -32602 as for an unknown task; A still reads it", async () => {
    const url = await gateway();
    const created = await callTool(url, "slow_task", { durationMs: 1_500, steps: 3 }, { headers: A });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;

    for (const headers of [B, NONE]) {
      // The attack: B (or no one) reads A's task as its own.
      await expectUnknownTaskOn(url, taskId, { method: "tasks/get", headers });
      await expectUnknownTaskOn(url, taskId, { method: "tasks/cancel", headers });
    }
    // A still reads its task, which nobody cancelled, and it completes.
    const mine = await modernRpc(url, "tasks/get", { taskId }, { name: taskId, headers: A });
    expect(mine.body.result, mine.text).toMatchObject({ taskId });
    expect(mine.body.result?.status).not.toBe("cancelled");
    const done = await settledTask(url, taskId, A, 15_000);
    expect(done.status).toBe("completed");
    expectNoAuthorizationUpstream();
  });
});

describe("upstreamCredentials drop without auth.jwt: per-caller rate limits stay per caller", () => {
  it("B spending its 3 calls leaves A its own 3", async () => {
    const clock = Date.parse("2026-11-26T12:00:00Z");
    const url = await gateway(
      { limits: { rules: [{ name: "echo-3", tool: "echo", requests: 3, perMs: 600_000 }] } },
      () => clock,
    );
    const echo = (headers: Record<string, string>, text: string) => callTool(url, "echo", { text }, { headers });

    for (let i = 0; i < 3; i++) {
      const b = await echo(B, `b-${i}`);
      expect(b.status, b.text).toBe(200);
      expect(b.body.result, b.text).toMatchObject({ content: [{ type: "text", text: `b-${i}` }] });
    }
    // The attack: B's calls were spent from A's budget, so A is refused at once.
    for (let i = 0; i < 3; i++) {
      const a = await echo(A, `a-${i}`);
      expect(a.status, `A's call ${i + 1} after B used its 3: ${a.text}`).toBe(200);
      expect(a.body.result, a.text).toMatchObject({ content: [{ type: "text", text: `a-${i}` }] });
    }
    // Each caller's fourth call is over its own limit.
    for (const headers of [A, B]) {
      const over = await echo(headers, "over");
      expect(over.status, over.text).toBe(429);
      expect(over.body.error?.data).toMatchObject({ reason: "rate_limited", rule: "echo-3" });
    }
    expectNoAuthorizationUpstream();
  });
});
