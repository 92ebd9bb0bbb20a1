// The official Tasks requester, @modelcontextprotocol/ext-tasks, over an
// @modelcontextprotocol/client 2.x Client pinned to 2026-07-28, drives the
// gateway in front of two unmodified legacy upstreams: the SDK 1.x fixture
// (the demo upstream) and @modelcontextprotocol/server-everything.
//
// ext-tasks is strict: it only treats the gateway as a Tasks server if
// server/discover advertises the extension as exactly {}, and it validates
// every CreateTaskResult, tasks/get DetailedTask, inlined result and input
// request against the pinned 2026-07-28 schemas. A rejection shows up as a
// failed outcome (or in `errors`), and the assertion messages below carry the
// exact wire message ext-tasks refused.
//
// A recording proxy sits between the gateway and each upstream, so the
// cancellation tests can see the gateway's notifications/cancelled (with the
// upstream's request id) and the gateway closing the call's upstream stream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  resultFromTaskOutcome,
  TaskCancelledError,
  TaskFailedError,
  type TaskOutcome,
  type ToolExecution,
} from "@modelcontextprotocol/ext-tasks/client";
import type { JsonValue } from "@modelcontextprotocol/ext-tasks/core";
import { isTaskStatusNotificationV2 } from "@modelcontextprotocol/ext-tasks/core/v2";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import {
  connectExtTasksClient,
  eventually,
  startRecordingProxy,
  TASKS_EXTENSION,
  type ExtTasksClientHandle,
  type RecordingProxy,
} from "../helpers/ext-tasks-client.js";
import {
  gatewayInFrontOf,
  type TestGateway,
  type TestGatewayOverrides,
  type UpstreamHandle,
} from "../helpers/gateway.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { startServerEverything } from "../helpers/server-everything.js";

/** The answer both the ext-tasks client and the direct reference client give to every elicitation. */
const ELICIT_ANSWER = { action: "accept", content: { name: "Grace", check: true, integer: 7 } } as const;

/** Small default threshold and a fast poll hint, so slow calls become tasks quickly and settle quickly. */
function taskConfig(rules: NonNullable<NonNullable<TestGatewayOverrides["tasks"]>["rules"]>): TestGatewayOverrides {
  return { tasks: { thresholdMs: 200, pollIntervalMs: 50, rules } };
}

interface ProxiedUpstream extends UpstreamHandle {
  /** The upstream itself, for the direct reference client. */
  direct: string;
  proxy: RecordingProxy;
}

async function behindProxy(start: () => Promise<UpstreamHandle>): Promise<ProxiedUpstream> {
  const upstream = await start();
  const proxy = await startRecordingProxy(upstream.url).catch(async (err: unknown) => {
    await upstream.close();
    throw err;
  });
  return {
    url: proxy.url,
    direct: upstream.url,
    proxy,
    close: async () => {
      await proxy.close();
      await upstream.close();
    },
  };
}

type CallOutcome = TaskOutcome<unknown>;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** What a tool result and its reference must share. */
function toolOutcome(result: unknown): { content: unknown; structuredContent: unknown; isError: boolean } {
  if (!isRecord(result)) throw new Error(`not a tool result: ${JSON.stringify(result)}`);
  return { content: result.content, structuredContent: result.structuredContent, isError: result.isError === true };
}

/** Everything useful for a failure message: the outcome, ext-tasks' background errors, the last wire exchanges. */
function diagnose(outcome: CallOutcome, h: ExtTasksClientHandle): string {
  const parts: string[] = [`outcome ${outcome.status}`];
  if (outcome.status === "failed") {
    const e = outcome.error;
    parts.push(`error: ${e.message} (code ${String(e.code)}, data ${JSON.stringify(e.data)})`);
    const cause = e.cause;
    if (cause instanceof Error) {
      parts.push(`cause: ${cause.name}: ${cause.message}`);
      if (cause.cause !== undefined) parts.push(`cause.cause: ${String(cause.cause)}`);
    }
  }
  for (const err of h.errors)
    parts.push(`ext-tasks reported: ${err.message}${err.cause === undefined ? "" : ` (${String(err.cause)})`}`);
  for (const d of h.dispatched.slice(-3)) {
    parts.push(
      `sent ${JSON.stringify(d.request)} → ${d.response ? JSON.stringify(d.response) : `failure: ${d.failure ?? "pending"}`}`,
    );
  }
  return parts.join("\n");
}

