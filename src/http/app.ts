// The Hono app: health routes, Origin validation and the MCP endpoint.
// The Origin check runs inside the one MCP route handler. A POST is read once,
// then classified: legacy traffic passes through (proxy.ts), modern traffic goes
// to modern-route.ts (validation, then pass-through or the era bridge).
import { singleUpstream } from "../config/upstream-set.js";
import { Hono, type Context } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import { isOriginAllowed } from "../protocol/origin.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import { classifyPost } from "../protocol/modern-request.js";
import { internalError, methodNotAllowed, originNotAllowed } from "../protocol/errors.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { faultResponse } from "../web/json-response.js";
import { parseJsonRpcBody } from "../protocol/jsonrpc.js";
import { createModernRoute, type ModernRouteDeps } from "./modern-route.js";
import { readPost } from "./read-post.js";
import { taskPollListener, type NodeListener, type TaskPollDeps } from "./task-poll-path.js";
import { ReadinessProbe, StoreProbe } from "./health.js";
import type { InFlight } from "./inflight.js";
import { nodeEnv, requestHeader } from "./node-env.js";
import { createProxyHandler } from "./proxy.js";
import { createLegacyTaskRoute } from "./tasks-2025-route.js";
import { createLegacyFrontRoute } from "./bridge-to-modern-route.js";
import { authenticate, unverifiedUpstream, verifiedCaller } from "./request-auth.js";
import { legacyAccess } from "./legacy-access.js";
import { Callers } from "./identity.js";
import { resourceMetadataPaths } from "../auth/challenge.js";
import { tracingOn } from "../telemetry/trace.js";
import { describeMcpRequest, observeRequests } from "./observe.js";
import { methodClass } from "../metrics/labels.js";
import { countRequests, registerMetricsRoutes, type MetricsRouteDeps, type RequestLabels } from "./metrics-routes.js";

export interface AppDeps extends Pick<
  ModernRouteDeps,
  "bridge" | "listens" | "engine" | "live" | "audit" | "modernTasks" | "forwarder" | "forwardTimeouts" | "history"
> {
  /** A shared task store's health, reported by /readyz; undefined for the memory store. */
  storeReady: (() => Promise<void>) | undefined;
  config: GatewayConfig;
  upstream: UpstreamClient;
  inflight: InFlight;
  era: UpstreamEra;
  log: Logger;
  now: () => number;
  /** Metrics on (metrics.enabled): requests are counted; `routes`: /metrics and /status are served here (no metrics.port). */
  metrics?: (MetricsRouteDeps & { routes: boolean }) | undefined;
}

const PROXIED = new Set(["POST", "GET", "DELETE", "OPTIONS"]);

/** Null when the request may go on; otherwise the 403 to send. One function, not middleware: it runs per request on the hot path. */
function checkOrigin(c: Context, config: GatewayConfig["server"], log: Logger): Response | null {
  const origin = requestHeader(c, nodeEnv(c.env), "origin");
  if (isOriginAllowed(origin, config)) return null;
  log.warn("rejected request from a disallowed origin", { origin });
  return faultResponse(null, originNotAllowed(origin ?? ""));
}

/** The MCP app, and the Node listener to serve it with: the lean tasks/get path (when it applies) in front of it. */
export interface GatewayApp {
  app: Hono;
  /** Wraps @hono/node-server's listener for `app`; returns it as it is when the lean path is off. */
  nodeListener(honoListener: NodeListener): NodeListener;
}

