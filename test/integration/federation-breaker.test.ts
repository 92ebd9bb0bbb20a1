// A federated endpoint whose member dies mid-run (a real SDK upstream closed while the gateway runs): lists keep
// answering with the other member, the dead member's breaker opens after federation.breakerFailures failures,
// its calls get 503 upstream_unavailable with Retry-After, and once the member is back (a reload pointing it at
// a new server) and the back-off has passed (the gateway's clock, moved forward), it is served again. No waits:
// the clock is the gateway's own (options.now).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { manyConfig, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc } from "../helpers/modern-rpc.js";
import type { TestGateway } from "../helpers/gateway.js";

const BACKOFF_MS = 60_000;
let one: SdkUpstream;
let two: SdkUpstream;
let twoAgain: SdkUpstream | undefined;
let gateway: TestGateway;
let skew = 0;

const config = (twoUrl: string): GatewayConfigInput => ({
  upstreams: { one: { url: one.url }, two: { url: twoUrl, connectTimeoutMs: 1_000 } },
  federated: { fed: { upstreams: ["one", "two"] } },
  federation: { listTimeoutMs: 5_000, breakerFailures: 2, breakerBackoffMs: BACKOFF_MS },
});

beforeAll(async () => {
  one = await startSdkUpstream();
  two = await startSdkUpstream();
  gateway = await startManyGateway(config(two.url), { now: () => Date.now() + skew });
});

afterAll(async () => {
  await gateway?.close();
  await one?.close();
  await twoAgain?.close();
});

const fed = () => `${gateway.url}/fed`;

async function toolNames(): Promise<string[]> {
  const answer = await modernRpc(fed(), "tools/list", {});
  expect(answer.status, answer.text).toBe(200);
  return ((answer.body.result?.tools ?? []) as Array<{ name: string }>).map((t) => t.name);
}

describe("a federated member that dies", () => {
  it("is listed while it is up", async () => {
    const names = await toolNames();
    expect(names).toContain("one__echo");
    expect(names).toContain("two__echo");
  });

  it("is left out of the lists once it is gone, the other member answering", async () => {
    await two.close();
    for (let i = 0; i < 2; i++) {
      const names = await toolNames();
      expect(names).toContain("one__echo");
      expect(names.some((n) => n.startsWith("two__"))).toBe(false);
    }
  });

  it("has its calls refused with upstream_unavailable and Retry-After once its breaker is open", async () => {
    const answer = await callTool(fed(), "two__echo", { text: "hi" });
    expect(answer.status, answer.text).toBe(503);
    expect(answer.body.error?.data).toMatchObject({ reason: "upstream_unavailable", upstream: "two" });
    expect(answer.body.error?.message).toContain("two");
    const retryAfter = Number(answer.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(BACKOFF_MS / 1000);
    // The other member is served as before, and lists still answer (the open member is not asked).
    const echo = await callTool(fed(), "one__echo", { text: "hi" });
    expect(echo.status, echo.text).toBe(200);
    expect(await toolNames()).toContain("one__echo");
  });

  it("is served again once it is back and its back-off has passed", async () => {
    twoAgain = await startSdkUpstream();
    gateway.reload(manyConfig(config(twoAgain.url)));
    // Still open: the back-off has not passed.
    expect((await callTool(fed(), "two__echo", { text: "hi" })).status).toBe(503);
    skew += BACKOFF_MS;
    // Half-open: the next list tries it, its answer closes the breaker.
    expect(await toolNames()).toContain("two__echo");
    const echo = await callTool(fed(), "two__echo", { text: "back" });
    expect(echo.status, echo.text).toBe(200);
    expect(JSON.stringify(echo.body.result)).toContain("back");
  });
});