/** The raw JSON-RPC result the gateway answered to the execution's tools/call. */
function toolsCallResult(h: ExtTasksClientHandle, name: string): Record<string, unknown> {
  const calls = h.dispatched.filter(
    (d) => d.request.method === "tools/call" && isRecord(d.request.params) && d.request.params.name === name,
  );
  const last = calls.at(-1);
  if (last?.response?.kind !== "result" || !isRecord(last.response.result)) {
    throw new Error(`no result for tools/call ${name}: ${JSON.stringify(last)}`);
  }
  return last.response.result;
}

async function settled(execution: ToolExecution<unknown>): Promise<CallOutcome> {
  const { outcome } = await execution.settle();
  return outcome;
}

type ReferenceCall = (name: string, args: Record<string, unknown>) => Promise<unknown>;

/**
 * For one describe block: the ext-tasks client through the gateway and the
 * SDK 1.x reference client straight to the upstream, both answering every
 * elicitation with ELICIT_ANSWER.
 */
function clientsFor(
  gatewayUrl: () => string,
  directUrl: () => string,
): { client: () => ExtTasksClientHandle; reference: ReferenceCall } {
  let ext: ExtTasksClientHandle | undefined;
  let direct: SdkClientHandle | undefined;
  beforeAll(async () => {
    ext = await connectExtTasksClient(gatewayUrl(), { onElicit: () => ELICIT_ANSWER });
    direct = await connectSdkClient(directUrl(), { onElicit: () => ELICIT_ANSWER });
  });
  afterAll(async () => {
    await ext?.close();
    await direct?.close();
  });
  const client = (): ExtTasksClientHandle => {
    if (!ext) throw new Error("ext-tasks client not connected");
    return ext;
  };
  const reference: ReferenceCall = async (name, args) => {
    if (!direct) throw new Error("reference client not connected");
    return await direct.client.callTool({ name, arguments: args });
  };
  return { client, reference };
}

/** The execution settles completed, with the same tool outcome as `expected`; returns that outcome. */
async function expectSettledLike(
  h: ExtTasksClientHandle,
  execution: ToolExecution<unknown>,
  expected: unknown,
): Promise<ReturnType<typeof toolOutcome>> {
  const outcome = await settled(execution);
  expect(outcome.status, diagnose(outcome, h)).toBe("completed");
  const result = toolOutcome(resultFromTaskOutcome(outcome));
  expect(result).toEqual(toolOutcome(expected));
  return result;
}

/** A quick call under its threshold: a plain (immediate) result equal to the direct one, not a task. */
async function quickCallScenario(
  h: ExtTasksClientHandle,
  reference: ReferenceCall,
  tool: string,
  args: Record<string, JsonValue>,
): Promise<void> {
  const execution = await h.session.callTool(tool, args);
  expect(execution.kind).toBe("immediate");
  expect(toolsCallResult(h, tool).resultType).toBe("complete");
  const outcome = await settled(execution);
  expect(outcome.status, diagnose(outcome, h)).toBe("completed");
  expect(toolOutcome(resultFromTaskOutcome(outcome))).toEqual(toolOutcome(await reference(tool, args)));
  expect(h.errors).toEqual([]);
}

/**
 * A tool that elicits inside a task: the call becomes a task, settles like the
 * direct call (whose answer carries ELICIT_ANSWER's name), and exactly one input
 * request came in during it. Undefined when the call did not become a task.
 */
async function elicitedTaskScenario(
  h: ExtTasksClientHandle,
  reference: ReferenceCall,
  tool: string,
  args: Record<string, JsonValue>,
): Promise<
  { execution: Extract<ToolExecution<unknown>, { kind: "task" }>; asked: ExtTasksClientHandle["inputs"] } | undefined
> {
  const before = h.inputs.length;
  const [execution, expected] = await Promise.all([h.session.callTool(tool, args), reference(tool, args)]);
  expect(execution.kind).toBe("task");
  if (execution.kind !== "task") return undefined;
  const result = await expectSettledLike(h, execution, expected);
  expect(JSON.stringify(result.content)).toContain("Grace");
  const asked = h.inputs.slice(before);
  expect(asked).toHaveLength(1);
  return { execution, asked };
}

/** The upstream tools/call the gateway sent for `name` (through the proxy), with its id and exchange. */
function upstreamCall(proxy: RecordingProxy, match: (params: Record<string, unknown>) => boolean) {
  return proxy
    .posted()
    .find(
      ({ message }) =>
        message.method === "tools/call" && "id" in message && isRecord(message.params) && match(message.params),
    );
}

