// Two gateway processes ("replicas") sharing tasks in the real Redis, in front of
// one SDK 1.x upstream (behind a recording proxy that shows what the replicas
// send upstream). A task runs on the replica that created it (A); everything
// else about it is asked of the other one (B): tasks/cancel and tasks/update are
// forwarded to A and acknowledged only once applied, an MRTR retry is forwarded
// to the replica holding the parked call, and subscriptions/listen on B hears
// A's changes over Redis pub/sub.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonRpcResponse, RawClientDispatch } from "@modelcontextprotocol/ext-tasks/client";
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  DispatchError,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";
import { isJsonValue, type JsonValue } from "@modelcontextprotocol/ext-tasks/core";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import {
  EXT_TASKS_CLIENT_CAPABILITIES,
  startRecordingProxy,
  v2Framing,
  type RecordingProxy,
} from "../helpers/ext-tasks-client.js";
import { isRecord } from "../helpers/http.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createModernClient,
  MODERN_PROTOCOL_VERSION,
  requestBodyOf,
  resultIn,
  toolCallExchanges,
} from "../helpers/modern-client.js";
import { recordingFetch, type HttpExchange } from "../helpers/recording.js";
import { modernHeaders } from "../helpers/modern-http.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import {
  createTask,
  getTask,
  isMethod,
  isTerminal,
  last,
  must,
  NOT_DECLARING,
  pollTask,
  replicaConfig,
  Replicas,
  rpc,
  openStream,
  textOf,
  upstreamSlowCall,
  waitFor,
  type Json,
  type ReplicaProcess,
} from "../helpers/replicas.js";
import { sseMessages } from "../helpers/compare.js";

const replicas = new Replicas();
let redis: TestRedis;
let upstream: SdkUpstream;
let proxy: RecordingProxy;
let direct: SdkClientHandle;
let a: ReplicaProcess;
let b: ReplicaProcess;

beforeAll(async () => {
  redis = await testRedis();
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  proxy = await startRecordingProxy(upstream.url);
  direct = await connectSdkClient(upstream.url, { onElicit: () => ({ action: "accept", content: { name: "Grace" } }) });
  const config = replicaConfig(proxy.url, TEST_REDIS_URL, redis.prefix, {
    rules: [
      { tool: "slow_task", mode: "always" },
      { tool: "ask_user", mode: "always" },
    ],
  });
  [a, b] = await Promise.all([replicas.start("A", config), replicas.start("B", config)]);
});

afterAll(async () => {
  await replicas.cleanup();
  await direct?.close();
  await proxy?.close();
  await upstream?.close();
  await redis?.cleanup();
});

/** Why a replica misbehaved: what it logged. */
const logs = (): string => `A stderr:\n${a.stderr()}\nB stderr:\n${b.stderr()}`;

describe("tasks/cancel sent to the replica that does not run the task", () => {
  it("is forwarded, acknowledged once applied, ends the task cancelled, and cancels the upstream call by its own id", async () => {
    const created = await createTask(a.url, "slow_task", { durationMs: 20_001, steps: 200 });
    // B sees A's progress: the upstream call runs, on A.
    await pollTask(
      b.url,
      created.taskId,
      (t) => t.status === "working" && typeof t.statusMessage === "string" && t.statusMessage.startsWith("progress"),
    );
    const call = must(upstreamSlowCall(proxy, 20_001), "the upstream tools/call");

    const ack = await rpc(b.url, "tasks/cancel", { taskId: created.taskId });
    expect(ack.status, `${ack.text}\n${logs()}`).toBe(200);
    expect(ack.result).toEqual({ resultType: "complete" });
    // Acknowledged only once applied: both replicas answer cancelled right away.
    for (const r of [b, a]) {
      const after = must((await getTask(r.url, created.taskId)).result, `tasks/get on ${r.name}`);
      expect(after.status, r.name).toBe("cancelled");
      expect(after).not.toHaveProperty("result");
      expect(after).not.toHaveProperty("error");
    }
    // The upstream hears notifications/cancelled for its own request id, on the call's session, and the call stops.
    const cancelled = await waitFor(
      () =>
        proxy
          .posted()
          .find(
            (p) =>
              p.message.method === "notifications/cancelled" &&
              isRecord(p.message.params) &&
              p.message.params.requestId === call.message.id,
          ),
      "notifications/cancelled with the upstream's request id",
    );
    expect(cancelled.exchange.sessionId).toBe(call.exchange.sessionId);
    await waitFor(
      () => (call.exchange.closedByGateway || call.exchange.finished ? true : undefined),
      "the upstream call to stop",
    );
    expect(call.exchange.closedByGateway).toBe(true);
    // Cancelled is terminal: a second cancel on B is acknowledged and changes nothing.
    expect((await rpc(b.url, "tasks/cancel", { taskId: created.taskId })).result).toEqual({ resultType: "complete" });
    expect((await getTask(b.url, created.taskId)).result?.status).toBe("cancelled");
  });

  it("another caller's cancel on B is refused like an unknown task and changes nothing", async () => {
    const owner = { authorization: "Bearer owner" };
    const created = await createTask(a.url, "slow_task", { durationMs: 20_002, steps: 200 }, { headers: owner });
    const stranger = await rpc(
      b.url,
      "tasks/cancel",
      { taskId: created.taskId },
      { headers: { authorization: "Bearer stranger" } },
    );
    const unknown = await rpc(
      b.url,
      "tasks/cancel",
      { taskId: "never-issued" },
      { headers: { authorization: "Bearer stranger" } },
    );
    expect(stranger.error?.code).toBe(-32602);
    expect(stranger.error).toEqual(unknown.error);
    expect((await getTask(b.url, created.taskId, { headers: owner })).result?.status).toBe("working");
    expect((await rpc(b.url, "tasks/cancel", { taskId: created.taskId }, { headers: owner })).result).toEqual({
      resultType: "complete",
    });
  });
});

