// Tracing on (telemetry.endpoint): a local OTLP/HTTP receiver (JSON) gets the
// gateway's spans, and the upstream (an SDK 1.x server behind a recording proxy)
// sees a traceparent whose trace id is the client's and whose parent is the
// gateway's upstream span, on the legacy pass-through, on the era bridge's
// pooled session, and on a task's background call. Log lines (the access log
// included) carry trace_id/span_id.
import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { taskRef } from "../../src/tasks/task-id.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { eventually, exchangeFor, type RecordingProxy, startRecordingProxy } from "../helpers/ext-tasks-client.js";
import { MCP_ACCEPT } from "../helpers/http.js";
import { modernRpc } from "../helpers/modern-http.js";
import { attr, KIND, startOtlpReceiver, type ExportedSpan, type OtlpReceiver } from "../helpers/otlp-receiver.js";

const waitUntil = <T>(what: string, probe: () => T | undefined): Promise<T> => eventually(probe, what, 10_000);

type TestGateway = Awaited<ReturnType<typeof startGateway>>;

// --- W3C trace context ----------------------------------------------------------------------

const hex = (bytes: number): string =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

function clientTrace(): { traceId: string; spanId: string; traceparent: string; tracestate: string } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01`, tracestate: "vendor=client-state" };
}

function parseTraceparent(h: IncomingHttpHeaders): { traceId: string; parentId: string; flags: string } {
  const value = h.traceparent;
  expect(typeof value).toBe("string");
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value as string);
  expect(m).not.toBeNull();
  return { traceId: m?.[1] ?? "", parentId: m?.[2] ?? "", flags: m?.[3] ?? "" };
}

// --- the setup: receiver, upstream behind a recording proxy, a gateway with tracing on --------

let receiver: OtlpReceiver;
let upstream: SdkUpstream;
let proxy: RecordingProxy;
let gateway: TestGateway;
const logLines: Array<Record<string, unknown>> = [];
let closed = false;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  proxy = await startRecordingProxy(upstream.url);
  gateway = await startGateway(
    {
      upstream: { url: proxy.url },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "info", access: true },
      telemetry: { endpoint: receiver.endpoint, serviceName: "gateway-under-test" },
      // echo is a task from the start: its upstream call is the task's background call.
      tasks: {
        rules: [
          { tool: "echo", mode: "always" },
          { tool: "ask_user", mode: "always" },
          { tool: "slow_task", mode: "always" },
        ],
      },
      metrics: { enabled: false },
    },
    { logger: createLogger("info", (line) => void logLines.push(JSON.parse(line) as Record<string, unknown>)) },
  );
});

afterAll(async () => {
  if (!closed) await gateway?.close();
  await proxy?.close();
  await upstream?.close();
  await receiver?.close();
});

/** Closing the gateway ends its spans and flushes the exporter (bounded by the exporter's own timeout). */
async function flushed(): Promise<ExportedSpan[]> {
  if (!closed) {
    closed = true;
    await gateway.close();
  }
  return receiver.spans;
}

const TASKS_CAPS = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const legacyInit = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "tracing-test", version: "1.0.0" } },
});

describe("tracing on: OTLP/HTTP export and W3C trace context upstream", () => {
  const pass = clientTrace();
  const bridged = clientTrace();
  const task = clientTrace();
  let taskId = "";

  it("legacy pass-through: the client's request goes upstream as the child of the gateway's upstream span", async () => {
    const res = await fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        traceparent: pass.traceparent,
        tracestate: pass.tracestate,
      },
      body: JSON.stringify(legacyInit(1)),
    });
    expect(res.status).toBe(200);
    await res.text();
    const seen = await waitUntil("the initialize upstream", () =>
      exchangeFor(
        proxy,
        "initialize",
        (m) => (m.params as { clientInfo?: { name?: string } }).clientInfo?.name === "tracing-test",
      ),
    );
    const tp = parseTraceparent(seen.headers);
    expect(tp.traceId).toBe(pass.traceId);
    // Not the client's own span: the gateway's upstream span sits between them.
    expect(tp.parentId).not.toBe(pass.spanId);
    expect(tp.flags).toBe("01");
    expect(seen.headers.tracestate).toBe(pass.tracestate);
  });

  it("era bridge: a modern client's traceparent reaches the legacy upstream on the pooled session", async () => {
    const reply = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "add", arguments: { a: 1, b: 2 } },
      { headers: { traceparent: bridged.traceparent, tracestate: bridged.tracestate } },
    );
    expect(reply.status).toBe(200);
    const seen = await waitUntil("the bridged tools/call", () =>
      exchangeFor(proxy, "tools/call", (m) => (m.params as { name?: string }).name === "add"),
    );
    const tp = parseTraceparent(seen.headers);
    expect(tp.traceId).toBe(bridged.traceId);
    expect(tp.parentId).not.toBe(bridged.spanId);
    expect(seen.headers.tracestate).toBe(bridged.tracestate);
  });

  it("a task's background call runs in the task's trace context", async () => {
    const reply = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "echo", arguments: { text: "traced" } },
      { capabilities: TASKS_CAPS, headers: { traceparent: task.traceparent } },
    );
    expect(reply.status).toBe(200);
    const result = reply.message.result as { resultType?: string; taskId?: string };
    expect(result.resultType).toBe("task");
    taskId = result.taskId ?? "";
    const seen = await waitUntil("the task's upstream call", () =>
      exchangeFor(proxy, "tools/call", (m) => (m.params as { name?: string }).name === "echo"),
    );
    expect(parseTraceparent(seen.headers).traceId).toBe(task.traceId);
    // The task finishes (echo is quick); a poll sees it completed.
    await waitUntil("the task to complete", () => (seen.finished ? true : undefined));
    for (let i = 0; i < 100; i++) {
      const got = await modernRpc(gateway.url, "tasks/get", { taskId }, { capabilities: TASKS_CAPS });
      if ((got.message.result as { status?: string } | undefined)?.status === "completed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  const taskStatus = async (id: string, caps: Record<string, unknown> = TASKS_CAPS): Promise<Record<string, unknown>> =>
    ((await modernRpc(gateway.url, "tasks/get", { taskId: id }, { capabilities: caps })).message.result ??
      {}) as Record<string, unknown>;
  const untilStatus = async (
    id: string,
    status: string,
    caps?: Record<string, unknown>,
  ): Promise<Record<string, unknown>> => {
    for (let i = 0; i < 500; i++) {
      const t = await taskStatus(id, caps);
      if (t.status === status) return t;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`task ${id} never reached ${status}`);
  };
  let askTaskId = "";
  let slowTaskId = "";

  it("a task's span records input_required and update", async () => {
    const caps = { ...TASKS_CAPS, elicitation: { form: {} } };
    const created = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "ask_user", arguments: {} },
      { capabilities: caps },
    );
    askTaskId = (created.message.result as { taskId: string }).taskId;
    const waiting = await untilStatus(askTaskId, "input_required", caps);
    const key = Object.keys(waiting.inputRequests as Record<string, unknown>)[0] ?? "";
    await modernRpc(
      gateway.url,
      "tasks/update",
      { taskId: askTaskId, inputResponses: { [key]: { action: "accept", content: { name: "Ada" } } } },
      { capabilities: caps },
    );
    await untilStatus(askTaskId, "completed", caps);
  });

  it("a task's span records cancel", async () => {
    const created = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "slow_task", arguments: { durationMs: 30_000, steps: 1 } },
      { capabilities: TASKS_CAPS },
    );
    slowTaskId = (created.message.result as { taskId: string }).taskId;
    await waitUntil("the slow call upstream", () =>
      exchangeFor(proxy, "tools/call", (m) => (m.params as { name?: string }).name === "slow_task"),
    );
    await modernRpc(gateway.url, "tasks/cancel", { taskId: slowTaskId }, { capabilities: TASKS_CAPS });
    await untilStatus(slowTaskId, "cancelled");
  });

  it("exports a trace whose upstream span is the parent the upstream saw, on every path", async () => {
    const spans = await flushed();
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    expect(spans.every((s) => s.service === "gateway-under-test")).toBe(true);

    // Pass-through: SERVER span (child of the client's span) → CLIENT span → the upstream's traceparent.
    const passSeen = parseTraceparent(
      must(
        exchangeFor(
          proxy,
          "initialize",
          (m) => (m.params as { clientInfo?: { name?: string } }).clientInfo?.name === "tracing-test",
        ),
      ).headers,
    );
    const passClient = must(byId.get(passSeen.parentId));
    expect(passClient.kind).toBe(KIND.client);
    expect(passClient.traceId).toBe(pass.traceId);
    expect(passClient.name).toBe("initialize");
    expect(attr(passClient, "http.request.method")).toBe("POST");
    expect(attr(passClient, "http.response.status_code")).toBe(200);
    expect(attr(passClient, "mcp.method.name")).toBe("initialize");
    expect(attr(passClient, "server.address")).toBe("127.0.0.1");
    // Only the origin: a hosted MCP URL's path and query may hold a secret.
    expect(attr(passClient, "url.full")).toBe(new URL(proxy.url).origin);
    const passServer = must(byId.get(must(passClient.parentSpanId)));
    expect(passServer.kind).toBe(KIND.server);
    expect(passServer.parentSpanId).toBe(pass.spanId);
    expect(attr(passServer, "http.route")).toBe("/mcp");
    expect(attr(passServer, "http.response.status_code")).toBe(200);
    expect(attr(passServer, "mcp.method.name")).toBe("initialize");
    expect(attr(passServer, "jsonrpc.request.id")).toBe("1");

    // Era bridge: the pooled session's tools/call is a CLIENT span named by the MCP conventions.
    const bridgeSeen = parseTraceparent(
      must(exchangeFor(proxy, "tools/call", (m) => (m.params as { name?: string }).name === "add")).headers,
    );
    const bridgeClient = must(byId.get(bridgeSeen.parentId));
    expect(bridgeClient.kind).toBe(KIND.client);
    expect(bridgeClient.traceId).toBe(bridged.traceId);
    expect(bridgeClient.name).toBe("tools/call add");
    expect(attr(bridgeClient, "gen_ai.tool.name")).toBe("add");
    expect(attr(bridgeClient, "gen_ai.operation.name")).toBe("execute_tool");
    expect(typeof attr(bridgeClient, "mcp.session.id")).toBe("string");
    const bridgeServer = must(byId.get(must(bridgeClient.parentSpanId)));
    expect(bridgeServer.kind).toBe(KIND.server);
    expect(bridgeServer.parentSpanId).toBe(bridged.spanId);
    expect(bridgeServer.name).toBe("tools/call add");

    // Task: SERVER span → task span (child, and linked) → CLIENT span of the background call.
    const taskSeen = parseTraceparent(
      must(exchangeFor(proxy, "tools/call", (m) => (m.params as { name?: string }).name === "echo")).headers,
    );
    const taskClient = must(byId.get(taskSeen.parentId));
    expect(taskClient.kind).toBe(KIND.client);
    expect(taskClient.traceId).toBe(task.traceId);
    const taskSpan = must(byId.get(must(taskClient.parentSpanId)));
    expect(taskSpan.kind).toBe(KIND.internal);
    expect(taskSpan.name).toBe("task echo");
    expect(attr(taskSpan, "mcp.task.id")).toBe(taskRef(taskId));
    expect(attr(taskSpan, "mcp.task.status")).toBe("completed");
    const creator = must(byId.get(must(taskSpan.parentSpanId)));
    expect(creator.kind).toBe(KIND.server);
    expect(creator.parentSpanId).toBe(task.spanId);
    expect(taskSpan.links).toEqual([expect.objectContaining({ traceId: task.traceId, spanId: creator.spanId })]);

    // Lifecycle events.
    const spanOfTask = (id: string): ExportedSpan =>
      must(spans.find((s) => s.kind === KIND.internal && attr(s, "mcp.task.id") === taskRef(id)));
    const asked = spanOfTask(askTaskId);
    expect(asked.events?.map((e) => e.name)).toEqual(["input_required", "update"]);
    expect(attr(asked, "mcp.task.status")).toBe("completed");
    const cancelled = spanOfTask(slowTaskId);
    expect(cancelled.events?.map((e) => e.name)).toEqual(["cancel"]);
    expect(attr(cancelled, "mcp.task.status")).toBe("cancelled");
  });

  it("log lines carry trace_id/span_id, and the access log has one line per request", () => {
    const access = logLines.filter((l) => l.msg === "access");
    const passAccess = access.find((l) => l.trace_id === pass.traceId);
    expect(passAccess).toMatchObject({ level: "info", method: "POST", route: "/mcp", status: 200 });
    expect(typeof passAccess?.span_id).toBe("string");
    expect(passAccess?.bytes).toBeGreaterThan(0);
    expect(typeof passAccess?.duration_ms).toBe("number");
    expect(typeof passAccess?.upstream_ms).toBe("number");
    expect(access.find((l) => l.trace_id === bridged.traceId)).toMatchObject({
      method: "POST",
      route: "/mcp",
      status: 200,
    });
    // The audit trail's task line was written inside the creating request: it carries its trace.
    expect(logLines.find((l) => l.audit === "task.created")).toMatchObject({ trace_id: task.traceId });
  });
});

function must<T>(v: T | undefined): T {
  expect(v).toBeDefined();
  return v as T;
}