/**
 * Shared by both upstreams: a long call turned into a task, cancelled through
 * ext-tasks; the task ends cancelled (leaving nothing running in the engine),
 * and the upstream call is cancelled with its own request id and its stream
 * closed.
 */
async function cancelScenario(
  h: ExtTasksClientHandle,
  gateway: TestGateway,
  proxy: RecordingProxy,
  tool: string,
  args: Record<string, JsonValue>,
  isThisCall: (params: Record<string, unknown>) => boolean,
): Promise<void> {
  const execution = await h.session.callTool(tool, args);
  expect(execution.kind, JSON.stringify(toolsCallResult(h, tool))).toBe("task");
  if (execution.kind !== "task") return;
  const taskId = execution.handle.taskId;

  await execution.cancel();
  const outcome = await settled(execution);
  expect(outcome.status, diagnose(outcome, h)).toBe("cancelled");
  expect(() => resultFromTaskOutcome(outcome)).toThrow(TaskCancelledError);

  // The gateway's own record agrees (ext-tasks ends its local lifetime at the cancel ack).
  const snapshot = await h.session.task(taskId).snapshot();
  expect(snapshot.taskId).toBe(taskId);
  expect(snapshot.status).toBe("cancelled");
  // Every earlier task in the describe block has settled, so nothing is left running in the engine.
  expect((await gateway.stats()).tasks.unfinished).toBe(0);

  // Upstream: notifications/cancelled names the *upstream* request id, on the call's session, and the stream is closed.
  const call = upstreamCall(proxy, isThisCall);
  expect(call, "the gateway never sent the call upstream").toBeDefined();
  if (!call) return;
  const upstreamId = call.message.id;
  const cancelled = await eventually(
    () =>
      proxy
        .posted()
        .find(
          ({ message }) =>
            message.method === "notifications/cancelled" &&
            isRecord(message.params) &&
            message.params.requestId === upstreamId,
        ),
    `notifications/cancelled for upstream request ${String(upstreamId)}`,
  );
  expect(cancelled.exchange.sessionId).toBe(call.exchange.sessionId);
  await eventually(
    () => (call.exchange.closedByGateway ? true : undefined),
    "the gateway to close the upstream stream of the cancelled call",
  );
  expect(call.exchange.finished).toBe(false);
  expect(h.errors).toEqual([]);
}

// ------------------------------------------------------------------------------------------------

