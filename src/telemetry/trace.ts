// Tracing as the rest of the gateway sees it: @opentelemetry/api only, which is a
// no-op until an SDK registers a tracer provider (src/telemetry/sdk.ts, or an
// embedder's own). Every entry point checks `tracingOn()` first, a module-level
// boolean, so with tracing off the hot paths build no span, no attribute object
// and no header copy: that is the "costs nothing" path.
//
// Context propagation is W3C Trace Context (traceparent, tracestate), injected
// into the flat header lists the gateway hands undici: the gateway makes its
// upstream requests itself, so no HTTP instrumentation is involved.
import {
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROMPT_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_RESOURCE_URI,
  ATTR_MCP_SESSION_ID,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  GEN_AI_OPERATION_EXECUTE_TOOL,
} from "./attributes.js";

const TRACER_NAME = "mcp-task-gateway";
const TRACEPARENT = "traceparent";
const TRACESTATE = "tracestate";

let on = false;
let version: string | undefined;
let cachedTracer: Tracer | undefined;

/** True when spans are recorded (an SDK is registered); every span-building path checks this first. */
export function tracingOn(): boolean {
  return on;
}

/** Turns span building on or off (the SDK wiring, or an embedder that registered its own provider). */
export function setTracing(enabled: boolean, tracerVersion?: string): void {
  on = enabled;
  if (tracerVersion !== undefined) version = tracerVersion;
  cachedTracer = undefined;
}

/**
 * Whether a tracer provider other than the API's no-op one is registered. A span from the no-op
 * tracer has an invalid context; any SDK (sampled or not) gives a valid one. The probe span is
 * never ended, so it is never exported.
 */
export function tracerProviderRegistered(): boolean {
  return isSpanContextValid(
    trace.getTracer(TRACER_NAME).startSpan("mcp-task-gateway.probe", { root: true }).spanContext(),
  );
}

export function tracer(): Tracer {
  cachedTracer ??= trace.getTracer(TRACER_NAME, version);
  return cachedTracer;
}

// ---------------------------------------------------------------------------------------------
// W3C Trace Context on flat header lists (name, value, name, value, …)

const propagator = new W3CTraceContextPropagator();

const listSetter = {
  set(carrier: string[], key: string, value: string): void {
    carrier.push(key, value);
  },
};

const listGetter = {
  get(carrier: readonly string[], key: string): string | undefined {
    for (let i = 0; i + 1 < carrier.length; i += 2) {
      if ((carrier[i] as string).toLowerCase() === key) return carrier[i + 1];
    }
    return undefined;
  },
  keys(carrier: readonly string[]): string[] {
    const out: string[] = [];
    for (let i = 0; i < carrier.length; i += 2) out.push((carrier[i] as string).toLowerCase());
    return out;
  },
};

function isTraceHeader(name: string): boolean {
  // Most headers are ruled out by their length, without a lowercased copy.
  if (name.length !== TRACEPARENT.length && name.length !== TRACESTATE.length) return false;
  const n = name.toLowerCase();
  return n === TRACEPARENT || n === TRACESTATE;
}

/**
 * The client's traceparent and tracestate (flat list), as it sent them: what a pooled upstream
 * session's request carries on the client's behalf when tracing is off. Empty when there are none.
 */
export function traceHeaders(raw: readonly string[]): string[] {
  let out: string[] | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (isTraceHeader(name)) (out ??= []).push(name.toLowerCase(), raw[i + 1] as string);
  }
  return out ?? NO_HEADERS;
}

const NO_HEADERS: string[] = [];

/** `headers` without any traceparent/tracestate, with the span context of `ctx` injected instead. */
export function withTraceContext(headers: readonly string[], ctx: Context): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (!isTraceHeader(headers[i] as string)) out.push(headers[i] as string, headers[i + 1] as string);
  }
  propagator.inject(ctx, out, listSetter);
  return out;
}

/** The remote parent in a client's headers (flat list), on top of `base`. */
export function extractTraceContext(headers: readonly string[], base: Context = ROOT_CONTEXT): Context {
  return propagator.extract(base, headers, listGetter);
}

// ---------------------------------------------------------------------------------------------
// Upstream (CLIENT) spans

