// The MCP endpoint of one upstream: the pipeline its route (server.path for the single upstream,
// <server.path>/<name> for a named one) runs, and the handler at its end. Legacy traffic passes through
// (http/proxy.ts) or goes to the gateway's own legacy sessions; modern traffic goes to modern-route.ts
// (validation, then pass-through or the era bridge).
// Everything here is the upstream's own (its client, era, bridge, sessions, policy); what every upstream
// shares (the engine, identity, forwarder, audit) comes in `shared`.
import type { GatewayConfig } from "../config/schema.js";
import type { LegacyBridge } from "../bridge-to-legacy/bridge.js";
import type { LegacyListens } from "../bridge-to-legacy/listen.js";
import type { ModernTaskFront } from "../modern-upstream/task-front.js";
import type { Logger } from "../log/logger.js";
import type { AuditLog } from "../log/audit.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import { unknownUpstream, upstreamCredentialsRejected } from "../protocol/errors.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import type { Classification } from "../protocol/modern-request.js";
import { faultResponse } from "../web/json-response.js";
import type { Callers } from "../policy/sets/identity.js";
import type { LivePolicy } from "../policy/sets/policy-set.js";
import type { RateLimiter } from "../ratelimit/limiter.js";
import { ReadinessProbe } from "../server/health.js";
import { callerOf } from "../server/identify.js";
import type { Exchange } from "../server/exchange.js";
import { pipeline, step, type Handler } from "../server/pipeline.js";
import { RESPONSE_ALREADY_SENT } from "../server/node-server.js";
import {
  authenticateStep,
  bodyStep,
  classifyStep,
  methodStep,
  originStep,
  policyStep,
  upstreamViewStep,
} from "../server/steps.js";
import type { InFlight } from "../http/inflight.js";
import { createProxyHandler } from "../http/proxy.js";
import type { ReplicaForwarder } from "../replicas/forward.js";
import type { SessionRouting } from "../replicas/session-routing.js";
import { bindingIssued, forwardStep, sessionStep } from "../replicas/session-steps.js";
import { createModernRoute } from "./modern-route.js";
import { createLegacyTaskRoute } from "./tasks-2025-route.js";
import { createLegacyFrontRoute } from "./bridge-to-modern-route.js";
import { accessStep, limitStep, parsedUnderPolicyStep } from "../server/policy-steps.js";
import { credentialStep } from "../server/credential-step.js";
import type { CredentialSource } from "../credentials/source.js";
import { catalogStep } from "../server/catalog-step.js";
import type { CatalogObserver } from "../catalog/observer.js";
import { pinningStep } from "../server/pinning-step.js";
import type { PinRegistry } from "../catalog/pin-registry.js";
import { createToolLister } from "./tool-listing.js";

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
  /** Metrics: the catalog's refusals and warnings (catalog/observer.ts); undefined with metrics off. */
  catalogObserver?: CatalogObserver | undefined;
  /** The app, for the tools/list the catalog makes on a caller's behalf (server/catalog-step.ts). */
  catalogDispatch?: ((request: Request) => Promise<Response>) | undefined;
  /** Pinned definitions (upstreams.<name>.pinning): one registry for every route. */
  pins: PinRegistry;
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
  /** upstreams.<name>.oauth: the credentials this upstream gets per caller; undefined without an oauth block. */
  credentials?: CredentialSource | undefined;
}

export interface UpstreamHandler {
  readonly deps: UpstreamHandlerDeps;
  readonly readiness: ReadinessProbe;
  serve(ex: Exchange): Promise<Response> | Response;
  /**
   * The upstream was removed by a reload: from now on only its tasks are served (task methods of the
   * 2026-07-28 surface); anything else answers 404.
   */
  retire(): void;
  readonly retired: boolean;
}

const PROXIED = new Set(["POST", "GET", "DELETE", "OPTIONS"]);

function isTaskRequest(cls: Classification): boolean {
  return "message" in cls && cls.message.kind === "request" && TASK_METHODS.has(cls.message.method);
}

