// Tracing off (no telemetry endpoint, no OTEL_* environment): the gateway makes
// no spans, yet a client's traceparent/tracestate still reach the upstream
// unchanged, on the legacy pass-through and through the era bridge's pooled
// session (which used to drop them), and on a task's call. Log lines carry no
// trace ids; the access log still has one line per request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { tracingOn } from "../../src/telemetry/trace.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { eventually, exchangeFor, type RecordingProxy, startRecordingProxy } from "../helpers/ext-tasks-client.js";
import { MCP_ACCEPT } from "../helpers/http.js";
import { modernRpc } from "../helpers/modern-http.js";

const waitUntil = <T>(what: string, probe: () => T | undefined): Promise<T> => eventually(probe, what, 10_000);

type TestGateway = Awaited<ReturnType<typeof startGateway>>;

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";

let upstream: SdkUpstream;
let proxy: RecordingProxy;
let gateway: TestGateway;
const logLines: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  // This file is about tracing off, whatever the environment running the tests says.
  for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]) delete process.env[name];
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  proxy = await startRecordingProxy(upstream.url);
  gateway = await startGateway(
    {
      upstream: { url: proxy.url },
      server: { host: "127.0.0.1", port: 0 },
      log: { level: "info", access: true },
      tasks: { rules: [{ tool: "echo", mode: "always" }] },
      metrics: { enabled: false },
    },
    { logger: createLogger("info", (line) => void logLines.push(JSON.parse(line) as Record<string, unknown>)) },
  );
});

afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await upstream?.close();
});

const named = (name: string) => (m: Record<string, unknown>) =>
  (m.params as { name?: string } | undefined)?.name === name;

describe("tracing off: the client's trace context passes through unchanged", () => {
  it("is off", () => {
    expect(tracingOn()).toBe(false);
  });

  it("legacy pass-through: traceparent and tracestate arrive as the client sent them", async () => {
    const res = await fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        traceparent: TRACEPARENT,
        tracestate: TRACESTATE,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "off-test", version: "1.0.0" } },
      }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const seen = await waitUntil("initialize upstream", () =>
      exchangeFor(
        proxy,
        "initialize",
        (m) => (m.params as { clientInfo?: { name?: string } }).clientInfo?.name === "off-test",
      ),
    );
    expect(seen.headers.traceparent).toBe(TRACEPARENT);
    expect(seen.headers.tracestate).toBe(TRACESTATE);
  });

  it("era bridge: a modern client's traceparent reaches the legacy upstream on the pooled session", async () => {
    const reply = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "add", arguments: { a: 2, b: 3 } },
      { headers: { traceparent: TRACEPARENT, tracestate: TRACESTATE } },
    );
    expect(reply.status).toBe(200);
    const seen = await waitUntil("the bridged tools/call", () => exchangeFor(proxy, "tools/call", named("add")));
    expect(seen.headers.traceparent).toBe(TRACEPARENT);
    expect(seen.headers.tracestate).toBe(TRACESTATE);
    // A request without one sends none, even on the same pooled session.
    await modernRpc(gateway.url, "tools/call", { name: "add", arguments: { a: 20, b: 30 } });
    const plain = await waitUntil("the second tools/call", () =>
      exchangeFor(
        proxy,
        "tools/call",
        (m) => named("add")(m) && (m.params as { arguments: { a: number } }).arguments.a === 20,
      ),
    );
    expect(plain.headers.traceparent).toBeUndefined();
    expect(plain.sessionId).toBe(seen.sessionId);
  });

  it("a task's call carries the creating request's traceparent", async () => {
    const reply = await modernRpc(
      gateway.url,
      "tools/call",
      { name: "echo", arguments: { text: "off" } },
      { capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } }, headers: { traceparent: TRACEPARENT } },
    );
    expect((reply.message.result as { resultType?: string }).resultType).toBe("task");
    const seen = await waitUntil("the task's tools/call", () => exchangeFor(proxy, "tools/call", named("echo")));
    expect(seen.headers.traceparent).toBe(TRACEPARENT);
  });

  it("log lines carry no trace ids; the access log still has its line per request", () => {
    expect(logLines.some((l) => "trace_id" in l || "span_id" in l)).toBe(false);
    const access = logLines.filter((l) => l.msg === "access");
    expect(access.length).toBeGreaterThanOrEqual(3);
    for (const line of access) {
      expect(line).toMatchObject({ level: "info", method: "POST", route: "/mcp" });
      expect(typeof line.status).toBe("number");
      expect(typeof line.duration_ms).toBe("number");
    }
    // The pass-through knows its upstream time; nothing in a line has a query string or a header.
    expect(access.some((l) => typeof l.upstream_ms === "number")).toBe(true);
  });
});
