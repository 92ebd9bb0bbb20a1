// Tasks in front of a modern (2026-07-28) upstream that does not serve the Tasks
// extension itself (the @modelcontextprotocol/server 2.x fixture): the gateway
// advertises the extension, owns the task, strips the extension from what it
// forwards, and turns the upstream's own MRTR `input_required` inside a task into
// the task's inputRequests, retrying upstream itself once tasks/update answered.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { modernHeaders, modernMeta, modernRpc } from "../helpers/modern-http.js";
import { startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";

const TASKS = "io.modelcontextprotocol/tasks";
const CAPS = { extensions: { [TASKS]: {} }, elicitation: { form: {} } };
const SERVER = { name: "scripted-modern", version: "1.0.0" };

let upstream: ModernUpstream;
let gw: TestGateway;
let nextId = 1;

beforeAll(async () => {
  upstream = await startModernUpstream();
  gw = await startTestGateway(upstream.url, {
    tasks: {
      pollIntervalMs: 50,
      rules: [
        { tool: "ask", mode: "always" },
        { tool: "slow", mode: "always" },
        { tool: "echo", mode: "never" },
      ],
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

interface Answer {
  status: number;
  body: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };
  text: string;
}

async function rpc(
  method: string,
  params: Record<string, unknown>,
  name?: string,
  caps: Record<string, unknown> = CAPS,
): Promise<Answer> {
  const res = await fetch(gw.url, {
    method: "POST",
    headers: modernHeaders(method, name),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: { ...params, _meta: modernMeta({ capabilities: caps }) },
    }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Answer["body"], text };
}

async function settled(taskId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const got = await rpc("tasks/get", { taskId }, taskId);
    const task = got.body.result;
    if (!task) throw new Error(got.text);
    if (task.status !== "working") return task;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a modern upstream without tasks of its own", () => {
  it("discover through the gateway advertises the extension the gateway serves", async () => {
    const a = await rpc("server/discover", {});
    const caps = a.body.result?.capabilities as { extensions?: Record<string, unknown>; tools?: unknown };
    expect(caps.extensions?.[TASKS]).toEqual({});
    expect(caps.tools).toBeDefined();
  });

  it("a tools/call under an always rule becomes a gateway task that completes with the upstream's result", async () => {
    const created = await rpc("tools/call", { name: "slow", arguments: { steps: 2 } }, "slow");
    expect(created.body.result).toMatchObject({ resultType: "task", status: "working" });
    const taskId = created.body.result?.taskId as string;
    const task = await settled(taskId);
    expect(task).toMatchObject({
      status: "completed",
      result: { resultType: "complete", content: [{ type: "text", text: "done in 2 steps" }] },
    });
  });

  it("the upstream's MRTR inside a task becomes inputRequests; tasks/update answers it and the gateway retries upstream", async () => {
    const created = await rpc("tools/call", { name: "ask", arguments: {} }, "ask");
    const taskId = created.body.result?.taskId as string;
    const waiting = await settled(taskId);
    expect(waiting.status).toBe("input_required");
    const requests = waiting.inputRequests as Record<string, { method: string; params: { message?: string } }>;
    const keys = Object.keys(requests);
    expect(keys).toHaveLength(1);
    const key = keys[0] as string;
    expect(requests[key]?.method).toBe("elicitation/create");
    expect(typeof requests[key]?.params.message).toBe("string");

    const ack = await rpc(
      "tasks/update",
      { taskId, inputResponses: { [key]: { action: "accept", content: { name: "Grace" } } } },
      taskId,
    );
    expect(ack.body.result).toEqual({ resultType: "complete" });
    let done = await settled(taskId);
    while (done.status === "input_required") done = await settled(taskId);
    expect(done).toMatchObject({ status: "completed", result: { content: [{ type: "text", text: "hello Grace" }] } });
  });

  it("a never rule passes the call through as a plain result", async () => {
    const a = await rpc("tools/call", { name: "echo", arguments: { text: "plain" } }, "echo");
    expect(a.body.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "plain" }] });
  });

  it("tasks/get for an id nobody knows is -32602, not the upstream's method-not-found", async () => {
    const a = await rpc("tasks/get", { taskId: "no-such-task" }, "no-such-task");
    expect(a.body.error?.code).toBe(-32602);
  });

  it("a listen for task ids alone is served by the gateway and pushes notifications/tasks", async () => {
    const created = await rpc("tools/call", { name: "ask", arguments: {} }, "ask");
    const taskId = created.body.result?.taskId as string;
    const res = await fetch(gw.url, {
      method: "POST",
      headers: modernHeaders("subscriptions/listen"),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "listen:tasks",
        method: "subscriptions/listen",
        params: { notifications: { taskIds: [taskId] }, _meta: modernMeta({ capabilities: CAPS }) },
      }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    const readUntil = async (needle: string): Promise<void> => {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}: ${text}`);
        text += Buffer.from(value).toString("utf8");
      }
    };
    await readUntil("notifications/subscriptions/acknowledged");
    // A change after the acknowledgement is pushed with the full task.
    await rpc("tasks/cancel", { taskId }, taskId);
    await readUntil('"cancelled"');
    await reader.cancel();
    const events = text
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => JSON.parse(l.slice(5)) as { method: string; params: Record<string, unknown> });
    expect(events[0]).toMatchObject({
      method: "notifications/subscriptions/acknowledged",
      params: { notifications: { taskIds: [taskId] } },
    });
    expect(events.at(-1)).toMatchObject({ method: "notifications/tasks", params: { taskId, status: "cancelled" } });
  });
});

describe("a modern upstream's own error while the call may still become a task", () => {
  // Only a scripted upstream answers a tools/call with -32021 on demand; the SDK fixture has no such tool.
  let scripted: ScriptedUpstream;
  let front: TestGateway;

  beforeAll(async () => {
    scripted = await startScriptedUpstream((_req, res, rec) => {
      const msg = JSON.parse(rec.body) as { id: number; method: string };
      const [status, body] =
        msg.method === "server/discover"
          ? [200, { result: { supportedVersions: ["2026-07-28"], capabilities: { tools: {} }, serverInfo: SERVER } }]
          : [
              400,
              {
                error: {
                  code: -32021,
                  message: "Missing capability",
                  data: { requiredCapabilities: { sampling: {} } },
                },
              },
            ];
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, ...body }));
    });
    front = await startTestGateway(scripted.url, { upstream: { era: "modern" }, tasks: { thresholdMs: 10_000 } });
  });

  afterAll(async () => {
    await front.close(0);
    await scripted.close();
  });

  it("answers it with the status a modern server gives it (-32021: 400), as the era bridge does", async () => {
    const reply = await modernRpc(
      front.url,
      "tools/call",
      { name: "needs_sampling", arguments: {} },
      { capabilities: CAPS },
    );
    expect(reply.status).toBe(400);
    expect(reply.message.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
  });
});
