// A federated member whose process is killed (SIGKILL: no goodbye on any socket) while a call to it runs: the SDK
// 1.x demo server in a process of its own, behind a federated endpoint with the SDK 2.x modern-only server. The
// call in flight ends with a clear JSON-RPC error naming the upstream fault (not a hang, not a request timeout of
// the client's), for an SDK 2.x client and for an SDK 1.x client on a federated session alike, while calls to
// the other member, made during the call and after, keep answering and the lists keep the other member's tools.
// A task running on it (a task rule of the member) ends failed with the same error, readable on the endpoint.
// Restarted on the same port, the member is served again to the same clients, the gateway re-opening its sessions.
// (federation-breaker.test.ts covers a member that is gone between calls: lists without it, its breaker.)
import { afterEach, describe, expect, it } from "vitest";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayConfigInput } from "../../src/index.js";
import { startModernUpstream } from "../fixtures/modern-upstream.js";
import { spawnDemoUpstream, type DemoUpstreamProcess } from "../helpers/demo-process.js";
import type { TestGateway } from "../helpers/gateway.js";
import { routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient, textOf } from "../helpers/modern-client.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { pollUntil } from "../helpers/poll.js";
import { connectSdkClient } from "../helpers/sdk-client.js";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/** The reasons an upstream that dies mid-answer may be given (protocol/errors.ts upstreamFault, the bridges). */
const DIED = ["upstream_reset", "upstream_no_answer", "upstream_unreachable"];
/** Past this the client gives up itself (-32001): a call that hangs fails the test instead of holding it. */
const CLIENT_TIMEOUT_MS = 15_000;
/** A call that would run for a minute, reporting progress every 100 ms. */
const SLOW = { durationMs: 60_000, steps: 600 };

interface Scenario {
  one: DemoUpstreamProcess;
  gateway: TestGateway;
  fed: string;
}

/** Member `one` in a process of its own, `two` in-process, federated as `pair`; `tasks`: one's tasks rules. */
async function scenario(tasks?: GatewayConfigInput["tasks"]): Promise<Scenario> {
  const one = await spawnDemoUpstream();
  cleanups.push(() => one.close());
  const two = await startModernUpstream({ legacy: "reject" });
  cleanups.push(() => two.close());
  const gateway = await startManyGateway({
    upstreams: { one: { url: one.url, connectTimeoutMs: 1_000 }, two: { url: two.url, era: "modern" } },
    federated: { pair: { upstreams: ["one", "two"] } },
    federation: { listTimeoutMs: 5_000 },
    ...(tasks && { tasks }),
  });
  cleanups.push(() => gateway.close(0));
  return { one, gateway, fed: routeOf(gateway, "pair") };
}

/**
 * The first progress of `call` (so it is running upstream), and how it ends: its JSON-RPC error, or its result
 * if it completed (which fails the test, without waiting for a progress that never comes).
 */
function watch(start: (onprogress: () => void) => Promise<unknown>): {
  running: Promise<unknown>;
  ended: Promise<RpcError | { completed: unknown }>;
} {
  let progressed!: () => void;
  const seen = new Promise<void>((resolve) => (progressed = resolve));
  const ended = start(progressed).then(
    (result) => ({ completed: result }),
    (err: unknown) => rpcError(err),
  );
  return { running: Promise.race([seen, ended]), ended };
}

interface RpcError {
  code: unknown;
  message: string;
  data: Record<string, unknown>;
}

/** The JSON-RPC error a rejected SDK call carried: its code and data. */
function rpcError(err: unknown): RpcError {
  const e = err as { code?: unknown; message?: string; data?: unknown };
  const data = typeof e.data === "object" && e.data !== null ? (e.data as Record<string, unknown>) : {};
  return { code: e.code, message: String(e.message), data };
}

function legacyText(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
}

