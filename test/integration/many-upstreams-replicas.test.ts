// Two replicas (two gateways sharing tasks in one real Redis, under the same per-test prefix) in front of the
// same two upstreams, each at /mcp/a and /mcp/b. A task created on replica 1's /mcp/a is served by replica 2's
// /mcp/a (the same task, the same result), and replica 2's /mcp/b answers -32602 for it, as for an unknown
// task. Real SDK 1.x servers (the paged upstream: `hold` waits until the test releases it).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestGateway } from "../helpers/gateway.js";
import { expectUnknownTaskOn, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { startLegacyPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";
import { fileRedis, TEST_REDIS_URL } from "../helpers/redis.js";

const { redis, opened } = fileRedis();

let a: PagedUpstream;
let b: PagedUpstream;
beforeAll(async () => {
  [a, b] = await Promise.all([startLegacyPagedUpstream(), startLegacyPagedUpstream()]);
});
afterAll(async () => {
  await Promise.allSettled([a?.close(), b?.close()]);
});

/** One replica: a gateway on the test's Redis prefix, in front of a and b. */
async function replica(prefix: string): Promise<TestGateway> {
  const gw = await startManyGateway({
    upstreams: { a: { url: a.url }, b: { url: b.url } },
    tasks: {
      store: TEST_REDIS_URL,
      storePrefix: prefix,
      thresholdMs: 60_000,
      rules: [{ tool: "hold", mode: "always" }],
    },
  });
  opened.push(async () => void (await gw.close(0)));
  return gw;
}

describe("two replicas, two upstreams", () => {
  it("a task created on replica 1's /mcp/a is polled on replica 2's /mcp/a, same result; replica 2's /mcp/b answers -32602", async () => {
    const prefix = redis.freshPrefix();
    const one = await replica(prefix);
    const two = await replica(prefix);

    const created = await callTool(routeOf(one, "a"), "hold", { key: "shared" });
    expect(created.body.result, created.text).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;
    expect(taskId.startsWith("a.")).toBe(true);
    await a.holding("shared");

    const onTwo = await modernRpc(routeOf(two, "a"), "tasks/get", { taskId }, { name: taskId });
    expect(onTwo.body.result, onTwo.text).toMatchObject({ taskId, status: "working" });
    await expectUnknownTaskOn(routeOf(two, "b"), taskId);
    await expectUnknownTaskOn(routeOf(one, "b"), taskId);

    a.release("shared");
    const fromTwo = await settledTask(routeOf(two, "a"), taskId);
    expect(fromTwo).toMatchObject({
      taskId,
      status: "completed",
      result: { content: [{ type: "text", text: "released shared" }] },
    });
    const fromOne = await settledTask(routeOf(one, "a"), taskId);
    expect(fromOne.result).toEqual(fromTwo.result);
    expect(fromOne.status).toBe("completed");
    // Finished, it is still a's only.
    await expectUnknownTaskOn(routeOf(two, "b"), taskId);
    // The upstream ran it once, and b never heard of it.
    expect(a.callsOf("hold")).toHaveLength(1);
    expect(b.callsOf("hold")).toEqual([]);
    expect((await redis.keys(prefix)).length).toBeGreaterThan(0);
  });
});