/** What a JSON-RPC message says for span names and attributes. */
function rpcFacts(message: unknown): { method?: string; id?: string; target?: string; targetKey?: string } {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return {};
  const m = message as Record<string, unknown>;
  const method = typeof m.method === "string" ? m.method : undefined;
  const id = typeof m.id === "string" || typeof m.id === "number" ? String(m.id) : undefined;
  const params = typeof m.params === "object" && m.params !== null ? (m.params as Record<string, unknown>) : undefined;
  if (method === "tools/call" && typeof params?.name === "string")
    return { method, id, target: params.name, targetKey: ATTR_GEN_AI_TOOL_NAME };
  if (method === "prompts/get" && typeof params?.name === "string")
    return { method, id, target: params.name, targetKey: ATTR_GEN_AI_PROMPT_NAME };
  if (method?.startsWith("resources/") && typeof params?.uri === "string")
    return { method, id, target: params.uri, targetKey: ATTR_MCP_RESOURCE_URI };
  return { method, id };
}

/**
 * MCP attributes of a JSON-RPC request (semantic conventions for MCP: mcp.method.name,
 * jsonrpc.request.id, gen_ai.tool.name with gen_ai.operation.name "execute_tool" for tools/call,
 * gen_ai.prompt.name, mcp.resource.uri), and the span name they give: "{mcp.method.name} {target}".
 */
export function rpcAttributes(message: unknown, attrs: Attributes): string | undefined {
  const facts = rpcFacts(message);
  if (facts.method === undefined) return undefined;
  attrs[ATTR_MCP_METHOD_NAME] = facts.method;
  if (facts.id !== undefined) attrs[ATTR_JSONRPC_REQUEST_ID] = facts.id;
  if (facts.method === "tools/call") attrs[ATTR_GEN_AI_OPERATION_NAME] = GEN_AI_OPERATION_EXECUTE_TOOL;
  if (facts.target !== undefined && facts.targetKey !== undefined) attrs[facts.targetKey] = facts.target;
  // The MCP conventions name spans "{method} {target}", target being the tool or prompt name; a resource URI
  // may carry anything, so it stays an attribute only.
  return facts.target !== undefined && facts.targetKey !== ATTR_MCP_RESOURCE_URI
    ? `${facts.method} ${facts.target}`
    : facts.method;
}

/** Session and protocol version from an MCP request's headers (flat list). */
function sessionAttributes(headers: readonly string[], attrs: Attributes): void {
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = (headers[i] as string).toLowerCase();
    if (name === "mcp-session-id") attrs[ATTR_MCP_SESSION_ID] = headers[i + 1];
    else if (name === "mcp-protocol-version") attrs[ATTR_MCP_PROTOCOL_VERSION] = headers[i + 1];
  }
}

export interface UpstreamSpan {
  span: Span;
  /** The request headers with this span's traceparent (and the parent's tracestate) in place of any other. */
  headers: string[];
}

/**
 * A CLIENT span for one upstream HTTP request, child of the active context (the client's
 * request, or a task's span), and the headers that carry it. HTTP client conventions
 * (http.request.method, server.address, server.port, url.full) plus the MCP ones when the
 * JSON-RPC message is known. url.full is the upstream's origin only: hosted MCP URLs carry
 * secrets in their path and query, and neither ever leaves the gateway.
 */
export function startUpstreamSpan(
  method: string,
  origin: URL,
  headers: readonly string[],
  message: unknown,
): UpstreamSpan {
  const attrs: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_SERVER_ADDRESS]: origin.hostname,
    [ATTR_SERVER_PORT]: Number(origin.port) || (origin.protocol === "https:" ? 443 : 80),
    [ATTR_URL_FULL]: origin.origin,
  };
  const name = rpcAttributes(message, attrs) ?? method;
  sessionAttributes(headers, attrs);
  const parent = context.active();
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes: attrs }, parent);
  return { span, headers: withTraceContext(headers, trace.setSpan(parent, span)) };
}

/** The upstream answered: its status (an error status marks the span failed, as the HTTP conventions say). */
export function upstreamAnswered(span: Span, status: number): void {
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  if (status >= 400) {
    span.setAttribute(ATTR_ERROR_TYPE, String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}

/** The request failed before an answer: error.type is the transport's error code (or class name). */
export function spanFailed(span: Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  span.setAttribute(ATTR_ERROR_TYPE, typeof code === "string" ? code : err instanceof Error ? err.name : "_OTHER");
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : undefined });
}

// ---------------------------------------------------------------------------------------------
// Small helpers for other layers

/** The span context of the active span, for a link; undefined when there is none (or tracing is off). */
export function activeSpanContext(): SpanContext | undefined {
  if (!on) return undefined;
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc && isSpanContextValid(sc) ? sc : undefined;
}

export { context, trace, SpanKind, SpanStatusCode, type Attributes, type Context, type Span };