// ---------------------------------------------------------------------------
// The official requester, its requests routed by method to different replicas

interface Routed {
  method: string;
  replica: string;
  response?: JsonRpcResponse;
}

/** A rawDispatch that sends each request to the replica `route` names, on a connection of its own. */
function routedDispatch(route: (method: string) => ReplicaProcess, log: Routed[]): RawClientDispatch {
  let seq = 0;
  return async (request) => {
    if (!isRecord(request) || typeof request.method !== "string")
      throw new DispatchError("rawDispatch needs a request with a method");
    const method = request.method;
    const params = isRecord(request.params) ? request.params : {};
    const target = route(method);
    const id = `routed-${++seq}`;
    const entry: Routed = { method, replica: target.name };
    log.push(entry);
    const name = method === "tools/call" ? params.name : params.taskId;
    const text = await new Promise<{ body: string; type: string }>((resolve, reject) => {
      const req = httpRequest(
        target.url,
        { method: "POST", headers: modernHeaders(method, typeof name === "string" ? name : undefined), agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.once("end", () =>
            resolve({ body: Buffer.concat(chunks).toString("utf8"), type: res.headers["content-type"] ?? "" }),
          );
          res.once("error", reject);
        },
      );
      req.once("error", (err) => reject(new DispatchError(`${method} to ${target.name} failed: ${err.message}`)));
      req.end(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
    const messages: unknown[] = text.type.includes("text/event-stream")
      ? sseMessages(text.body)
      : [JSON.parse(text.body)];
    const answer = messages.find((m) => isRecord(m) && m.id === id);
    if (!isRecord(answer)) throw new DispatchError(`no answer to ${method} from ${target.name}: ${text.body}`);
    let response: JsonRpcResponse;
    if (isRecord(answer.error)) {
      const { code, message, data } = answer.error;
      response = {
        kind: "error",
        error: { code: Number(code), message: String(message), ...(isJsonValue(data) ? { data } : {}) },
      };
    } else if (isJsonValue(answer.result)) {
      response = { kind: "result", result: answer.result };
    } else {
      throw new DispatchError(`not a JSON-RPC answer: ${text.body}`);
    }
    entry.response = response;
    return response;
  };
}

describe("tasks/update sent to the replica that does not run the task", () => {
  it("answers the upstream's elicitation through the owner (the official requester, tools/call on A, tasks/* on B)", async () => {
    const modern = createModernClient(a.url, {
      capabilities: EXT_TASKS_CLIENT_CAPABILITIES,
      clientName: "replicas-ext-tasks",
    });
    await modern.client.connect(modern.transport);
    const routed: Routed[] = [];
    const asked: Array<Readonly<Record<string, JsonValue>>> = [];
    const errors: Error[] = [];
    const session = createTaskSessionFromClient(modern.client, {
      endpointId: "replicas-test",
      rawDispatch: routedDispatch((method) => (method === "tools/call" ? a : b), routed),
      v2RequestFraming: v2Framing(),
      onError: (e) => void errors.push(e),
      onInputRequest: createApplicationInputHandler({
        elicitation: (request) => {
          asked.push(request.params);
          return { action: "accept", content: { name: "Grace" } };
        },
        sampling: () => ({ role: "assistant", model: "test-model", content: { type: "text", text: "unused" } }),
        roots: () => ({ roots: [] }),
      }),
    });
    try {
      const args = { question: "Who runs this task?" };
      const [execution, reference] = await Promise.all([
        session.callTool("ask_user", args),
        direct.client.callTool({ name: "ask_user", arguments: args }),
      ]);
      expect(execution.kind).toBe("task");
      const { outcome } = await execution.settle();
      expect(
        outcome.status,
        `${JSON.stringify(outcome)}\n${JSON.stringify(routed)}\n${errors.map((e) => e.message).join("\n")}\n${logs()}`,
      ).toBe("completed");
      const result = resultFromTaskOutcome(outcome) as Json;
      expect(result.content).toEqual((reference as Json).content);
      expect(textOf(result)).toBe('action: accept; content: {"name":"Grace"}');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ message: "Who runs this task?" });

      // The task was created on A; every tasks/* (the polls, the update) went to B.
      const update = must(
        routed.find((r) => r.method === "tasks/update"),
        "a tasks/update",
      );
      expect(update.replica).toBe("B");
      expect(update.response).toEqual({ kind: "result", result: { resultType: "complete" } });
      expect(routed.filter((r) => r.method === "tools/call").map((r) => r.replica)).toEqual(["A"]);
      expect(routed.filter((r) => r.method.startsWith("tasks/")).every((r) => r.replica === "B")).toBe(true);
      // The upstream got the answer as the JSON-RPC result of its elicitation/create.
      const answered = proxy
        .posted()
        .filter(
          ({ message }) =>
            !("method" in message) &&
            isRecord(message.result) &&
            isRecord(message.result.content) &&
            message.result.content.name === "Grace",
        );
      expect(answered.length).toBeGreaterThanOrEqual(1);
      expect(errors).toEqual([]);
    } finally {
      await session.close().catch(() => undefined);
      await modern.client.close().catch(() => undefined);
    }
  });

  it("raw: input_required with inputRequests on B, tasks/update on B, completed with the answer on both", async () => {
    const created = await createTask(a.url, "ask_user", { question: "Raw name?" });
    const waiting = last(await pollTask(b.url, created.taskId, (t) => t.status === "input_required"));
    const inputRequests = isRecord(waiting.inputRequests) ? waiting.inputRequests : {};
    const key = must(Object.keys(inputRequests)[0], "an input request key");
    expect(inputRequests[key]).toMatchObject({ method: "elicitation/create", params: { message: "Raw name?" } });

    const ack = await rpc(b.url, "tasks/update", {
      taskId: created.taskId,
      inputResponses: { [key]: { action: "accept", content: { name: "Lin" } } },
    });
    expect(ack.result, `${ack.text}\n${logs()}`).toEqual({ resultType: "complete" });
    const done = last(await pollTask(b.url, created.taskId, isTerminal));
    expect(done.status).toBe("completed");
    expect(textOf(done.result)).toBe('action: accept; content: {"name":"Lin"}');
    expect((await getTask(a.url, created.taskId)).result).toEqual((await getTask(b.url, created.taskId)).result);
  });
});

describe("MRTR retry sent to the replica that does not hold the parked call", () => {
  it("raw: input_required with a requestState on A, the retry on B is forwarded to A and completes like a direct call", async () => {
    const args = { question: "MRTR name?" };
    const first = await rpc(a.url, "tools/call", { name: "ask_user", arguments: args }, { caps: NOT_DECLARING });
    const ir = must(first.result, `an input_required result (got ${first.text})`);
    expect(ir).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    const requests = isRecord(ir.inputRequests) ? ir.inputRequests : {};
    const key = must(Object.keys(requests)[0], "an input request key");
    expect(requests[key]).toMatchObject({ method: "elicitation/create", params: { message: "MRTR name?" } });

    const retryParams = {
      name: "ask_user",
      arguments: args,
      inputResponses: { [key]: { action: "accept", content: { name: "Grace" } } },
      requestState: ir.requestState,
    };
    const retry = await rpc(b.url, "tools/call", retryParams, { caps: NOT_DECLARING });
    expect(retry.status, `${retry.text}\n${logs()}`).toBe(200);
    expect(retry.result).toMatchObject({ resultType: "complete" });
    // The direct client answers every elicitation with the same "Grace".
    const reference = (await direct.client.callTool({ name: "ask_user", arguments: args })) as Json;
    expect(retry.result?.content).toEqual(reference.content);
    expect(textOf(retry.result)).toBe('action: accept; content: {"name":"Grace"}');
    // The state was used: the same retry again (on either replica) is refused.
    for (const r of [a, b]) {
      const again = await rpc(r.url, "tools/call", retryParams, { caps: NOT_DECLARING });
      expect(again.error?.data, r.name).toMatchObject({ reason: "invalid_request_state" });
    }
  });

  it("the 2.x client whose requests alternate between the replicas completes an elicitation", async () => {
    // Every POST goes to the other replica than the one before: discover A, tools/call B, its retry A.
    const targets = [a, b];
    let turn = 0;
    const sentTo: string[] = [];
    const http: HttpExchange[] = [];
    const record = recordingFetch(http);
    const transport = new StreamableHTTPClientTransport(new URL(a.url), {
      fetch: (input: string | URL, init?: RequestInit) => {
        const target = must(targets[turn++ % 2], "a replica");
        sentTo.push(target.name);
        return record(new URL(new URL(String(input)).pathname, target.url), init);
      },
    });
    const client = new Client(
      { name: "replicas-alternating", version: "1.0.0" },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } } },
    );
    client.setRequestHandler("elicitation/create", () => ({ action: "accept", content: { name: "Alternating" } }));
    await client.connect(transport);
    try {
      const res = await client.callTool({ name: "ask_user", arguments: { question: "Alternating?" } });
      expect(res.content).toEqual([{ type: "text", text: 'action: accept; content: {"name":"Alternating"}' }]);
      const calls = toolCallExchanges(http, "ask_user");
      expect(calls).toHaveLength(2);
      const [firstCall, retryCall] = calls;
      expect(firstCall && resultIn(firstCall)).toMatchObject({ resultType: "input_required" });
      expect(retryCall && requestBodyOf(retryCall)?.params).toMatchObject({ requestState: expect.any(String) });
      expect(retryCall && resultIn(retryCall)).toMatchObject({ resultType: "complete" });
      // The call and its retry went to different replicas (sentTo[i] is where http[i] went).
      const where = (x: HttpExchange | undefined): string | undefined =>
        x === undefined ? undefined : sentTo[http.indexOf(x)];
      expect(where(firstCall)).toBeDefined();
      expect(where(retryCall)).toBeDefined();
      expect(where(retryCall)).not.toBe(where(firstCall));
    } finally {
      await client.close().catch(() => undefined);
    }
  });
});