/**
 * With upstreams.<name>.oauth, an upstream that refuses the token it was given (401) gets one fresh token and the
 * request once more; then the client gets a clear error, never the upstream's own challenge (it names a server
 * the client has no business with). The pass-through retries by itself (http/proxy.ts); this covers what the
 * gateway answers from its own upstream requests (the era bridge's sessions), which fail before anything is sent.
 */
function renewingOn401(handle: Handler, upstream: string): Handler {
  return async (ex) => {
    const res = await handle(ex);
    const renew = ex.renewCredential;
    if (!renew || res === RESPONSE_ALREADY_SENT || res.status !== 401) return res;
    ex.renewCredential = undefined;
    await res.body?.cancel();
    if (await renew()) {
      const again = await handle(ex);
      if (again === RESPONSE_ALREADY_SENT || again.status !== 401) return again;
      await again.body?.cancel();
    }
    return faultResponse(ex.post?.parsed?.id ?? null, upstreamCredentialsRejected(upstream));
  };
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
    // A stdio upstream shares its processes out per caller: an initialize (which opens one) says whose it is.
    caller: (ex) => (ex.set && ex.post?.parsed?.method === "initialize" ? callerOf(callers, ex) : undefined),
  });
  const modern = createModernRoute({
    callers,
    upstream,
    era: own.era,
    bridge: own.bridge,
    listens: own.listens,
    engine: shared.engine,
    modernTasks: own.modernTasks,
    forwarder: shared.forwarder,
    forwardTimeouts: { control: shared.forwardControlMs, retry: own.retryTimeoutMs },
    history: shared.history,
    log,
    passThrough: (ex, edit) => proxy(ex, edit),
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
    proxy: (ex, edit) => proxy(ex, edit),
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

  /** The end of the pipeline: the request has passed every check. */
  const handle = (ex: Exchange): Promise<Response> | Response => {
    if (ex.method !== "POST") return legacy.other(ex) ?? proxy(ex);
    const cls = ex.cls;
    if (cls?.era === "modern") return modern(ex, cls);
    return legacy.post(ex, ex.answerEdit);
  };

  const serve = pipeline(
    [
      originStep(config.server, log),
      methodStep(PROXIED, "GET, POST, DELETE, OPTIONS"),
      policyStep(live),
      authenticateStep((ex) => ex.set?.auth, log),
      upstreamViewStep((ex) => ex.set?.auth),
      // A retired upstream's route serves only its tasks: no session traffic.
      step("route", (ex) =>
        retired && ex.method !== "POST" ? faultResponse(null, unknownUpstream(own.path, true)) : undefined,
      ),
      bodyStep(config.server.maxBodyBytes, log),
      parsedUnderPolicyStep(),
      // The session must be the verified caller's; one another process holds is noted, and forwarded below.
      sessionStep(shared.sessions, callers, log),
      classifyStep(),
      // A retired upstream's route serves only its tasks (checked only then, off the common path).
      step("retired", (ex) =>
        retired && !(ex.cls?.era === "modern" && isTaskRequest(ex.cls))
          ? faultResponse(ex.post?.parsed?.id ?? null, unknownUpstream(own.path, true))
          : undefined,
      ),
      // The catalog (tools, prompts, validateArguments): the request as the upstream is to get it, before the rules.
      catalogStep(shared, upstream.name, own.path, own.controlTimeoutMs),
      limitStep(shared, upstream.name),
      accessStep(shared, upstream.name),
      // The upstream's own definitions checked against their pins, before anything reaches the upstream.
      pinningStep(
        shared,
        upstream.name,
        createToolLister({
          callers,
          upstream,
          era: own.era,
          bridge: own.bridge,
          controlTimeoutMs: own.controlTimeoutMs,
        }),
      ),
      // Decided here, then forwarded: the owner gets the verdict with a credential bound to this request.
      forwardStep(shared.sessions),
      // Last: a request any check refused costs no token; a forwarded one gets its token where it is served.
      credentialStep({
        upstream: upstream.name,
        source: () => own.credentials,
        callers,
        publicUrl: config.server.publicUrl,
        log,
      }),
    ],
    bindingIssued(renewingOn401(handle, upstream.name)),
  );

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