describe("ext-tasks requester → gateway → SDK 1.x upstream", () => {
  const env = gatewayInFrontOf(
    () => behindProxy(() => startSdkUpstream({ host: "127.0.0.1", port: 0 })),
    { beforeAll, afterAll },
    taskConfig([
      // Generous threshold: a quick tool must win the race even on a slow machine.
      { tool: "echo", mode: "auto", thresholdMs: 10_000 },
      { tool: "ask_user", mode: "always" },
      { tool: "fail", mode: "always" },
      { tool: "throw_error", mode: "always" },
    ]),
  );

  const { client, reference } = clientsFor(
    () => env.urls().gateway,
    () => env.upstream().direct,
  );

  it("is recognised by ext-tasks as a 2026-07-28 Tasks server", () => {
    const h = client();
    expect(h.modern.client.getProtocolEra()).toBe("modern");
    expect(h.modern.client.getServerCapabilities()?.extensions?.[TASKS_EXTENSION]).toEqual({});
    expect(h.session.capabilities).toMatchObject({ execution: true, cancellation: true, inputResponses: true });
  });

  it("turns a slow tool into a task whose settled outcome equals the direct result", async () => {
    const h = client();
    const args = { durationMs: 1_000, steps: 4 };
    const [execution, expected] = await Promise.all([
      h.session.callTool("slow_task", args),
      reference("slow_task", args),
    ]);
    expect(execution.kind).toBe("task");
    const created = toolsCallResult(h, "slow_task");
    expect(created).toMatchObject({ resultType: "task", status: "working" });
    expect(execution.kind === "task" ? execution.handle.taskId : undefined).toBe(created.taskId);

    const { outcome, lastTask } = await execution.settle();
    expect(outcome.status, diagnose(outcome, h)).toBe("completed");
    expect(toolOutcome(resultFromTaskOutcome(outcome))).toEqual(toolOutcome(expected));
    expect(lastTask?.status).toBe("completed");
    expect(h.errors).toEqual([]);
  });

  it("answers a quick call under the threshold with a plain result, not a task", async () => {
    await quickCallScenario(client(), reference, "echo", { text: "hello through ext-tasks" });
  });

  it("ends an isError: true tool result as completed (not failed), with the result inlined", async () => {
    const h = client();
    const args = { message: "tool-level failure" };
    const execution = await h.session.callTool("fail", args);
    expect(execution.kind).toBe("task");
    const outcome = await settled(execution);
    expect(outcome.status, diagnose(outcome, h)).toBe("completed");
    const result = toolOutcome(resultFromTaskOutcome(outcome));
    expect(result.isError).toBe(true);
    expect(result).toEqual(toolOutcome(await reference("fail", args)));
    if (execution.kind === "task") {
      const snapshot = await h.session.task(execution.handle.taskId).snapshot();
      expect(snapshot.status).toBe("completed");
    }
    expect(h.errors).toEqual([]);
  });

  it("ends a JSON-RPC error from the upstream as failed, carrying that error", async () => {
    const h = client();
    const args = { message: "protocol-level failure" };
    const execution = await h.session.callTool("throw_error", args);
    expect(execution.kind).toBe("task");
    const outcome = await settled(execution);
    expect(outcome.status, diagnose(outcome, h)).toBe("failed");
    const directError = await reference("throw_error", args).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(directError).toBeInstanceOf(McpError);
    if (outcome.status !== "failed" || !(directError instanceof McpError)) return;
    expect(outcome.error).toBeInstanceOf(TaskFailedError);
    expect(outcome.error.code).toBe(directError.code);
    expect(outcome.error.message).toContain("protocol-level failure");
    expect(h.errors).toEqual([]);
  });

  it("cancels a long task through ext-tasks: cancelled, and the upstream call is cancelled by its upstream id", async () => {
    await cancelScenario(
      client(),
      env.gateway(),
      env.upstream().proxy,
      "slow_task",
      { durationMs: 60_000, steps: 60 },
      (p) => p.name === "slow_task" && isRecord(p.arguments) && p.arguments.durationMs === 60_000,
    );
  });

  it("pushes notifications/tasks for a task id on subscriptions/listen, and ext-tasks accepts them", async () => {
    const h = client();
    const execution = await h.session.callTool("slow_task", { durationMs: 1_000, steps: 2 });
    expect(execution.kind).toBe("task");
    if (execution.kind !== "task") return;
    const taskId = execution.handle.taskId;
    const subscription = await h.listenTasks([taskId]);
    try {
      expect(subscription.acceptedTaskIds).toEqual([taskId]);
      const outcome = await settled(execution);
      expect(outcome.status, diagnose(outcome, h)).toBe("completed");
      const pushed = await eventually(
        () =>
          h.modern.events.find(
            (e) =>
              e.kind === "notification" &&
              e.method === "notifications/tasks" &&
              isRecord(e.params) &&
              e.params.taskId === taskId &&
              e.params.status === "completed",
          ),
        "a pushed notifications/tasks with the completed task",
      );
      expect(pushed.params).toMatchObject({
        taskId,
        status: "completed",
        result: { resultType: "complete", content: [{ type: "text" }] },
      });
      expect(isTaskStatusNotificationV2({ jsonrpc: "2.0", method: pushed.method, params: pushed.params })).toBe(true);
      // ext-tasks validates every notifications/tasks against its schema and reports any it rejects.
      expect(h.errors).toEqual([]);
    } finally {
      subscription.close();
    }
  });

  it("surfaces an elicitation inside a task and answers it through tasks/update", async () => {
    const h = client();
    const elicited = await elicitedTaskScenario(h, reference, "ask_user", { question: "Who is asking?" });
    if (!elicited) return;
    const { execution, asked } = elicited;

    // It came as the task's input request (not MRTR), and went back with tasks/update.
    const input = asked[0];
    expect(input?.request.kind).toBe("elicitation");
    expect(input).toMatchObject({ scope: "task", delivery: "task-update", taskId: execution.handle.taskId });
    expect(input?.request.params).toMatchObject({ message: "Who is asking?", requestedSchema: { type: "object" } });
    const update = h.dispatched.find(
      (d) =>
        d.request.method === "tasks/update" &&
        isRecord(d.request.params) &&
        d.request.params.taskId === execution.handle.taskId,
    );
    expect(update?.request.params).toMatchObject({ inputResponses: { [input?.inputId ?? "?"]: ELICIT_ANSWER } });
    expect(update?.response).toEqual({ kind: "result", result: { resultType: "complete" } });
    expect(h.errors).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------------------

describe("ext-tasks requester → gateway → server-everything", () => {
  const env = gatewayInFrontOf(
    () => behindProxy(startServerEverything),
    { beforeAll, afterAll },
    taskConfig([
      { tool: "echo", mode: "auto", thresholdMs: 10_000 },
      { tool: "trigger-elicitation-request", mode: "always" },
    ]),
  );

  const { client, reference } = clientsFor(
    () => env.urls().gateway,
    () => env.upstream().direct,
  );

  it("turns trigger-long-running-operation into a task whose settled outcome equals the direct result", async () => {
    const h = client();
    const args = { duration: 1, steps: 4 };
    const [execution, expected] = await Promise.all([
      h.session.callTool("trigger-long-running-operation", args),
      reference("trigger-long-running-operation", args),
    ]);
    expect(execution.kind).toBe("task");
    expect(toolsCallResult(h, "trigger-long-running-operation")).toMatchObject({
      resultType: "task",
      status: "working",
    });
    const { outcome, lastTask } = await execution.settle();
    expect(outcome.status, diagnose(outcome, h)).toBe("completed");
    expect(toolOutcome(resultFromTaskOutcome(outcome))).toEqual(toolOutcome(expected));
    expect(lastTask?.status).toBe("completed");
    expect(h.errors).toEqual([]);
  });

  it("answers a quick echo with a plain result, not a task", async () => {
    await quickCallScenario(client(), reference, "echo", { message: "plain and quick" });
  });

  it("cancels a long task through ext-tasks: cancelled, and the upstream call is cancelled by its upstream id", async () => {
    await cancelScenario(
      client(),
      env.gateway(),
      env.upstream().proxy,
      "trigger-long-running-operation",
      { duration: 60, steps: 60 },
      (p) => p.name === "trigger-long-running-operation" && isRecord(p.arguments) && p.arguments.duration === 60,
    );
  });

  it("surfaces trigger-elicitation-request inside a task and answers it through tasks/update", async () => {
    const h = client();
    const elicited = await elicitedTaskScenario(h, reference, "trigger-elicitation-request", {});
    if (!elicited) return;
    const { execution, asked } = elicited;

    expect(asked[0]).toMatchObject({ scope: "task", delivery: "task-update", taskId: execution.handle.taskId });
    expect(asked[0]?.request.params).toMatchObject({ requestedSchema: { type: "object", required: ["name"] } });
    expect(
      h.dispatched.some(
        (d) =>
          d.request.method === "tasks/update" &&
          isRecord(d.request.params) &&
          d.request.params.taskId === execution.handle.taskId &&
          d.response?.kind === "result",
      ),
    ).toBe(true);
    expect(h.errors).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------------------

describe("ext-tasks requester → gateway → SDK 1.x upstream, input before promotion", () => {
  // Nothing is promoted early here: an elicitation that arrives before the threshold follows MRTR.
  const env = gatewayInFrontOf(
    () => startSdkUpstream({ host: "127.0.0.1", port: 0 }),
    { beforeAll, afterAll },
    { tasks: { thresholdMs: 10_000 } },
  );

  const { client, reference } = clientsFor(
    () => env.urls().gateway,
    () => env.urls().direct,
  );

  it("answers an elicitation that comes before the threshold through an MRTR retry, and the call stays plain", async () => {
    const h = client();
    const args = { question: "Before any task?" };
    const [execution, expected] = await Promise.all([
      h.session.callTool("ask_user", args),
      reference("ask_user", args),
    ]);
    expect(execution.kind).toBe("immediate");
    await expectSettledLike(h, execution, expected);
    expect(h.inputs).toHaveLength(1);
    expect(h.inputs[0]).toMatchObject({ scope: "request", delivery: "request-retry" });
    const calls = h.dispatched.filter((d) => d.request.method === "tools/call");
    expect(
      calls.map((d) =>
        d.response?.kind === "result" && isRecord(d.response.result) ? d.response.result.resultType : d.response?.kind,
      ),
    ).toEqual(["input_required", "complete"]);
    expect(h.dispatched.some((d) => d.request.method.startsWith("tasks/"))).toBe(false);
    expect(h.errors).toEqual([]);
  });
});
