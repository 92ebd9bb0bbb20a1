// Tasks and policy per upstream, on one gateway in front of several real SDK 1.x servers (the paged upstream:
// `hold` waits until the test releases it, and every upstream records what reached it), driven with raw
// 2026-07-28 requests from a client that declares the Tasks extension.
//   - A task belongs to the route that made it: its id starts with the upstream's name, tasks/get serves it on
//     that route only, and every other route (the single upstream's included) answers -32602 exactly as for
//     an unknown task; tasks/cancel there cancels nothing.
//   - Task rules: a global rule with `upstream` applies on the upstreams its glob matches; an upstream's own
//     rules (upstreams.<name>.tasks.rules) apply to it alone, before the global ones; its thresholdMs too.
//   - Access: a global rule with `upstream` hides and refuses a tool on that upstream only;
//     upstreams.<name>.access.default and rules apply to that upstream only.
//   - Quotas (tasks.maxTasksPerCaller) count a caller's tasks over every upstream.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { GatewayConfigInput } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { expectUnknownTaskOn, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { connectModernClient } from "../helpers/modern-client.js";
import { callTool, modernRpc, settledTask, type RpcAnswer } from "../helpers/modern-rpc.js";
import { startLegacyPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";

let single: PagedUpstream;
let a: PagedUpstream;
let b: PagedUpstream;
let c: PagedUpstream;

beforeAll(async () => {
  [single, a, b, c] = await Promise.all([
    startLegacyPagedUpstream(),
    startLegacyPagedUpstream(),
    startLegacyPagedUpstream(),
    startLegacyPagedUpstream(),
  ]);
});
afterAll(async () => {
  await Promise.allSettled([single, a, b, c].map((u) => u?.close()));
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/** A gateway with the single upstream at /mcp and a, b, c at /mcp/a, /mcp/b, /mcp/c, plus `config` on top. */
async function gatewayWith(config: Omit<GatewayConfigInput, "upstream" | "upstreams"> = {}, upstreams = {}) {
  const gw: TestGateway = await startManyGateway({
    upstream: { url: single.url },
    upstreams: { a: { url: a.url }, b: { url: b.url }, c: { url: c.url }, ...upstreams },
    ...config,
  });
  cleanups.push(async () => void (await gw.close(0)));
  return gw;
}

let keys = 0;
/** A hold key no other test uses (the upstreams are shared by the file). */
const freshKey = (what: string): string => `${what}-${++keys}`;

/** The task a tools/call became; fails the test when it stayed a plain call. */
function taskOf(answer: RpcAnswer): { taskId: string; status: unknown } {
  const result = answer.body.result;
  expect(result, answer.text).toMatchObject({ resultType: "task", status: "working" });
  return { taskId: result?.taskId as string, status: result?.status };
}

function expectPlain(answer: RpcAnswer, text: string): void {
  expect(answer.body.result, answer.text).toMatchObject({ resultType: "complete", content: [{ type: "text", text }] });
}

const heldKeys = (u: PagedUpstream): string[] =>
  u.callsOf("hold").map((r) => String((r.message.params as { arguments?: { key?: unknown } }).arguments?.key));

describe("a task belongs to the route that created it", () => {
  it("created on /mcp/a: its id starts with 'a.', tasks/get on /mcp/a serves it; /mcp/b and /mcp answer -32602 as for an unknown task", async () => {
    const gw = await gatewayWith({ tasks: { thresholdMs: 60_000, rules: [{ tool: "hold", mode: "always" }] } });
    const key = freshKey("routed");
    const { taskId } = taskOf(await callTool(routeOf(gw, "a"), "hold", { key }));
    expect(taskId.startsWith("a.")).toBe(true);
    await a.holding(key);
    expect(heldKeys(b)).not.toContain(key);

    const onA = await modernRpc(routeOf(gw, "a"), "tasks/get", { taskId }, { name: taskId });
    expect(onA.body.result, onA.text).toMatchObject({ taskId, status: "working" });
    await expectUnknownTaskOn(routeOf(gw, "b"), taskId);
    await expectUnknownTaskOn(gw.url, taskId);

    a.release(key);
    const done = await settledTask(routeOf(gw, "a"), taskId);
    expect(done).toMatchObject({
      taskId,
      status: "completed",
      result: { content: [{ type: "text", text: `released ${key}` }] },
    });
    // Finished, it is still another route's: the same answers.
    await expectUnknownTaskOn(routeOf(gw, "b"), taskId);
    await expectUnknownTaskOn(gw.url, taskId);
  });

  it("tasks/cancel of a's task on /mcp/b is -32602 as for an unknown task and cancels nothing", async () => {
    const gw = await gatewayWith({ tasks: { thresholdMs: 60_000, rules: [{ tool: "hold", mode: "always" }] } });
    const key = freshKey("cancel-elsewhere");
    const { taskId } = taskOf(await callTool(routeOf(gw, "a"), "hold", { key }));
    await a.holding(key);

    await expectUnknownTaskOn(routeOf(gw, "b"), taskId, { method: "tasks/cancel" });
    await expectUnknownTaskOn(gw.url, taskId, { method: "tasks/cancel" });
    expect(a.received.filter((r) => r.method === "notifications/cancelled")).toEqual([]);

    a.release(key);
    expect(await settledTask(routeOf(gw, "a"), taskId)).toMatchObject({ taskId, status: "completed" });
  });

  it("a task of the single upstream (/mcp) has a bare id, and the named routes answer -32602 for it", async () => {
    const gw = await gatewayWith({ tasks: { thresholdMs: 60_000, rules: [{ tool: "hold", mode: "always" }] } });
    const key = freshKey("single");
    const { taskId } = taskOf(await callTool(gw.url, "hold", { key }));
    expect(taskId).not.toContain(".");
    await single.holding(key);
    await expectUnknownTaskOn(routeOf(gw, "a"), taskId);
    await expectUnknownTaskOn(routeOf(gw, "c"), taskId);
    single.release(key);
    expect(await settledTask(gw.url, taskId)).toMatchObject({
      taskId,
      status: "completed",
      result: { content: [{ type: "text", text: `released ${key}` }] },
    });
  });
});

describe("task rules per upstream", () => {
  it("a global rule with upstream: a applies on /mcp/a only; upstreams.b.tasks.rules apply on b, before the global rules; upstreams.c.tasks.thresholdMs on c", async () => {
    const gw = await gatewayWith(
      {
        tasks: {
          thresholdMs: 60_000,
          rules: [
            { upstream: "a", tool: "count", mode: "always" },
            { tool: "count", mode: "never" },
          ],
        },
      },
      {
        b: { url: b.url, tasks: { rules: [{ tool: "count", mode: "always" }] } },
        c: { url: c.url, tasks: { thresholdMs: 0 } },
      },
    );
    // count: a task on a (the rule for a), on b (b's own rule comes before the global never), plain on c and /mcp.
    const onA = taskOf(await callTool(routeOf(gw, "a"), "count", {}));
    expect(onA.taskId.startsWith("a.")).toBe(true);
    const onB = taskOf(await callTool(routeOf(gw, "b"), "count", {}));
    expect(onB.taskId.startsWith("b.")).toBe(true);
    expectPlain(await callTool(routeOf(gw, "c"), "count", {}), "1 2 3");
    expectPlain(await callTool(gw.url, "count", {}), "1 2 3");
    for (const [route, { taskId }] of [
      ["a", onA],
      ["b", onB],
    ] as const) {
      expect(await settledTask(routeOf(gw, route), taskId)).toMatchObject({
        status: "completed",
        result: { content: [{ type: "text", text: "1 2 3" }] },
      });
    }

    // hold (no rule: auto): c's threshold (0) makes it a task; a keeps the global 60 s and answers plainly.
    const onC = freshKey("threshold-c");
    const held = taskOf(await callTool(routeOf(gw, "c"), "hold", { key: onC }));
    expect(held.taskId.startsWith("c.")).toBe(true);
    await c.holding(onC);
    c.release(onC);
    expect(await settledTask(routeOf(gw, "c"), held.taskId)).toMatchObject({ status: "completed" });

    const onAKey = freshKey("threshold-a");
    const plain = callTool(routeOf(gw, "a"), "hold", { key: onAKey });
    await a.holding(onAKey);
    a.release(onAKey);
    expectPlain(await plain, `released ${onAKey}`);
  });
});

describe("access per upstream", () => {
  /** The tool names a 2026-07-28 client lists on `url`. */
  async function toolNames(url: string): Promise<string[]> {
    const client = await connectModernClient(url);
    try {
      return (await client.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
    } finally {
      await client.close();
    }
  }
  const ALL = ["echo", "secret_admin", "secret_wipe", "hold", "boom", "count"];

  it("{ upstream: b, tools: echo, effect: deny } hides and refuses echo on /mcp/b only; upstreams.c.access.default deny leaves c only what its rules allow", async () => {
    const gw = await gatewayWith(
      { access: { rules: [{ upstream: "b", tools: "echo", effect: "deny" }] } },
      { c: { url: c.url, access: { default: "deny", rules: [{ tools: "count", effect: "allow" }] } } },
    );
    expect(await toolNames(routeOf(gw, "a"))).toEqual(ALL);
    expect(await toolNames(gw.url)).toEqual(ALL);
    expect(await toolNames(routeOf(gw, "b"))).toEqual(ALL.filter((t) => t !== "echo"));
    expect(await toolNames(routeOf(gw, "c"))).toEqual(["count"]);

    const echoesBefore = { a: a.callsOf("echo").length, b: b.callsOf("echo").length, c: c.callsOf("echo").length };
    expectPlain(await callTool(routeOf(gw, "a"), "echo", { text: "allowed on a" }), "allowed on a");
    for (const route of ["b", "c"] as const) {
      const refused = await callTool(routeOf(gw, route), "echo", { text: `refused on ${route}` });
      expect(refused.body.error, refused.text).toMatchObject({ code: -32602, data: { reason: "access_denied" } });
    }
    expectPlain(await callTool(routeOf(gw, "c"), "count", {}), "1 2 3");
    // Only a heard of echo.
    expect(a.callsOf("echo").length).toBe(echoesBefore.a + 1);
    expect(b.callsOf("echo").length).toBe(echoesBefore.b);
    expect(c.callsOf("echo").length).toBe(echoesBefore.c);
  });

  it("upstreams.a.access.default deny refuses a's tools no rule allows; b and the single upstream keep the global default (allow)", async () => {
    const gw = await gatewayWith({}, { a: { url: a.url, access: { default: "deny" } } });
    expect(await toolNames(routeOf(gw, "a"))).toEqual([]);
    const refused = await callTool(routeOf(gw, "a"), "count", {});
    expect(refused.body.error, refused.text).toMatchObject({ code: -32602, data: { reason: "access_denied" } });
    expectPlain(await callTool(routeOf(gw, "b"), "count", {}), "1 2 3");
    expectPlain(await callTool(gw.url, "count", {}), "1 2 3");
  });
});

describe("quotas are per caller over every upstream", () => {
  it("tasks.maxTasksPerCaller: 1 — a caller's running task on /mcp/a refuses its next one on /mcp/b; another caller is not affected; the slot frees when the task ends", async () => {
    const gw = await gatewayWith({
      tasks: { thresholdMs: 60_000, maxTasksPerCaller: 1, rules: [{ tool: "hold", mode: "always" }] },
    });
    const alice = { authorization: "Bearer alice-quota" };
    const bob = { authorization: "Bearer bob-quota" };

    const first = freshKey("quota-a");
    const onA = taskOf(await callTool(routeOf(gw, "a"), "hold", { key: first }, { headers: alice }));
    await a.holding(first);

    const second = freshKey("quota-b");
    const refused = await callTool(routeOf(gw, "b"), "hold", { key: second }, { headers: alice });
    expect(refused.body.result, refused.text).toBeUndefined();
    expect(refused.body.error).toMatchObject({ data: { reason: "task_limit" } });
    expect(heldKeys(b)).not.toContain(second);

    // Another caller has a slot of its own, on the same route.
    const bobs = freshKey("quota-bob");
    const onBForBob = taskOf(await callTool(routeOf(gw, "b"), "hold", { key: bobs }, { headers: bob }));
    await b.holding(bobs);
    b.release(bobs);
    expect(await settledTask(routeOf(gw, "b"), onBForBob.taskId, bob)).toMatchObject({ status: "completed" });

    a.release(first);
    expect(await settledTask(routeOf(gw, "a"), onA.taskId, alice)).toMatchObject({ status: "completed" });
    const third = freshKey("quota-b-again");
    const onB = taskOf(await callTool(routeOf(gw, "b"), "hold", { key: third }, { headers: alice }));
    await b.holding(third);
    b.release(third);
    expect(await settledTask(routeOf(gw, "b"), onB.taskId, alice)).toMatchObject({ status: "completed" });
  });
});
