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
import { parseExposition, value } from "../helpers/prometheus.js";

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

async function scrape() {
  const res = await fetch(`${gateway.metricsOrigin}/metrics`);
  return parseExposition(await res.text());
}

async function members(): Promise<Array<{ name: string; state: string; openUntil?: string }>> {
  const res = await fetch(`${gateway.metricsOrigin}/status.json`);
  const body = (await res.json()) as { federated?: Array<{ name: string; path: string; members: [] }> };
  expect(body.federated?.map((f) => [f.name, f.path])).toEqual([["fed", "/mcp/fed"]]);
  return body.federated?.[0]?.members ?? [];
}

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

  it("shows on /metrics and /status.json: the members left out, by reason, and the open breaker", async () => {
    const samples = await scrape();
    const missing = "mcp_gateway_federation_list_missing_total";
    expect(value(samples, missing, { federated: "fed", upstream: "two", reason: "error" })).toBe(2);
    expect(value(samples, missing, { federated: "fed", upstream: "two", reason: "open" })).toBe(1);
    expect(value(samples, missing, { federated: "fed", upstream: "one" })).toBeUndefined();
    const open = "mcp_gateway_federation_breaker_open";
    expect(value(samples, open, { federated: "fed", upstream: "two" })).toBe(1);
    expect(value(samples, open, { federated: "fed", upstream: "one" })).toBe(0);
    const [first, second] = await members();
    expect(first).toEqual({ name: "one", state: "served" });
    expect(second).toMatchObject({ name: "two", state: "open" });
    expect(Date.parse(second?.openUntil ?? "")).toBeGreaterThan(Date.now() + skew);
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
    expect((await members()).map((m) => m.state)).toEqual(["served", "served"]);
    expect(value(await scrape(), "mcp_gateway_federation_breaker_open", { federated: "fed", upstream: "two" })).toBe(0);
  });
});