describe("push: subscriptions/listen on B for a task A runs", () => {
  it("B's listen hears A's changes, the terminal one included, as tasks/get would answer them", async () => {
    const created = await createTask(a.url, "ask_user", { question: "Pushed?" });
    const listen = openStream(
      b.url,
      "subscriptions/listen",
      { notifications: { taskIds: [created.taskId] } },
      { id: "listen-b" },
    );
    try {
      const ack = await listen.waitFor(isMethod("notifications/subscriptions/acknowledged"), "the acknowledgement");
      expect(listen.status).toBe(200);
      expect(isRecord(ack.params) && ack.params.notifications).toEqual({ taskIds: [created.taskId] });
      const waiting = last(await pollTask(b.url, created.taskId, (t) => t.status === "input_required"));
      const key = must(
        Object.keys(isRecord(waiting.inputRequests) ? waiting.inputRequests : {})[0],
        "an input request key",
      );
      // The change is made on A (the owner), where the answer is delivered directly.
      const ack2 = await rpc(a.url, "tasks/update", {
        taskId: created.taskId,
        inputResponses: { [key]: { action: "accept", content: { name: "Pushed" } } },
      });
      expect(ack2.result).toEqual({ resultType: "complete" });
      const completed = await listen.waitFor(
        (m) => m.method === "notifications/tasks" && isRecord(m.params) && m.params.status === "completed",
        `the completed push on B\n${logs()}`,
      );
      const pushes = listen.messages
        .filter(isMethod("notifications/tasks"))
        .map((m) => (isRecord(m.params) ? m.params : {}));
      for (const p of pushes) expect(p.taskId).toBe(created.taskId);
      // After the answer: working again, then completed (both made by A after the acknowledgement).
      expect(pushes.slice(-2).map((p) => p.status)).toEqual(["working", "completed"]);
      const get = must((await getTask(b.url, created.taskId)).result, "tasks/get on B");
      const { resultType: _rt, ...getFields } = get;
      const { _meta: meta, ...pushFields } = isRecord(completed.params) ? completed.params : {};
      expect(pushFields).toEqual(getFields);
      expect(isRecord(meta) && meta["io.modelcontextprotocol/subscriptionId"]).toBe("listen-b");
      expect(textOf(pushFields.result)).toBe('action: accept; content: {"name":"Pushed"}');
    } finally {
      await listen.close();
    }
  });
});
