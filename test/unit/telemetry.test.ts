import { describe, expect, it } from "vitest";
import { ROOT_CONTEXT, trace, type Attributes } from "@opentelemetry/api";
import {
  extractTraceContext,
  rpcAttributes,
  traceHeaders,
  tracingOn,
  withTraceContext,
} from "../../src/telemetry/trace.js";
import { tracingTarget } from "../../src/telemetry/tracing-target.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe("W3C trace context on flat header lists", () => {
  it("traceHeaders keeps the client's traceparent and tracestate (lowercased names), nothing else", () => {
    expect(
      traceHeaders([
        "Content-Type",
        "application/json",
        "TraceParent",
        TRACEPARENT,
        "tracestate",
        "a=b",
        "authorization",
        "Bearer x",
      ]),
    ).toEqual(["traceparent", TRACEPARENT, "tracestate", "a=b"]);
    expect(traceHeaders(["accept", "*/*"])).toEqual([]);
  });

  it("withTraceContext replaces the client's context with the given span's, keeping every other header", () => {
    const other = "00-11111111111111111111111111111111-2222222222222222-01";
    const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 });
    const out = withTraceContext(["accept", "*/*", "traceparent", other, "TraceState", "old=1"], ctx);
    expect(out).toEqual(["accept", "*/*", "traceparent", TRACEPARENT]);
  });

  it("extractTraceContext reads a remote parent from a header list", () => {
    const sc = trace.getSpanContext(extractTraceContext(["traceparent", TRACEPARENT, "tracestate", "k=v"]));
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true });
    expect(sc?.traceState?.get("k")).toBe("v");
    expect(trace.getSpanContext(extractTraceContext(["traceparent", "garbage"]))).toBeUndefined();
  });
});

describe("MCP attributes (semantic conventions for MCP and GenAI tool calls)", () => {
  it("names a tools/call span by its tool and sets the execute_tool operation", () => {
    const attrs: Attributes = {};
    expect(rpcAttributes({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_weather" } }, attrs)).toBe(
      "tools/call get_weather",
    );
    expect(attrs).toEqual({
      "mcp.method.name": "tools/call",
      "jsonrpc.request.id": "7",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "get_weather",
    });
  });

  it("keeps a resource URI out of the span name", () => {
    const attrs: Attributes = {};
    expect(
      rpcAttributes(
        { jsonrpc: "2.0", id: "r", method: "resources/read", params: { uri: "file:///secret/path" } },
        attrs,
      ),
    ).toBe("resources/read");
    expect(attrs["mcp.resource.uri"]).toBe("file:///secret/path");
  });

  it("has nothing to say about a body that is not a JSON-RPC message", () => {
    const attrs: Attributes = {};
    expect(rpcAttributes([{ method: "x" }], attrs)).toBeUndefined();
    expect(rpcAttributes(undefined, attrs)).toBeUndefined();
    expect(attrs).toEqual({});
  });
});

describe("when tracing is on", () => {
  it("is off without an SDK", () => {
    expect(tracingOn()).toBe(false);
  });

  it("follows telemetry.endpoint first, then the OTEL_* environment", () => {
    expect(tracingTarget({ endpoint: "http://collector:4318/" }, {})).toEqual({
      url: "http://collector:4318/v1/traces",
    });
    expect(tracingTarget({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ url: undefined });
    expect(tracingTarget({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toEqual({
      url: undefined,
    });
    expect(
      tracingTarget({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }),
    ).toBeUndefined();
    expect(
      tracingTarget({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }),
    ).toBeUndefined();
    expect(tracingTarget({}, {})).toBeUndefined();
  });
});
