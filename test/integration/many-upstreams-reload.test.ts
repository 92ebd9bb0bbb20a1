// The upstream set is live: gateway.reload(next) adds an upstream (its route answers at once), removes one
// (new calls to its route get 404, while a task it was running goes on and stays readable with tasks/get on
// that route until it completes, result included), and changes one's URL (new calls go to the new server).
// Real SDK 1.x servers (the paged upstream: `hold` waits until the test releases it, and each upstream
// records what reached it); raw 2026-07-28 requests, and SDK 1.x sessions.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT } from "../helpers/http.js";
import { expectNoRoute, manyConfig, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { eventually } from "../helpers/ext-tasks-client.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { startLegacyPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";
import { connectSdkClient } from "../helpers/sdk-client.js";

let one: PagedUpstream;
let two: PagedUpstream;
beforeAll(async () => {
  [one, two] = await Promise.all([startLegacyPagedUpstream(), startLegacyPagedUpstream()]);
});
afterAll(async () => {
  await Promise.allSettled([one?.close(), two?.close()]);
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

const TASKS = { thresholdMs: 60_000, rules: [{ tool: "hold", mode: "always" as const }] };

function config(upstreams: NonNullable<GatewayConfigInput["upstreams"]>): GatewayConfigInput {
  return manyConfig({ upstreams, tasks: TASKS });
}

async function start(upstreams: NonNullable<GatewayConfigInput["upstreams"]>): Promise<TestGateway> {
  const gw = await startManyGateway(config(upstreams));
  cleanups.push(async () => void (await gw.close(0)));
  return gw;
}

const echoed = (u: PagedUpstream, text: string): number =>
  u.callsOf("echo").filter((r) => JSON.stringify(r.message).includes(text)).length;

/** A modern tools/call of echo on `url` that the route must refuse: 404, JSON-RPC error. */
const refusedEcho = (url: string, text: string) =>
  expectNoRoute(url, {
    method: "POST",
    headers: modernHeaders("tools/call", "echo"),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { text }, _meta: modernMeta() },
    }),
  });

