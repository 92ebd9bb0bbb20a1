import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { connectExtTasksClient, eventually, startRecordingProxy, type ExtTasksClientHandle, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";

describe("probe", () => {
  let up: Awaited<ReturnType<typeof startSdkUpstream>>; let proxy: RecordingProxy; let gw: TestGateway; let h: ExtTasksClientHandle;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    up = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
    proxy = await startRecordingProxy(up.url);
    gw = await startTestGateway(proxy.url, { tasks: { thresholdMs: 200, pollIntervalMs: 50, rules: [{ tool: "ask_user", mode: "always" }] } });
    h = await connectExtTasksClient(gw.url, { onElicit: () => new Promise((r) => { release = () => r({ action: "accept", content: { name: "late" } }); }) });
  });
  afterAll(async () => { await h.close(); await gw.close(); await proxy.close(); await up.close(); });

  it("cancel while input_required", async () => {
    const ex = await h.session.callTool("ask_user", {});
    if (ex.kind !== "task") throw new Error("no task");
    await eventually(() => (h.inputs.length > 0 ? true : undefined), "input");
    await ex.cancel();
    const snap = await h.session.task(ex.handle.taskId).snapshot();
    console.log("SNAP", JSON.stringify(snap.raw));
    release();
    await new Promise((r) => setTimeout(r, 300));
    console.log("PROXY", JSON.stringify(proxy.posted().slice(-4).map((p) => p.message)));
    console.log("DISPATCHED", JSON.stringify(h.dispatched.slice(-4).map((d) => [d.request.method, d.response])));
    console.log("ERRORS", h.errors.map((e) => e.message));
    expect(snap.status).toBe("cancelled");
  });

  it("abort the call before the threshold", async () => {
    const ac = new AbortController();
    const p = h.session.callTool("slow_task", { durationMs: 3000, steps: 3 }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 80);
    await expect(p).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 500));
    console.log("PROXY2", JSON.stringify(proxy.posted().slice(-3).map((p) => [p.message, p.exchange.closedByGateway])));
    console.log("DISPATCHED2", JSON.stringify(h.dispatched.slice(-3).map((d) => [d.request.method, d.response, d.failure])));
  });

  it("abort the call right around the threshold", async () => {
    for (const ms of [190, 200, 205, 210, 220]) {
      const ac = new AbortController();
      const p = h.session.callTool("slow_task", { durationMs: 3000 + ms, steps: 3 }, { signal: ac.signal });
      setTimeout(() => ac.abort(), ms);
      const r = await p.then((x) => x.kind, (e: unknown) => String(e));
      await new Promise((res) => setTimeout(res, 300));
      const call = proxy.posted().find((x) => x.message.method === "tools/call" && JSON.stringify(x.message.params).includes(String(3000 + ms)));
      const cancelled = proxy.posted().some((x) => x.message.method === "notifications/cancelled" && (x.message.params as Record<string, unknown>).requestId === call?.message.id);
      console.log("ABORT@", ms, r, "upstream cancelled:", cancelled, "closed:", call?.exchange.closedByGateway, "last:", JSON.stringify(h.dispatched.slice(-2).map((d) => [d.request.method, d.response ?? d.failure])));
    }
  });
});
