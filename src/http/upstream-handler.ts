// The MCP endpoint of one upstream: the handler its route (server.path for the single upstream,
// <server.path>/<name> for a named one) runs. A POST is read once, then classified: legacy traffic passes
// through (proxy.ts), modern traffic goes to modern-route.ts (validation, then pass-through or the era bridge).
// Everything here is the upstream's own (its client, era, bridge, sessions, policy); what every upstream
// shares (the engine, identity, forwarder, audit) comes in `shared`.
import type { Context } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import type { LegacyBridge } from "../bridge-to-legacy/bridge.js";
import type { LegacyListens } from "../bridge-to-legacy/listen.js";
import type { ModernTaskFront } from "../modern-upstream/task-front.js";
import { isOriginAllowed } from "../protocol/origin.js";
import type { Logger } from "../log/logger.js";
import type { AuditLog } from "../log/audit.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import { classifyPost } from "../protocol/modern-request.js";
import { methodNotAllowed, originNotAllowed, unknownUpstream } from "../protocol/errors.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { parseJsonRpcBody } from "../protocol/jsonrpc.js";
import { methodClass } from "../metrics/labels.js";
import { faultResponse } from "../web/json-response.js";
import { createModernRoute } from "./modern-route.js";
import { readPost } from "./read-post.js";
import { ReadinessProbe } from "./health.js";
import type { InFlight } from "./inflight.js";
import { nodeEnv, rawRequestHeaders, requestHeader, UPSTREAM_HEADERS_KEY } from "./node-env.js";
import { createProxyHandler } from "./proxy.js";
import { createLegacyTaskRoute } from "./tasks-2025-route.js";
import { createLegacyFrontRoute } from "./bridge-to-modern-route.js";
import { authenticate, unverifiedUpstream, verifiedCaller } from "./request-auth.js";
import { legacyAccess } from "./legacy-access.js";
import type { Callers } from "./identity.js";
import { describeMcpRequest } from "./observe.js";
import type { RequestLabels } from "./metrics-routes.js";
import type { ReplicaForwarder } from "./forward.js";
import type { LivePolicy } from "./policy-set.js";
import type { RateLimiter } from "../ratelimit/limiter.js";
import { limitRequest } from "./rate-limit.js";
import type { SessionRouting } from "./session-routing.js";

/** What every upstream's handler shares. */
export interface SharedHandlerDeps {
  config: GatewayConfig;
  callers: Callers;
  engine: TaskEngine;
  audit: AuditLog;
  forwarder: ReplicaForwarder;
  /** Gateway-held sessions: claimed where they are made, requests on them forwarded to their owner (issue 23). */
  sessions: SessionRouting;
  /** Bound on a forwarded task control's answer (tasks.forwardTimeoutMs). */
  forwardControlMs: number;
  history: LatencyHistory | undefined;
  inflight: InFlight;
  /** Rate limits (limits.rules): one limiter, one budget store, for every route. */
  limiter: RateLimiter;
  log: Logger;
  now: () => number;
}

/** One upstream's own parts (gateway/upstream-route.ts builds them). */
export interface UpstreamHandlerDeps {
  /** Where it is served. */
  path: string;
  upstream: UpstreamClient;
  era: UpstreamEra;
  bridge: LegacyBridge;
  listens: LegacyListens;
  modernTasks: ModernTaskFront;
  /** This upstream's policy: its own rules, then the global ones meant for it; swapped whole on a reload. */
  live: LivePolicy;
  /** upstream.controlTimeoutMs and upstream.headersTimeoutMs (an MRTR retry waits for the call's own answer). */
  controlTimeoutMs: number;
  retryTimeoutMs: number;
  /** upstream.era is modern: legacy sessions are served by the gateway, never passed through. */
  modernOnly: boolean;
}

export interface UpstreamHandler {
  readonly deps: UpstreamHandlerDeps;
  readonly readiness: ReadinessProbe;
  /** `seen`: the labels of the request counter (metrics on), filled in as the request is classified. */
  serve(c: Context, seen?: RequestLabels): Promise<Response>;
  /**
   * The upstream was removed by a reload: from now on only its tasks are served (task methods of the
   * 2026-07-28 surface); anything else answers 404.
   */
  retire(): void;
  readonly retired: boolean;
}