describe("gateway.reload and the upstream set", () => {
  it("an added upstream's route answers at once, to modern calls and to a new SDK 1.x session", async () => {
    const gw = await start({ one: { url: one.url } });
    await refusedEcho(routeOf(gw, "two"), "too early");

    const plan = gw.reload(config({ one: { url: one.url }, two: { url: two.url } }));
    // Nothing about it waits for a restart.
    expect(plan.restart.filter((s) => s.startsWith("upstream"))).toEqual([]);

    const modern = await callTool(routeOf(gw, "two"), "echo", { text: "added route" });
    expect(modern.body.result, modern.text).toMatchObject({ content: [{ type: "text", text: "added route" }] });
    expect(echoed(two, "added route")).toBe(1);
    const legacy = await connectSdkClient(routeOf(gw, "two"));
    try {
      const echo = await legacy.client.callTool({ name: "echo", arguments: { text: "added route, legacy" } });
      expect(echo.content).toEqual([{ type: "text", text: "added route, legacy" }]);
    } finally {
      await legacy.close();
    }
    expect(echoed(two, "added route, legacy")).toBe(1);
    // The route that was there keeps working.
    const still = await callTool(routeOf(gw, "one"), "echo", { text: "one still" });
    expect(still.body.result, still.text).toMatchObject({ content: [{ type: "text", text: "one still" }] });
  });

  it("a removed upstream: new calls to its route get 404, its running task stays readable there until it completes", async () => {
    const gw = await start({ one: { url: one.url }, two: { url: two.url } });
    const created = await callTool(routeOf(gw, "two"), "hold", { key: "removed-route" });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;
    expect(taskId.startsWith("two.")).toBe(true);
    await two.holding("removed-route");

    gw.reload(config({ one: { url: one.url } }));

    const before = two.received.length;
    await refusedEcho(routeOf(gw, "two"), "after removal");
    await expectNoRoute(routeOf(gw, "two"), {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify(INIT_REQUEST),
    });
    expect(two.received.length).toBe(before);

    const working = await modernRpc(routeOf(gw, "two"), "tasks/get", { taskId }, { name: taskId });
    expect(working.body.result, working.text).toMatchObject({ taskId, status: "working" });

    two.release("removed-route");
    expect(await settledTask(routeOf(gw, "two"), taskId)).toMatchObject({
      taskId,
      status: "completed",
      result: { content: [{ type: "text", text: "released removed-route" }] },
    });
    // The remaining route was never affected, and /readyz reports only what is served.
    const still = await callTool(routeOf(gw, "one"), "echo", { text: "one after removal" });
    expect(still.body.result, still.text).toMatchObject({ content: [{ type: "text", text: "one after removal" }] });
    const ready = (await (await fetch(`${gw.origin}/readyz`)).json()) as { upstreams: Array<{ name: string }> };
    expect(ready.upstreams.map((u) => u.name)).toEqual(["one"]);
  });

  it("a removed upstream's task that outlives tasks.drainMs is ended failed, saying so, and its call is cancelled upstream", async () => {
    const gw = await startManyGateway(
      manyConfig({ upstreams: { one: { url: one.url }, two: { url: two.url } }, tasks: { ...TASKS, drainMs: 0 } }),
    );
    cleanups.push(async () => void (await gw.close(0)));
    const created = await callTool(routeOf(gw, "two"), "hold", { key: "drained" });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;
    await two.holding("drained");
    const cancelsBefore = two.received.filter((r) => r.method === "notifications/cancelled").length;

    gw.reload(manyConfig({ upstreams: { one: { url: one.url } }, tasks: { ...TASKS, drainMs: 0 } }));

    const ended = await settledTask(routeOf(gw, "two"), taskId);
    expect(ended).toMatchObject({ taskId, status: "failed", error: { code: -32603 } });
    expect(String(ended.statusMessage)).toContain("two was removed");
    await eventually(
      () =>
        two.received.filter((r) => r.method === "notifications/cancelled").length > cancelsBefore ? true : undefined,
      "the cancellation of the drained call upstream",
    );
    two.release("drained");
  });

  it("a change of an upstream's own policy applies to its next calls, and to no other upstream", async () => {
    const gw = await start({ one: { url: one.url }, two: { url: two.url } });
    const before = await callTool(routeOf(gw, "two"), "count", {});
    expect(before.body.result, before.text).toMatchObject({ resultType: "complete" });

    const plan = gw.reload(
      config({ one: { url: one.url }, two: { url: two.url, tasks: { rules: [{ tool: "count", mode: "always" }] } } }),
    );
    expect(plan.restart).toEqual([]);

    const after = await callTool(routeOf(gw, "two"), "count", {});
    expect(after.body.result, after.text).toMatchObject({ resultType: "task" });
    const taskId = after.body.result?.taskId as string;
    expect(await settledTask(routeOf(gw, "two"), taskId)).toMatchObject({
      status: "completed",
      result: { content: [{ type: "text", text: "1 2 3" }] },
    });
    const onOne = await callTool(routeOf(gw, "one"), "count", {});
    expect(onOne.body.result, onOne.text).toMatchObject({ resultType: "complete" });
  });

  it("a changed URL applies to new calls: modern calls and new sessions reach the new server, not the old", async () => {
    const gw = await start({ moving: { url: one.url } });
    const first = await callTool(routeOf(gw, "moving"), "echo", { text: "before the move" });
    expect(first.body.result, first.text).toMatchObject({ content: [{ type: "text", text: "before the move" }] });
    expect(echoed(one, "before the move")).toBe(1);

    gw.reload(config({ moving: { url: two.url } }));

    const modern = await callTool(routeOf(gw, "moving"), "echo", { text: "after the move" });
    expect(modern.body.result, modern.text).toMatchObject({ content: [{ type: "text", text: "after the move" }] });
    const legacy = await connectSdkClient(routeOf(gw, "moving"));
    try {
      const echo = await legacy.client.callTool({ name: "echo", arguments: { text: "after the move, legacy" } });
      expect(echo.content).toEqual([{ type: "text", text: "after the move, legacy" }]);
    } finally {
      await legacy.close();
    }
    expect(echoed(two, "after the move")).toBe(2);
    expect(echoed(one, "after the move")).toBe(0);
  });

  it("a task running on the old URL completes there after the URL changes", async () => {
    const gw = await start({ moving: { url: one.url } });
    const created = await callTool(routeOf(gw, "moving"), "hold", { key: "moved-while-running" });
    const taskId = created.body.result?.taskId as string;
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    await one.holding("moved-while-running");

    gw.reload(config({ moving: { url: two.url } }));
    one.release("moved-while-running");
    expect(await settledTask(routeOf(gw, "moving"), taskId)).toMatchObject({
      taskId,
      status: "completed",
      result: { content: [{ type: "text", text: "released moved-while-running" }] },
    });
    expect(two.callsOf("hold").filter((r) => JSON.stringify(r.message).includes("moved-while-running"))).toEqual([]);
  });
});
