// Graceful shutdown covers the answers the gateway produces itself: a bridged
// modern call in progress is waited for (within the grace) and completes; one
// still running when the grace ends is cut, and its upstream call cancelled.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";

let upstream: SdkUpstream;

beforeAll(async () => {
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await upstream?.close();
});

function slowCall(url: string, durationMs: number): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: modernHeaders("tools/call", "slow_task"),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "slow_task", arguments: { durationMs, steps: 1 }, _meta: modernMeta() },
    }),
  });
}

describe("graceful shutdown with bridged modern calls", () => {
  it("waits for a bridged call in progress, which completes with its result", async () => {
    const gw = await startTestGateway(upstream.url);
    const call = slowCall(gw.url, 400);
    while (gw.inFlight() === 0) await new Promise((r) => setTimeout(r, 5));
    const closed = gw.close(10_000);
    const res = await call;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      id: 5,
      result: { resultType: "complete", content: [{ type: "text", text: expect.stringMatching(/^done after/) }] },
    });
    expect(await closed).toEqual({ drained: true });
  });

  it("cuts a bridged call still running when the grace ends", async () => {
    const gw = await startTestGateway(upstream.url);
    const call = slowCall(gw.url, 60_000).then(
      async (r) => ({ status: r.status, text: await r.text().catch(() => "(cut)") }),
      () => ({ status: 0, text: "(cut)" }),
    );
    while (gw.inFlight() === 0) await new Promise((r) => setTimeout(r, 5));
    expect(await gw.close(50)).toEqual({ drained: false });
    const outcome = await call;
    expect(outcome.text).not.toMatch(/done after/);
    expect(gw.inFlight()).toBe(0);
  });
});