const PROXIED = new Set(["POST", "GET", "DELETE", "OPTIONS"]);

/** Null when the request may go on; otherwise the 403 to send. One function, not middleware: it runs per request on the hot path. */
export function checkOrigin(c: Context, config: GatewayConfig["server"], log: Logger): Response | null {
  const origin = requestHeader(c, nodeEnv(c.env), "origin");
  if (isOriginAllowed(origin, config)) return null;
  log.warn("rejected request from a disallowed origin", { origin });
  return faultResponse(null, originNotAllowed(origin ?? ""));
}

/** Without auth, an upstream whose block says drop gets no Authorization header from the client. */
function dropAuthorization(c: Context, env: ReturnType<typeof nodeEnv>): void {
  const raw = rawRequestHeaders(c, env);
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if ((raw[i] as string).toLowerCase() !== "authorization") out.push(raw[i] as string, raw[i + 1] as string);
  c.set(UPSTREAM_HEADERS_KEY, out);
}

function isTaskRequest(cls: ReturnType<typeof classifyPost>): boolean {
  return "message" in cls && cls.message.kind === "request" && TASK_METHODS.has(cls.message.method);
}

export function createUpstreamHandler(shared: SharedHandlerDeps, own: UpstreamHandlerDeps): UpstreamHandler {
  const { config, log, callers } = shared;
  const { upstream, live } = own;
  let retired = false;
  const readiness = new ReadinessProbe(upstream, config.server.readyTimeoutMs, shared.now);
  const proxy = createProxyHandler({
    upstream,
    inflight: shared.inflight,
    log,
    maxBodyBytes: config.server.maxBodyBytes,
    sseKeepAliveMs: config.server.sseKeepAliveMs,
    now: shared.now,
    refusalReadMs: own.controlTimeoutMs,
  });
  const modern = createModernRoute({
    callers,
    upstream,
    era: own.era,
    bridge: own.bridge,
    listens: own.listens,
    engine: shared.engine,
    live,
    audit: shared.audit,
    modernTasks: own.modernTasks,
    forwarder: shared.forwarder,
    forwardTimeouts: { control: shared.forwardControlMs, retry: own.retryTimeoutMs },
    history: shared.history,
    log,
    passThrough: (c, post, edit) => proxy(c, post, edit),
    inflight: shared.inflight,
  });
  // 2025-11-25 tasks for legacy clients on the pass-through (tasks-2025/); everything else goes to the proxy.
  const legacyTasks = createLegacyTaskRoute({
    callers,
    engine: shared.engine,
    upstream,
    controlTimeoutMs: own.controlTimeoutMs,
    keepAliveMs: config.server.sseKeepAliveMs,
    now: shared.now,
    log,
    history: shared.history,
    proxy: (c, post, edit) => proxy(c, post, edit),
    track: (stop) => shared.inflight.add({ longLived: true, stop }),
    held: shared.sessions.owners,
  });
  // Legacy sessions the gateway serves itself in front of a modern-only upstream (bridge-to-modern/); else on to the above.
  const legacy = createLegacyFrontRoute({
    callers,
    upstream,
    keepAliveMs: config.server.sseKeepAliveMs,
    inputTimeoutMs: config.eraBridge.inputRequestTtlMs,
    idleMs: config.eraBridge.sessionIdleMs,
    maxSessions: config.eraBridge.maxSessions,
    now: shared.now,
    log,
    track: (stop) => shared.inflight.add({ longLived: true, stop }),
    // An upstream configured as modern gets only 2026-07-28 requests, legacy sessions included.
    modernOnly: own.modernOnly,
    held: shared.sessions.owners,
    next: legacyTasks,
  });

  const serve = async (c: Context, seen?: RequestLabels): Promise<Response> => {
    const forbidden = checkOrigin(c, config.server, log);
    if (forbidden) return forbidden;
    if (!PROXIED.has(c.req.method)) return faultResponse(null, methodNotAllowed("GET, POST, DELETE, OPTIONS"));
    const env = nodeEnv(c.env);
    const set = live.current;
    // auth.jwt: every method on the MCP endpoint needs a verified token (a CORS preflight carries none).
    if (set.auth && c.req.method !== "OPTIONS") {
      const refused = await authenticate(c, env, set.auth, log);
      if (refused) return refused;
    } else if (set.auth) unverifiedUpstream(c, env, set.auth);
    else if (set.dropAuthorization) dropAuthorization(c, env);
    if (retired && c.req.method !== "POST") return faultResponse(null, unknownUpstream(own.path, true));
    // auth.jwt with the token dropped: the upstream cannot tell callers apart, so the gateway binds each session
    // id to the verified caller of its first request (in the shared store), and refuses it to anyone else.
    const bindTo =
      set.auth?.upstreamCredentials === "drop" && c.req.method !== "OPTIONS"
        ? () => callers.of(c, env, set)
        : undefined;
    if (c.req.method !== "POST") {
      const routed = shared.sessions.route(c, env, undefined, bindTo);
      return (routed && (await routed)) ?? legacy.other(c, env, set) ?? proxy(c);
    }
    const post = await readPost(c, env, config.server.maxBodyBytes, log);
    if (post instanceof Response) return post;
    // A session another process holds: its owner serves it (the body read above is bounded; the answer streams).
    const routed = shared.sessions.route(c, env, post, bindTo);
    if (routed) {
      const forwarded = await routed;
      if (forwarded) return forwarded;
    }
    if (post.parsed) {
      describeMcpRequest(c, env, post.parsed.message);
      const cls = classifyPost(post.parsed.message, (name) => requestHeader(c, env, name), TASK_METHODS);
      if (seen) {
        seen.era = cls.era;
        seen.method = methodClass(post.parsed.message);
      }
      // A retired upstream's route serves only its tasks; checked only then, off the common path.
      if (cls.era === "modern" && (!retired || isTaskRequest(cls))) {
        // Rate limits first: a limited request is answered before access rules, tasks or the upstream see it.
        if ("message" in cls && !set.limits.empty) {
          const checked = limitRequest(shared, c, env, set, upstream.name, post.parsed.message);
          const limited = checked instanceof Promise ? await checked : checked;
          if (limited) return limited;
        }
        return modern(c, env, cls, post, set);
      }
    }
    if (retired) return faultResponse(post.parsed?.id ?? null, unknownUpstream(own.path, true));
    if (set.access.unrestricted && set.limits.empty) return legacy.post(c, env, set, post, undefined);
    // Under access rules and rate limits a body is checked even when its content type is not JSON: an upstream
    // that reads it anyway must not get a denied call. A body that is not JSON at all is the upstream's to refuse.
    const lenient = post.parsed ? undefined : parseJsonRpcBody(post.body);
    const parsed = post.parsed ?? (lenient?.ok ? lenient : undefined);
    if (!parsed) return proxy(c, post);
    if (!set.limits.empty) {
      const checked = limitRequest(shared, c, env, set, upstream.name, parsed.message);
      const limited = checked instanceof Promise ? await checked : checked;
      if (limited) return limited;
    }
    if (set.access.unrestricted) return legacy.post(c, env, set, post, undefined);
    // Legacy traffic under access rules: a denied call never reaches the upstream, and tools/list is filtered.
    const verdict = legacyAccess(parsed, set.access, verifiedCaller(c)?.claims);
    if (verdict.kind === "deny") {
      shared.audit.accessDenied(
        { subject: callers.subject(c, env, set), caller: callers.of(c, env, set) },
        verdict.tool,
      );
      return faultResponse(parsed.id, verdict.fault);
    }
    // The answer edited is the one to this request's id, also when the body was read leniently.
    return legacy.post(c, env, set, { body: post.body, parsed }, verdict.kind === "filter" ? verdict.edit : undefined);
  };

  return {
    deps: own,
    readiness,
    serve,
    retire() {
      retired = true;
    },
    get retired() {
      return retired;
    },
  };
}