describe("a federated member killed while a call to it runs", () => {
  it("an SDK 2.x client's call in flight ends with an upstream error; the other member keeps answering", async () => {
    const { one, fed } = await scenario();
    const h = await connectModernClient(fed);
    cleanups.push(() => h.close());
    const call = watch((onprogress) =>
      h.client.callTool({ name: "one__slow_task", arguments: SLOW }, { onprogress, timeout: CLIENT_TIMEOUT_MS }),
    );
    await call.running;
    // The other member answers while the call runs.
    expect(textOf(await h.client.callTool({ name: "two__echo", arguments: { text: "during" } }))).toBe("during");

    await one.kill();

    const error = await call.ended;
    expect("data" in error && DIED.includes(String(error.data.reason)), JSON.stringify(error)).toBe(true);
    expect(error).toMatchObject({ code: -32603 });
    expect(textOf(await h.client.callTool({ name: "two__echo", arguments: { text: "after" } }))).toBe("after");
    const names = (await h.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
    expect(names).toContain("two__echo");
    expect(names.some((n) => n.startsWith("one__"))).toBe(false);
    // A new call to the dead member is refused at once with an upstream error too.
    const again = await callTool(fed, "one__echo", { text: "x" });
    expect(again.status, again.text).toBeGreaterThanOrEqual(500);
    expect(again.body.error?.data?.reason, again.text).toMatch(/^upstream_/);
  });

  it("an SDK 1.x client's call in flight ends with an upstream error; its federated session goes on", async () => {
    const { one, fed } = await scenario();
    const h = await connectSdkClient(fed);
    cleanups.push(() => h.close());
    const sessionId = h.sessionId();
    const call = watch((onprogress) =>
      h.client.callTool({ name: "one__slow_task", arguments: SLOW }, undefined, {
        onprogress,
        timeout: CLIENT_TIMEOUT_MS,
      }),
    );
    await call.running;
    expect(legacyText(await h.client.callTool({ name: "two__echo", arguments: { text: "during" } }))).toBe("during");

    await one.kill();

    const error = await call.ended;
    expect("data" in error && DIED.includes(String(error.data.reason)), JSON.stringify(error)).toBe(true);
    expect(error).toMatchObject({ code: -32603 });
    expect(legacyText(await h.client.callTool({ name: "two__echo", arguments: { text: "after" } }))).toBe("after");
    const names = (await h.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("two__echo");
    expect(names.some((n) => n.startsWith("one__"))).toBe(false);
    expect(h.sessionId()).toBe(sessionId);
  });

  it("a task running on it through the endpoint ends failed, saying why, and stays readable there", async () => {
    const { one, gateway, fed } = await scenario({ rules: [{ upstream: "one", tool: "slow_task", mode: "always" }] });
    const created = await callTool(fed, "one__slow_task", SLOW);
    const taskId = created.body.result?.taskId;
    expect(typeof taskId === "string" && taskId.startsWith("one."), created.text).toBe(true);
    const id = taskId as string;
    const get = () => modernRpc(fed, "tasks/get", { taskId: id }, { name: id });
    // Running upstream: its first progress is on the task.
    await pollUntil(get, (a) => String(a.body.result?.statusMessage ?? "").startsWith("progress"));

    await one.kill();

    const ended = await settledTask(fed, id);
    expect(ended, JSON.stringify(ended)).toMatchObject({ taskId: id, status: "failed", error: { code: -32603 } });
    const { error } = ended as { error: { data: { reason: string } } };
    expect(DIED).toContain(error.data.reason);
    expect(String(ended.statusMessage)).toContain("The call failed");
    // Read the same on the member's own route, and again on the endpoint: the task stays.
    const onRoute = await modernRpc(routeOf(gateway, "one"), "tasks/get", { taskId: id }, { name: id });
    expect(onRoute.body.result, onRoute.text).toEqual({ ...ended, resultType: "complete" });
    expect((await get()).body.result).toEqual(ended);
    const echo = await callTool(fed, "two__echo", { text: "still" });
    expect(echo.body.result, echo.text).toMatchObject({ content: [{ type: "text", text: "still" }] });
  });

  it("restarted on the same port, it is served again, with no client reconnecting", async () => {
    const { one, fed } = await scenario();
    const modern = await connectModernClient(fed);
    cleanups.push(() => modern.close());
    const legacy = await connectSdkClient(fed);
    cleanups.push(() => legacy.close());
    const sessionId = legacy.sessionId();
    // Both clients have used it (the gateway holds an upstream session there), and a call runs when it dies.
    expect(textOf(await modern.client.callTool({ name: "one__echo", arguments: { text: "a" } }))).toBe("a");
    expect(legacyText(await legacy.client.callTool({ name: "one__echo", arguments: { text: "b" } }))).toBe("b");
    const call = watch((onprogress) =>
      modern.client.callTool({ name: "one__slow_task", arguments: SLOW }, { onprogress, timeout: CLIENT_TIMEOUT_MS }),
    );
    await call.running;

    await one.kill();
    expect(await call.ended).toMatchObject({ code: -32603 });
    const again = await spawnDemoUpstream(Number(new URL(one.url).port));
    cleanups.push(() => again.close());
    expect(again.url).toBe(one.url);

    // The new process knows none of the old sessions: the gateway opens new ones on its own.
    expect(textOf(await modern.client.callTool({ name: "one__echo", arguments: { text: "back" } }))).toBe("back");
    expect(legacyText(await legacy.client.callTool({ name: "one__echo", arguments: { text: "back" } }))).toBe("back");
    for (const names of [
      (await modern.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name),
      (await legacy.client.listTools()).tools.map((t) => t.name),
    ]) {
      expect(names).toContain("one__echo");
      expect(names).toContain("two__echo");
    }
    const slow = await modern.client.callTool({ name: "one__slow_task", arguments: { durationMs: 20, steps: 2 } });
    expect(textOf(slow)).toBe("done after 20 ms in 2 steps");
    expect(legacy.sessionId()).toBe(sessionId);
  });
});
