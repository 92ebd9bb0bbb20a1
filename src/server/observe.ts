// Per-request observation, installed only when it is on: the SERVER span of each
// client request (tracing on), and the access log line (log.access). With both
// off, createApp installs nothing and requests pay nothing.
//
// The span's parent is the client's traceparent/tracestate (W3C Trace Context);
// the rest of the request runs in the span's context, so upstream requests are
// its children and log lines carry its trace_id/span_id. It ends when the
// response does (Node: the ServerResponse closes, streams included).
import { isMemberRequest } from "./member-request.js";
import type { ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../log/logger.js";
import {
  context,
  extractTraceContext,
  rpcAttributes,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingOn,
  type Attributes,
  type Span,
} from "../telemetry/trace.js";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_PORT,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from "../telemetry/attributes.js";
import { Exchange, type Observed } from "./exchange.js";

/**
 * A federated endpoint names the member its request went to: the access line, the server span and the request
 * counter's `upstream` label carry it.
 */
export function observeUpstream(ex: Exchange, name: string): void {
  if (ex.seen) ex.seen.upstream = name;
  const observed = ex.observed;
  if (!observed) return;
  observed.upstream = name;
  trace.getSpan(context.active())?.setAttribute(ATTR_GATEWAY_UPSTREAM, name);
}

export interface ObserveOptions {
  /** Server spans (tracing on). */
  tracing: boolean;
  /** The access log's logger (log.access), or undefined. */
  access: Logger | undefined;
  /** The app's own paths: anything else is logged as "(unmatched)", so a path never carries a secret into the log. */
  routes: () => ReadonlySet<string>;
  /** The configured name of the upstream served at a path (its route), or undefined: named in spans and log lines. */
  upstreamAt: (path: string) => string | undefined;
}

/** The span attribute naming the upstream a request was for (its configured name). */
const ATTR_GATEWAY_UPSTREAM = "mcp_gateway.upstream";

const round = (ms: number): number => Math.round(ms * 100) / 100;

function pathOf(url: string | undefined): string {
  const raw = url ?? "/";
  const q = raw.indexOf("?");
  return q === -1 ? raw : raw.slice(0, q);
}

/** Counts the body bytes written to a Node response (access log only). */
function countBytes(outgoing: ServerResponse): () => number {
  let bytes = 0;
  const size = (chunk: unknown, encoding?: unknown): number =>
    typeof chunk === "string"
      ? Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
      : chunk instanceof Uint8Array
        ? chunk.byteLength
        : 0;
  const write = outgoing.write;
  const end = outgoing.end;
  outgoing.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    bytes += size(chunk, rest[0]);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof outgoing.write;
  outgoing.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== "function") bytes += size(chunk, rest[0]);
    return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
  } as typeof outgoing.end;
  return () => bytes;
}

function serverSpan(
  ex: Exchange,
  method: string,
  route: string | undefined,
  path: string,
  upstream: string | undefined,
): { span: Span; ctx: ReturnType<typeof context.active> } {
  const parent = extractTraceContext(ex.clientHeaders(), context.active());
  const env = ex.node;
  const attrs: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_URL_PATH]: route ?? path,
    [ATTR_URL_SCHEME]: ex.scheme(),
  };
  if (route !== undefined) attrs[ATTR_HTTP_ROUTE] = route;
  if (upstream !== undefined) attrs[ATTR_GATEWAY_UPSTREAM] = upstream;
  const agent = ex.header("user-agent");
  if (agent !== undefined) attrs[ATTR_USER_AGENT_ORIGINAL] = agent;
  if (env) {
    if (env.incoming.socket.remoteAddress !== undefined) attrs[ATTR_CLIENT_ADDRESS] = env.incoming.socket.remoteAddress;
    if (env.incoming.socket.localPort !== undefined) attrs[ATTR_SERVER_PORT] = env.incoming.socket.localPort;
    attrs[ATTR_NETWORK_PROTOCOL_VERSION] = env.incoming.httpVersion;
  }
  // HTTP server conventions: "{method} {http.route}" (the route, never the raw path, names the span).
  const span = tracer().startSpan(
    route === undefined ? method : `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: attrs },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/** The middleware, or undefined when neither tracing nor the access log is on. */
export function observeRequests(opts: ObserveOptions): MiddlewareHandler | undefined {
  if (!opts.tracing && !opts.access) return undefined;
  let routes: ReadonlySet<string> | undefined;
  return async (c, next) => {
    // A federated endpoint's request to a member is part of the client's request, observed once, on the endpoint.
    if (isMemberRequest(c.env)) return next();
    const ex = Exchange.of(c);
    const env = ex.node;
    const started = performance.now();
    const method = ex.method;
    const path = env ? pathOf(env.incoming.url) : ex.path;
    routes ??= opts.routes();
    // An upstream's route is a path of the config, never a client's: a named upstream's path is logged as it is.
    const upstream = opts.upstreamAt(path);
    const route = routes.has(path) || upstream !== undefined ? path : undefined;
    const observed: Observed = { upstreamMs: undefined };
    ex.observed = observed;
    ex.keepOn(c);
    const traced = opts.tracing ? serverSpan(ex, method, route, path, upstream) : undefined;
    const bytesOf = env && opts.access ? countBytes(env.outgoing) : undefined;
    let finished = false;
    const finish = (status: number, bytes: number | undefined, aborted: boolean): void => {
      if (finished) return;
      finished = true;
      if (traced) {
        traced.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
        // Server spans: only 5xx are the server's errors (HTTP semantic conventions).
        if (status >= 500) {
          traced.span.setAttribute(ATTR_ERROR_TYPE, String(status));
          traced.span.setStatus({ code: SpanStatusCode.ERROR });
        }
        traced.span.end();
      }
      if (opts.access) {
        const line = {
          method,
          route: route ?? "(unmatched)",
          ...((observed.upstream ?? upstream) !== undefined && { upstream: observed.upstream ?? upstream }),
          status,
          duration_ms: round(performance.now() - started),
          ...(bytes !== undefined && { bytes }),
          ...(observed.upstreamMs !== undefined && { upstream_ms: round(observed.upstreamMs) }),
          ...(aborted && { aborted: true }),
        };
        const log = opts.access;
        if (traced) context.with(traced.ctx, () => log.info("access", line));
        else log.info("access", line);
      }
    };
    if (env) {
      const out = env.outgoing;
      out.once("close", () => finish(out.statusCode, bytesOf?.(), !out.writableFinished));
    }
    await (traced ? context.with(traced.ctx, next) : next());
    if (!env) {
      const length = c.res.headers.get("content-length");
      finish(c.res.status, length === null ? undefined : Number(length), false);
    }
  };
}

/**
 * The MCP side of the request's span, once its JSON-RPC message is known (tracing on): the MCP
 * semantic conventions' mcp.method.name, jsonrpc.request.id, gen_ai.tool.name / gen_ai.operation.name,
 * mcp.session.id, mcp.protocol.version, and the span name "{mcp.method.name} {target}".
 */
export function describeMcpRequest(ex: Exchange, message: unknown): void {
  if (!tracingOn()) return;
  const span = trace.getSpan(context.active());
  if (!span?.isRecording()) return;
  const attrs: Attributes = {};
  const name = rpcAttributes(message, attrs);
  if (name === undefined) return;
  const session = ex.header("mcp-session-id");
  if (session !== undefined) attrs[ATTR_MCP_SESSION_ID] = session;
  const version = ex.header("mcp-protocol-version");
  if (version !== undefined) attrs[ATTR_MCP_PROTOCOL_VERSION] = version;
  span.setAttributes(attrs);
  span.updateName(name);
}
