// One hung upstream does not hold up the others. The SDK 1.x demo upstream runs in a process of its own, and is
// SIGSTOPped (a server that stopped answering; its port still accepts connections): calls to its route wait,
// while calls to a healthy route keep succeeding, new sessions included; the hung route's calls then end with
// the gateway's usual upstream-timeout answer (504, -32603, upstream_timeout) when that upstream's own
// headersTimeoutMs passes. The healthy upstream keeps the default headersTimeoutMs.
import { afterEach, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { spawnDemoUpstream, type DemoUpstreamProcess } from "../helpers/demo-process.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { openRawSession, rpc } from "../helpers/stdio-servers.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

// Long enough that the healthy route's calls below (a session and ten calls) are over before the hung route's
// calls time out, even on a loaded machine; 1 s was not (a full run at load 10 outran it).
const HUNG_HEADERS_TIMEOUT_MS = 5_000;

type TaskRules = NonNullable<NonNullable<GatewayConfigInput["tasks"]>["rules"]>;

async function setUp(rules: TaskRules = []): Promise<{ gateway: TestGateway; hung: DemoUpstreamProcess }> {
  const hung = await spawnDemoUpstream();
  // Closing resumes it first (SIGCONT), whatever the test did.
  cleanups.push(() => hung.close());
  const healthy = await startSdkUpstream();
  cleanups.push(() => healthy.close());
  const gateway = await startManyGateway({
    upstreams: {
      healthy: { url: healthy.url },
      hung: { url: hung.url, headersTimeoutMs: HUNG_HEADERS_TIMEOUT_MS },
    },
    // No keep-alive comments: a bridged answer stays JSON, so its status can say what happened.
    server: { sseKeepAliveMs: 0 },
    tasks: { thresholdMs: 60_000, rules },
  });
  cleanups.push(async () => void (await gateway.close(0)));
  return { gateway, hung };
}

const echoCall = (id: number, text: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "echo", arguments: { text } },
});

describe("a SIGSTOPped upstream", () => {
  it("calls to the healthy route keep succeeding while the hung route's calls wait; those end 504 upstream_timeout", async () => {
    const { gateway, hung } = await setUp();
    // Both routes work, and the hung route's era and session are settled before it stops.
    const session = await openRawSession(routeOf(gateway, "hung"));
    const warm = await rpc(routeOf(gateway, "hung"), echoCall(1, "before the stop"), session.headers);
    expect(warm.message).toMatchObject({ result: { content: [{ type: "text", text: "before the stop" }] } });
    const bridgedWarm = await callTool(routeOf(gateway, "hung"), "echo", { text: "bridged before the stop" });
    expect(bridgedWarm.body.result, bridgedWarm.text).toMatchObject({
      content: [{ type: "text", text: "bridged before the stop" }],
    });

    hung.stop();
    let settled = 0;
    const track = <T>(p: Promise<T>): Promise<T> => p.finally(() => void settled++);
    const passThrough = track(rpc(routeOf(gateway, "hung"), echoCall(2, "while stopped"), session.headers));
    const bridged = track(callTool(routeOf(gateway, "hung"), "echo", { text: "bridged while stopped" }));

    // Meanwhile: a session of its own on the healthy route, several calls on it, and modern calls.
    const client = await connectSdkClient(routeOf(gateway, "healthy"));
    cleanups.push(() => client.close());
    for (let i = 0; i < 5; i++) {
      const echo = await client.client.callTool({ name: "echo", arguments: { text: `healthy ${i}` } });
      expect(echo.content).toEqual([{ type: "text", text: `healthy ${i}` }]);
      const modern = await callTool(routeOf(gateway, "healthy"), "add", { a: i, b: 1 });
      expect(modern.body.result, modern.text).toMatchObject({ structuredContent: { sum: i + 1 } });
    }
    // The hung route's calls were still waiting all along.
    expect(settled).toBe(0);

    const [p, m] = await Promise.all([passThrough, bridged]);
    expect(p.status).toBe(504);
    expect(p.message).toMatchObject({
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32603, data: { reason: "upstream_timeout" } },
    });
    expect(m.status).toBe(504);
    expect(m.body.error).toMatchObject({ code: -32603, data: { reason: "upstream_timeout" } });

    // The healthy route is still fine; the hung one answers again once resumed.
    const after = await client.client.callTool({ name: "echo", arguments: { text: "healthy after" } });
    expect(after.content).toEqual([{ type: "text", text: "healthy after" }]);
    hung.resume();
    const back = await callTool(routeOf(gateway, "hung"), "echo", { text: "resumed" });
    expect(back.body.result, back.text).toMatchObject({ content: [{ type: "text", text: "resumed" }] });
  });

  it("a task on the hung route fails with the upstream timeout, and tasks on the healthy route complete meanwhile", async () => {
    const { gateway, hung } = await setUp([{ tool: "slow_task", mode: "always" }]);
    const warm = await callTool(routeOf(gateway, "hung"), "echo", { text: "warm" });
    expect(warm.body.result, warm.text).toMatchObject({ content: [{ type: "text", text: "warm" }] });

    hung.stop();
    const stuck = await callTool(routeOf(gateway, "hung"), "slow_task", { durationMs: 10, steps: 1 });
    expect(stuck.body.result, stuck.text).toMatchObject({ resultType: "task", status: "working" });
    const stuckId = stuck.body.result?.taskId as string;

    const healthy = await callTool(routeOf(gateway, "healthy"), "slow_task", { durationMs: 10, steps: 1 });
    const healthyId = healthy.body.result?.taskId as string;
    expect(healthyId.startsWith("healthy.")).toBe(true);
    expect(await settledTask(routeOf(gateway, "healthy"), healthyId)).toMatchObject({
      status: "completed",
      result: { content: [{ type: "text", text: "done after 10 ms in 1 steps" }] },
    });

    const failed = await settledTask(routeOf(gateway, "hung"), stuckId);
    expect(failed).toMatchObject({ status: "failed", error: { code: -32603 } });
    expect(failed).not.toHaveProperty("result");
    // It names the upstream that did not answer, by its configured name, never by its address.
    expect(String(failed.statusMessage)).toContain("Upstream MCP server hung");
    expect(JSON.stringify(failed)).not.toContain(new URL(hung.url).host);
  });
});