export function createApp(deps: AppDeps): GatewayApp {
  const { config, upstream, log } = deps;
  const app = new Hono();
  // Anything thrown that no layer turned into an answer (a store that rejects, a bug) is still a JSON-RPC
  // error with a 500, never Hono's plain-text page; the cause goes to the log, not to the client.
  app.onError((err, c) => {
    log.error("unhandled error", { method: c.req.method, cause: err.message });
    return faultResponse(null, internalError(`${c.req.method} ${c.req.path}`));
  });
  // Server spans (tracing on) and the access log (log.access); nothing at all when both are off.
  const observe = observeRequests({
    tracing: tracingOn(),
    access: config.log.access ? log : undefined,
    // The app's own paths (read at the first request, once every route is registered); "*" is middleware.
    routes: () => new Set(app.routes.map((r) => r.path).filter((p) => p !== "*")),
  });
  if (observe) app.use("*", observe);
  const readiness = new ReadinessProbe(upstream, config.server.readyTimeoutMs, deps.now);
  const proxy = createProxyHandler({
    upstream,
    inflight: deps.inflight,
    log,
    maxBodyBytes: config.server.maxBodyBytes,
    sseKeepAliveMs: config.server.sseKeepAliveMs,
    now: deps.now,
  });

  app.get("/healthz", (c) => c.json({ status: "ok" }));
  const storeProbe = deps.storeReady
    ? new StoreProbe(deps.storeReady, config.server.readyTimeoutMs, deps.now)
    : undefined;
  app.get("/readyz", async (c) => {
    const [probe, store] = await Promise.all([readiness.check(), storeProbe?.check()]);
    // A shared store that is down degrades tasks only: pass-through and plain calls still work, so the
    // replica stays in rotation (200) and says what is missing.
    // Keys that cannot be fetched refuse every request with 503 (never a pass): said here too, as degraded,
    // because every replica shares the identity provider and taking this one out of rotation would not help.
    const authFailure = deps.live.current.auth?.verifier.keysUnavailable();
    const body = {
      status: !probe.reachable
        ? "unavailable"
        : (store && !store.ok) || authFailure !== undefined
          ? "degraded"
          : "ready",
      upstream: upstream.displayUrl,
      ...(probe.status !== undefined && { upstreamStatus: probe.status }),
      ...(probe.cause !== undefined && { cause: probe.cause }),
      // The store's error text (addresses) stays in the log: /readyz answers anyone.
      ...(store && { store: store.ok ? "ready" : "unavailable" }),
      ...(deps.live.current.auth && { auth: authFailure === undefined ? "ready" : "unavailable" }),
    };
    if (store && !store.ok) log.warn("readiness: task store unavailable", { cause: store.cause ?? "" });
    return c.json(body, probe.reachable ? 200 : 503);
  });

  // One identity resolver (and digest cache) for every route.
  const callers = new Callers();
  const modern = createModernRoute({
    callers,
    upstream,
    era: deps.era,
    bridge: deps.bridge,
    listens: deps.listens,
    engine: deps.engine,
    live: deps.live,
    audit: deps.audit,
    modernTasks: deps.modernTasks,
    forwarder: deps.forwarder,
    forwardTimeouts: deps.forwardTimeouts,
    history: deps.history,
    log,
    passThrough: (c, post, edit) => proxy(c, post, edit),
    inflight: deps.inflight,
  });

  // RFC 9728: where clients learn which authorization server issues tokens for this endpoint. Public, like
  // the challenge that points to it; served while auth.resourceMetadata is configured (it may come and go on a reload).
  for (const path of resourceMetadataPaths(config.server.path, config.auth?.resourceMetadata?.resource)) {
    app.get(path, (c) => {
      const document = deps.live.current.auth?.metadata;
      return document ? c.json(document, 200, { "cache-control": "max-age=300" }) : c.notFound();
    });
  }

  // 2025-11-25 tasks for legacy clients on the pass-through (tasks-2025/); everything else goes to the proxy.
  const legacyTasks = createLegacyTaskRoute({
    callers,
    engine: deps.engine,
    upstream,
    controlTimeoutMs: singleUpstream(config).controlTimeoutMs,
    keepAliveMs: config.server.sseKeepAliveMs,
    now: deps.now,
    log,
    proxy: (c, post, edit) => proxy(c, post, edit),
    track: (stop) => deps.inflight.add({ longLived: true, stop }),
  });
  // Legacy sessions the gateway serves itself in front of a modern-only upstream (bridge-to-modern/); else on to the above.
  const legacy = createLegacyFrontRoute({
    callers,
    upstream,
    keepAliveMs: config.server.sseKeepAliveMs,
    inputTimeoutMs: config.eraBridge.inputRequestTtlMs,
    idleMs: config.eraBridge.sessionIdleMs,
    maxSessions: config.eraBridge.maxSessions,
    now: deps.now,
    log,
    track: (stop) => deps.inflight.add({ longLived: true, stop }),
    // An upstream configured as modern gets only 2026-07-28 requests, legacy sessions included.
    modernOnly: singleUpstream(config).era === "modern",
    next: legacyTasks,
  });

  // `seen`: the labels of the request counter (metrics on), filled in as the request is classified.
  const mcp = async (c: Context, seen?: RequestLabels): Promise<Response> => {
    const forbidden = checkOrigin(c, config.server, log);
    if (forbidden) return forbidden;
    if (!PROXIED.has(c.req.method)) return faultResponse(null, methodNotAllowed("GET, POST, DELETE, OPTIONS"));
    const env = nodeEnv(c.env);
    const set = deps.live.current;
    // auth.jwt: every method on the MCP endpoint needs a verified token (a CORS preflight carries none).
    if (set.auth && c.req.method !== "OPTIONS") {
      const refused = await authenticate(c, env, set.auth, log);
      if (refused) return refused;
    } else if (set.auth) unverifiedUpstream(c, env, set.auth);
    if (c.req.method !== "POST") return legacy.other(c, env, set) ?? proxy(c);
    const post = await readPost(c, env, config.server.maxBodyBytes, log);
    if (post instanceof Response) return post;
    if (post.parsed) {
      describeMcpRequest(c, env, post.parsed.message);
      const cls = classifyPost(post.parsed.message, (name) => requestHeader(c, env, name), TASK_METHODS);
      if (seen) {
        seen.era = cls.era;
        seen.method = methodClass(post.parsed.message);
      }
      if (cls.era === "modern") return modern(c, env, cls, post, set);
    }
    if (set.access.unrestricted) return legacy.post(c, env, set, post, undefined);
    // Under access rules a body is checked even when its content type is not JSON: an upstream that reads it
    // anyway must not get a denied call. A body that is not JSON at all is the upstream's to refuse.
    const lenient = post.parsed ? undefined : parseJsonRpcBody(post.body);
    const parsed = post.parsed ?? (lenient?.ok ? lenient : undefined);
    if (!parsed) return proxy(c, post);
    // Legacy traffic under access rules: a denied call never reaches the upstream, and tools/list is filtered.
    const verdict = legacyAccess(parsed, set.access, verifiedCaller(c)?.claims);
    if (verdict.kind === "deny") {
      deps.audit.accessDenied({ subject: callers.subject(c, env, set), caller: callers.of(c, env, set) }, verdict.tool);
      return faultResponse(parsed.id, verdict.fault);
    }
    // The answer edited is the one to this request's id, also when the body was read leniently.
    return legacy.post(c, env, set, { body: post.body, parsed }, verdict.kind === "filter" ? verdict.edit : undefined);
  };
  const { metrics } = deps;
  app.all(config.server.path, metrics ? countRequests(metrics.metrics, "mcp", mcp) : (c) => mcp(c));
  if (metrics?.routes) registerMetricsRoutes(app, metrics);
  // Tracing and the access log observe every request through Hono's middleware: with either on, polls take the full route.
  const lean = !observe;
  const pollDeps: TaskPollDeps = {
    server: config.server,
    live: deps.live,
    callers,
    engine: deps.engine,
    count: metrics && ((era, method, status) => metrics.metrics.request("mcp", era, method, status)),
  };
  return { app, nodeListener: (next) => (lean ? taskPollListener(pollDeps, next) : next) };
}
