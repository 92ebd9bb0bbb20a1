// Tasks for 2025-11-25 clients: the SDK 1.32 client's experimental tasks API
// (capabilities.tasks at initialize, params.task on tools/call, tasks/get,
// tasks/result, tasks/list, tasks/cancel) through the gateway, in front of the
// SDK 1.x fixture and a dual-era SDK 2.x server (which serve no tasks: the
// gateway does), and in front of server-everything (which serves 2025-11-25
// tasks itself: passed through).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type ServerNotification,
} from "@modelcontextprotocol/sdk/types.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { gatewayInFrontOf } from "../helpers/gateway.js";
import { startServerEverything } from "../helpers/server-everything.js";
import { startModernUpstream } from "../fixtures/modern-upstream.js";
import { behindRecordingProxy } from "../helpers/ext-tasks-client.js";

const RELATED_TASK = "io.modelcontextprotocol/related-task";

interface Connected {
  client: Client;
  notifications: ServerNotification[];
  close(): Promise<void>;
}

const open: Connected[] = [];

async function connect(url: string, opts: { tasks?: boolean; authorization?: string } = {}): Promise<Connected> {
  const client = new Client(
    { name: "legacy-tasks-test", version: "1.0.0" },
    { capabilities: { ...(opts.tasks !== false && { tasks: { list: {}, cancel: {} } }), elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
  const notifications: ServerNotification[] = [];
  client.fallbackNotificationHandler = async (n) => {
    notifications.push(n as ServerNotification);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(opts.authorization && { requestInit: { headers: { authorization: opts.authorization } } }),
  });
  await client.connect(transport);
  const connected: Connected = {
    client,
    notifications,
    close: async () => {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
  open.push(connected);
  return connected;
}

afterAll(async () => {
  await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
});

function errorCode(e: unknown): unknown {
  return (e as { code?: unknown }).code;
}

async function createTask(client: Client, name: string, args: Record<string, unknown>, ttl = 60_000): Promise<string> {
  const created = await client.request(
    { method: "tools/call", params: { name, arguments: args, task: { ttl } } },
    CreateTaskResultSchema,
  );
  return created.task.taskId;
}

/** Polls tasks/get until `done` holds (bounded: the test's own timeout is the backstop). */
async function pollUntil(
  client: Client,
  taskId: string,
  done: (status: string) => boolean,
): Promise<{ status: string }> {
  for (let i = 0; i < 400; i++) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (done(task.status)) return task;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${taskId} never reached the awaited status`);
}

describe("2025-11-25 tasks from the gateway, in front of the SDK 1.x fixture (no tasks of its own)", () => {
  const env = gatewayInFrontOf(
    () => startSdkUpstream({ host: "127.0.0.1", port: 0 }),
    { beforeAll, afterAll },
    {
      tasks: {
        pollIntervalMs: 50,
        adaptive: false,
        rules: [
          { tool: "echo", mode: "never" },
          { tool: "add", mode: "required" },
          { tool: "ask_user", mode: "always" },
        ],
      },
    },
  );

  it("initialize gets the tasks capability, and tools/list each tool's taskSupport from the policy", async () => {
    const { client } = await connect(env.urls().gateway);
    expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toMatchObject({
      echo: "forbidden",
      add: "required",
      slow_task: "optional",
      ask_user: "optional",
      fail: "optional",
    });
  });

  it("a client that does not declare tasks sees the upstream's initialize and tools/list untouched", async () => {
    const direct = await connect(env.urls().direct, { tasks: false });
    const via = await connect(env.urls().gateway, { tasks: false });
    expect(via.client.getServerCapabilities()).toEqual(direct.client.getServerCapabilities());
    expect(via.client.getServerCapabilities()?.tasks).toBeUndefined();
    expect(await via.client.listTools()).toEqual(await direct.client.listTools());
  });

  it("callToolStream: a slow tool becomes a task, is polled, and its result fetched with the related-task _meta", async () => {
    const { client } = await connect(env.urls().gateway);
    await client.listTools();
    const seen: string[] = [];
    let taskId: string | undefined;
    let result: unknown;
    for await (const m of client.experimental.tasks.callToolStream(
      { name: "slow_task", arguments: { durationMs: 300, steps: 3 } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      seen.push(m.type);
      if (m.type === "taskCreated") {
        taskId = m.task.taskId;
        expect(m.task.status).toBe("working");
        expect(m.task.ttl).toBe(60_000);
        expect(typeof m.task.createdAt).toBe("string");
      }
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    expect(seen[0]).toBe("taskCreated");
    expect(seen).toContain("taskStatus");
    expect(seen.at(-1)).toBe("result");
    expect(result).toMatchObject({
      content: [{ type: "text", text: "done after 300 ms in 3 steps" }],
      _meta: { [RELATED_TASK]: { taskId } },
    });
    expect(result).not.toHaveProperty("resultType");
    const task = await client.experimental.tasks.getTask(taskId as string);
    expect(task).toMatchObject({ taskId, status: "completed", ttl: 60_000, pollInterval: 50 });
  });

  it("tasks/result blocks until the task is terminal, streaming notifications/tasks/status meanwhile", async () => {
    const { client, notifications } = await connect(env.urls().gateway);
    const taskId = await createTask(client, "slow_task", { durationMs: 400, steps: 4 });
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toMatchObject({
      content: [{ type: "text", text: "done after 400 ms in 4 steps" }],
      _meta: { [RELATED_TASK]: { taskId } },
    });
    const statuses = notifications.filter((n) => n.method === "notifications/tasks/status");
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses[0]?.params).toMatchObject({ taskId, status: "working" });
  });

  it("tasks/cancel: the task is cancelled (and stays so); a second cancel and its result are errors", async () => {
    const { client } = await connect(env.urls().gateway);
    const taskId = await createTask(client, "slow_task", { durationMs: 60_000, steps: 1 });
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("working");
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: "cancelled" });
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("cancelled");
    const again = await client.experimental.tasks.cancelTask(taskId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(errorCode(again)).toBe(-32602);
    expect(String((again as Error).message)).toContain("terminal status 'cancelled'");
    const fetched = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(fetched).toBeInstanceOf(Error);
  });

  it("a tool result with isError is a failed task (2025-11-25), whose tasks/result is that result", async () => {
    const { client } = await connect(env.urls().gateway);
    const taskId = await createTask(client, "fail", { message: "nope" });
    const task = await pollUntil(client, taskId, (s) => s !== "working");
    expect(task.status).toBe("failed");
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: "text", text: "nope" }] });
  });

  it("a JSON-RPC error of the call is the task's failure, and tasks/result returns that error", async () => {
    const { client } = await connect(env.urls().gateway);
    const taskId = await createTask(client, "throw_error", { message: "kaboom" });
    expect((await pollUntil(client, taskId, (s) => s !== "working")).status).toBe("failed");
    const err = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String((err as Error).message)).toContain("kaboom");
  });

  it("elicitation inside a task: input_required, the request reaches the client on tasks/result, its answer the upstream", async () => {
    const { client } = await connect(env.urls().gateway);
    await client.listTools();
    const statuses: string[] = [];
    let result: unknown;
    for await (const m of client.experimental.tasks.callToolStream(
      { name: "ask_user", arguments: { question: "Name?" } },
      CallToolResultSchema,
      { task: {} },
    )) {
      if (m.type === "taskStatus") statuses.push(m.task.status);
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    expect(statuses).toContain("input_required");
    expect(result).toMatchObject({ content: [{ type: "text", text: 'action: accept; content: {"name":"Ada"}' }] });
  });

  it("tasks/list: the caller's own tasks on its session, paginated", async () => {
    const { client } = await connect(env.urls().gateway);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await createTask(client, "slow_task", { durationMs: 0, steps: 1 }));
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toEqual(ids);
    expect(listed.nextCursor).toBeUndefined();
    const bad = await client.experimental.tasks.listTasks("bm90LWEtY3Vyc29y").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(errorCode(bad)).toBe(-32602);
    // Another session sees none of them.
    const other = await connect(env.urls().gateway);
    expect((await other.client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it("tasks are bound to the caller: another caller's id is unknown (-32602)", async () => {
    const alice = await connect(env.urls().gateway, { authorization: "Bearer alice" });
    const bob = await connect(env.urls().gateway, { authorization: "Bearer bob" });
    const taskId = await createTask(alice.client, "slow_task", { durationMs: 0, steps: 1 });
    const got = await bob.client.experimental.tasks.getTask(taskId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(errorCode(got)).toBe(-32602);
    const cancel = await bob.client.experimental.tasks.cancelTask(taskId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(errorCode(cancel)).toBe(-32602);
    expect((await pollUntil(alice.client, taskId, (s) => s === "completed")).status).toBe("completed");
  });

  it("the policy: required needs params.task, never refuses it (-32601); plain calls still pass through", async () => {
    const { client } = await connect(env.urls().gateway);
    const plainRequired = await client
      .request({ method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } }, CallToolResultSchema)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(errorCode(plainRequired)).toBe(-32601);
    const taskNever = await client
      .request(
        { method: "tools/call", params: { name: "echo", arguments: { text: "x" }, task: {} } },
        CreateTaskResultSchema,
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(errorCode(taskNever)).toBe(-32601);
    expect(await client.callTool({ name: "echo", arguments: { text: "plain" } })).toMatchObject({
      content: [{ type: "text", text: "plain" }],
    });
    const addTask = await createTask(client, "add", { a: 40, b: 2 });
    expect(await client.experimental.tasks.getTaskResult(addTask, CallToolResultSchema)).toMatchObject({
      content: [{ type: "text", text: "42" }],
    });
  });
});

describe("2025-11-25 tasks in front of server-everything, which serves them itself: passed through", () => {
  const env = gatewayInFrontOf(() => startServerEverything(), { beforeAll, afterAll });

  it("initialize and tools/list are the upstream's own", async () => {
    const direct = await connect(env.urls().direct);
    const via = await connect(env.urls().gateway);
    expect(via.client.getServerCapabilities()).toEqual(direct.client.getServerCapabilities());
    const tools = (await via.client.listTools()).tools;
    expect(tools.find((t) => t.name === "simulate-research-query")?.execution?.taskSupport).toBe("required");
    expect(tools).toEqual((await direct.client.listTools()).tools);
  });

  it("the upstream's own task runs, is polled and its result fetched through the gateway", async () => {
    const { client } = await connect(env.urls().gateway);
    await client.listTools();
    let created: string | undefined;
    let result: unknown;
    for await (const m of client.experimental.tasks.callToolStream(
      { name: "simulate-research-query", arguments: { topic: "gateways" } },
      CallToolResultSchema,
    )) {
      if (m.type === "taskCreated") created = m.task.taskId;
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    expect(typeof created).toBe("string");
    expect(result).toMatchObject({ content: [{ type: "text" }] });
    // The task is the upstream's: it lists it, the gateway has nothing to add.
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(created);
  }, 30_000);
});

describe("2025-11-25 tasks in front of a dual-era SDK 2.x upstream (stateless legacy, no tasks of its own)", () => {
  const env = gatewayInFrontOf(
    () => startModernUpstream(),
    { beforeAll, afterAll },
    { tasks: { pollIntervalMs: 50, adaptive: false } },
  );

  it("a task-augmented call becomes the gateway's task, polled to its result", async () => {
    const { client } = await connect(env.urls().gateway);
    expect(client.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    await client.listTools();
    let result: unknown;
    let taskId: string | undefined;
    for await (const m of client.experimental.tasks.callToolStream(
      { name: "slow", arguments: { steps: 3 } },
      CallToolResultSchema,
      { task: {} },
    )) {
      if (m.type === "taskCreated") taskId = m.task.taskId;
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    expect(result).toMatchObject({ content: [{ type: "text" }], _meta: { [RELATED_TASK]: { taskId } } });
    expect(result).not.toHaveProperty("resultType");
  });
});

describe("what the upstream sees of a 2025-11-25 task (a recording proxy in the middle)", () => {
  const env = gatewayInFrontOf(
    async () => behindRecordingProxy(await startSdkUpstream({ host: "127.0.0.1", port: 0 })),
    { beforeAll, afterAll },
  );

  it("the call goes on the client's session without params.task, under the gateway's id; a cancel reaches it with that id", async () => {
    const { client } = await connect(env.urls().gateway);
    const taskId = await createTask(client, "slow_task", { durationMs: 60_000, steps: 1 });
    await client.experimental.tasks.cancelTask(taskId);
    const posted = () => env.upstream().recorder.posted();
    const call = posted().find((p) => p.message.method === "tools/call");
    expect(call).toBeDefined();
    const { message, exchange } = call as {
      message: Record<string, unknown>;
      exchange: { sessionId: string | undefined };
    };
    expect(message.params).not.toHaveProperty("task");
    expect(String(message.id)).toMatch(/^gw-task-/);
    // The client's own session, the one its initialize opened.
    const init = env
      .upstream()
      .recorder.exchanges.find((e) =>
        e.messages.some((m) => (m as { method?: string }).method === "notifications/initialized"),
      );
    expect(exchange.sessionId).toBe(init?.sessionId);
    for (let i = 0; i < 200 && !posted().some((p) => p.message.method === "notifications/cancelled"); i++)
      await new Promise((r) => setTimeout(r, 10));
    const cancelled = posted().find((p) => p.message.method === "notifications/cancelled");
    expect(cancelled?.message.params).toMatchObject({ requestId: message.id });
    expect(cancelled?.exchange.sessionId).toBe(exchange.sessionId);
  });
});
