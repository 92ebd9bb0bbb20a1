// Members that serve the Tasks extension themselves keep their own tasks: the federated endpoint hands out a
// handle of its own for each, bound to the caller, and maps it to the member's id. The members here are two
// gateways (real servers that serve tasks) in front of the SDK 2.x server, each making `slow` a task; both
// give bare ids of the same kind, so only the handles keep them apart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { isRecord } from "../helpers/http.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { SseStream } from "../helpers/sse-stream.js";

let modern: ModernUpstream;
let inner: TestGateway[] = [];
let gateway: TestGateway;

const ALICE = { authorization: "Bearer alice" };
const BOB = { authorization: "Bearer bob" };

beforeAll(async () => {
  modern = await startModernUpstream();
  inner = await Promise.all(
    [0, 1].map(() =>
      startTestGateway(modern.url, {
        upstream: { era: "modern" },
        tasks: { rules: [{ tool: "slow", mode: "always" }] },
      }),
    ),
  );
  gateway = await startManyGateway({
    upstreams: {
      first: { url: (inner[0] as TestGateway).url, era: "modern" },
      second: { url: (inner[1] as TestGateway).url, era: "modern" },
    },
    federated: { pair: { upstreams: ["first", "second"] } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all(inner.map((g) => g.close()));
  await modern?.close();
});

const fed = () => `${gateway.url}/pair`;

async function createdTask(tool: string, headers = ALICE): Promise<string> {
  const created = await callTool(fed(), tool, { steps: 2 }, { headers });
  const id = created.body.result?.taskId;
  expect(created.body.result?.resultType, created.text).toBe("task");
  expect(typeof id, created.text).toBe("string");
  return id as string;
}

describe("a federated endpoint over members that keep their own tasks", () => {
  it("hands out a handle that names the member, and serves the member's task under it to the end", async () => {
    const handle = await createdTask("first__slow");
    expect(handle.startsWith("first.~")).toBe(true);
    const task = await settledTask(fed(), handle, ALICE);
    expect(task.taskId).toBe(handle);
    expect(task.status).toBe("completed");
    expect(JSON.stringify(task.result)).toContain("done");
  });

  it("gives two members' tasks distinct handles, each served by its own member", async () => {
    const [a, b] = [await createdTask("first__slow"), await createdTask("second__slow")];
    expect(a).not.toBe(b);
    expect(b.startsWith("second.~")).toBe(true);
    for (const id of [a, b]) expect((await settledTask(fed(), id, ALICE)).taskId).toBe(id);
  });

  it("refuses another caller's handle, a handle relabelled for the other member, and a member's raw id, as unknown", async () => {
    const handle = await createdTask("first__slow");
    const unknown = async (taskId: string, headers: Record<string, string>) => {
      const answer = await modernRpc(fed(), "tasks/get", { taskId }, { name: taskId, headers });
      expect(answer.body.result, taskId).toBeUndefined();
      expect(answer.body.error?.code, answer.text).toBe(-32602);
    };
    await unknown(handle, BOB);
    await unknown(handle.replace(/^first\./, "second."), ALICE);
    await unknown(`${handle.slice(0, -2)}AA`, ALICE);
    // The member's own id, as its route gives it: bound to nobody on the endpoint.
    const raw = await callTool(`${gateway.url}/first`, "slow", { steps: 1 }, { headers: ALICE });
    const rawId = raw.body.result?.taskId as string;
    expect(typeof rawId).toBe("string");
    await unknown(rawId, ALICE);
    await unknown(`first.${rawId}`, ALICE);
  });

  it("tasks/cancel with a handle cancels the member's task", async () => {
    const handle = await createdTask("second__slow");
    const cancelled = await modernRpc(fed(), "tasks/cancel", { taskId: handle }, { name: handle, headers: ALICE });
    expect(cancelled.body.error, cancelled.text).toBeUndefined();
    const task = await settledTask(fed(), handle, ALICE);
    expect(task.taskId).toBe(handle);
    expect(["cancelled", "completed"]).toContain(task.status);
  });

  it("a listen for a handle gets the member's task notifications under the handle", async () => {
    const handle = await createdTask("first__slow");
    const listen = new SseStream((signal) =>
      fetch(fed(), {
        method: "POST",
        headers: { ...modernHeaders("subscriptions/listen"), ...ALICE },
        signal,
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: "listen:handle",
          method: "subscriptions/listen",
          params: {
            notifications: { taskIds: [handle] },
            _meta: modernMeta({ capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } }),
          },
        }),
      }),
    );
    try {
      const ack = await listen.waitFor((m) => m["method"] === "notifications/subscriptions/acknowledged", "the ack");
      expect(isRecord(ack["params"]) && ack["params"]["notifications"]).toEqual({ taskIds: [handle] });
      const done = await listen.waitFor(
        (m) => m["method"] === "notifications/tasks" && isRecord(m["params"]) && m["params"]["status"] === "completed",
        "the task's end",
      );
      expect(isRecord(done["params"]) && done["params"]["taskId"]).toBe(handle);
      // No notification names the member's own id.
      expect(JSON.stringify(listen.messages)).not.toMatch(/"taskId":"(?!first\.~)/);
    } finally {
      await listen.close();
    }
  });
});
