// Public API. `createGateway` builds the web-standard handler (usable with any
// runtime's server); `startGateway` also listens with @hono/node-server, which
// enables the zero-copy Node streaming path, and owns graceful shutdown.
//
// Both read as a list of steps; each step is a function of src/gateway/ (the composition root), named for what
// it builds. The task state, engine, latency history, metrics, policy and replica forwarder are the gateway's;
// everything per upstream is one UpstreamRoute (gateway/upstream-route.ts).
import { adaptiveTools } from "./gateway/adaptive-state.js";
import { MEMBER_REQUEST_ENV } from "./server/member-request.js";
import type { Server } from "node:http";
import type { Hono } from "hono";
import type { GatewayConfig, GatewayConfigInput } from "./config/schema.js";
import { validConfig } from "./config/validate.js";
import { upstreamEntries } from "./config/upstream-set.js";
import type { NodeListener } from "./endpoints/task-poll.js";
import { InFlight } from "./http/inflight.js";
import { createLogger } from "./log/logger.js";
import type { ReloadPlan } from "./reload.js";
import { gatewayApp } from "./gateway/app.js";
import { closeOnce, undoStart } from "./gateway/close.js";
import { replicaForwarder } from "./gateway/forwarder.js";
import { hearHandoffs } from "./gateway/handoffs.js";
import { latencyHistory } from "./gateway/latency-history.js";
import { createListeners, listenAll } from "./gateway/listeners.js";
import { internalSocketPath } from "./gateway/internal-socket.js";
import { readInternalTls } from "./gateway/internal-tls.js";
import { liveConfig, reloadLive } from "./gateway/live-config.js";
import { ReloadHistory } from "./gateway/reload-history.js";
import { gatewayMetrics, metricsSources } from "./gateway/metrics.js";
import { metricsRoutes } from "./gateway/metrics-routes.js";
import type { GatewayOptions } from "./gateway/options.js";
import type { GatewayParts } from "./gateway/parts.js";
import { gatewaySettings } from "./gateway/settings.js";
import { closeUnusedSharedTasks, connectSharedTasks, taskState } from "./gateway/shared-state.js";
import { gatewayShutdown } from "./gateway/shutdown.js";
import { gatewayStats, type GatewayStats } from "./gateway/stats.js";
import { startStdioHost } from "./gateway/stdio-host.js";
import { taskEngine } from "./gateway/task-engine.js";
import { tracedStart } from "./gateway/tracing.js";
import { UpstreamSet } from "./gateway/upstream-set.js";
import {
  federatedTaskHandles,
  federation,
  federationBreakers,
  federationStatus,
  memberCaller,
} from "./gateway/federation.js";
import { sharedHandlerDeps } from "./gateway/handler-deps.js";
import { pinRegistry, pinStatus } from "./gateway/pins.js";
import { rateLimiter } from "./gateway/rate-limiter.js";
import { consentService } from "./gateway/consent.js";
import { createRouteTable } from "./endpoints/route-table.js";

export { parseConfig, ConfigError } from "./config/validate.js";
export { gatewayConfigSchema, DEFAULT_PORT } from "./config/schema.js";
export type { GatewayConfig, GatewayConfigInput, LogLevel } from "./config/schema.js";
export type { Logger } from "./log/logger.js";
export type { SharedTasks } from "./shared-tasks.js";
export { StoreStartError } from "./shared-tasks.js";
export { StdioHost } from "./stdio/host.js";
export type { GatewayOptions } from "./gateway/options.js";
export type { GatewayStats } from "./gateway/stats.js";

export interface Gateway {
  /** The configuration in force: the start's, with the live settings of the last reload. */
  readonly config: GatewayConfig;
  readonly app: Hono;
  /** The Node listener for the MCP app: `app` behind the lean tasks/get path (endpoints/task-poll.ts). */
  nodeListener(honoListener: NodeListener): NodeListener;
  /** /metrics and /status on a listener of their own (metrics.port); undefined when they are on `app` or off. */
  readonly metricsApp: Hono | undefined;
  /** Resolves once the gateway hears what other replicas say (task handoffs); at once without shared state. */
  readonly ready: Promise<void>;
  /** Web-standard entry point: Request in, Response out. */
  fetch(request: Request): Promise<Response>;
  /** Number of proxied exchanges in progress. */
  inFlight(): number;
  /** Gauges for operators and tests: what the gateway holds right now. */
  stats(): Promise<GatewayStats>;
  /**
   * Applies a new configuration's policy (task rules, thresholds, limits, access, auth) to requests that start
   * from now on; running tasks keep going as they were. Settings that need a restart keep their old value and
   * are listed in the answer (and a warning).
   */
  reload(next: GatewayConfigInput | GatewayConfig): ReloadPlan;
  /**
   * A reload that failed before reaching `reload` (the config could not be read or was invalid): recorded as the
   * last reload's result (/status, mcp_gateway_config_reload_failures_total). `error`: the problems.
   */
  reloadFailed(error: string): void;
  /**
   * Ends long-lived event streams, waits up to `graceMs` for calls in progress,
   * cuts the rest, then closes upstream connections.
   */
  shutdown(graceMs?: number): Promise<{ drained: boolean }>;
}

export interface RunningGateway extends Gateway {
  /** The MCP endpoint URL with the real bound port, e.g. http://127.0.0.1:8642/mcp. */
  readonly url: string;
  /** Scheme, host and port; /healthz and /readyz live here. */
  readonly origin: string;
  /** Where /metrics and /status are served: `origin`, or the metrics.port listener's; undefined with metrics off. */
  readonly metricsOrigin: string | undefined;
  readonly server: Server;
  /** server.internalSocketDir: the Unix socket replicas of this host forward to (removed on close); else undefined. */
  readonly internalSocket: string | undefined;
  /** Stops accepting connections, then shuts down gracefully. */
  close(graceMs?: number): Promise<{ drained: boolean }>;
}

export function createGateway(input: GatewayConfigInput | GatewayConfig, options: GatewayOptions = {}): Gateway {
  return buildGateway(input, options).gateway;
}

/**
 * The gateway, and what startGateway tells it once it listens: its own origin, through which federated
 * endpoints serve legacy sessions (a gateway built with createGateway alone never learns one).
 */
function buildGateway(
  input: GatewayConfigInput | GatewayConfig,
  options: GatewayOptions,
): { gateway: Gateway; listening(origin: string): void } {
  const { config, log, audit, now } = gatewaySettings(input, options);
  const state = taskState(config, options, now);
  // Built before what counts on it; the state it reads at scrape time is given below, once the parts exist.
  const metrics = gatewayMetrics(config, state.leases.replicaId);
  const live = liveConfig(config, { now, log });
  const reloads = new ReloadHistory(now());
  // The federated endpoints' circuit breakers: the endpoints use them, /metrics and /status read them.
  const breakers = federationBreakers(() => live.config, now);
  const engine = taskEngine(config, { state, limits: live.limits, metrics, audit, log, now });
  const history = latencyHistory({ settings: live.adaptive, share: state.shared?.latency, log, now });
  const inflight = new InFlight();
  const forwarder = replicaForwarder(config, { state, inflight, log, now });
  const limiter = rateLimiter({ state, metrics, log, now });
  let dispatchApp: { fetch(request: Request, env: unknown): Response | Promise<Response> } | undefined;
  const pins = pinRegistry({ live, state, metrics, audit, log, now });
  const handlerDeps = sharedHandlerDeps(config, {
    pins,
    engine,
    audit,
    forwarder,
    history,
    inflight,
    limiter,
    state,
    log,
    now,
    catalogObserver: metrics?.catalogObserver(),
    // The app is built below: read when a call first needs it.
    catalogDispatch: async (request) => {
      if (!dispatchApp) throw new Error("the app is not built yet");
      return dispatchApp.fetch(request, MEMBER_REQUEST_ENV);
    },
  });
  // The route table the app looks paths up in; the upstream set fills it, and refills it on a reload.
  const table = createRouteTable(handlerDeps);
  const consent = consentService(config, { state, audit, log, now });
  const upstreams = new UpstreamSet(config, {
    engine,
    live,
    table,
    replicaId: state.leases.replicaId,
    requestStateKey: state.requestStateKey,
    defaultStdio: options.stdio,
    sessions: state.sessions,
    observer: metrics && ((name) => metrics.upstreamObserver(name)),
    credentialObserver: metrics?.credentialObserver(),
    consent,
    log,
    now,
  });
  const federatedStatus = () => federationStatus(live.config, upstreams, breakers);
  metrics?.readState(
    metricsSources(config, {
      state,
      engine,
      history,
      upstreams,
      inflight,
      federated: federatedStatus,
      adaptiveTools: () => adaptiveTools(history, live),
      reloads,
      pins,
    }),
  );
  const ready = Promise.all([upstreams.ready, hearHandoffs(engine, upstreams, state.shared, log)]).then(
    () => undefined,
  );
  const routes = metricsRoutes(config, metrics, {
    state,
    engine,
    upstreams,
    inflight,
    federated: federatedStatus,
    adaptive: () => adaptiveTools(history, live),
    rateLimited: () => limiter.recent(),
    reloads,
    pinning: () => pinStatus(pins, live),
    log,
    now,
  });
  const parts: GatewayParts = {
    state,
    engine,
    history,
    live,
    upstreams,
    handlerDeps,
    forwarder,
    metricsRoutes: routes,
    inflight,
    audit,
    consent,
    log,
    now,
  };
  const { app, nodeListener } = gatewayApp(config, parts, table);
  dispatchApp = app;
  // A federated endpoint's member requests go through the app to the members' own routes.
  const federated = federation(config, {
    table,
    upstreams,
    dispatch: async (request) => app.fetch(request, MEMBER_REQUEST_ENV),
    gate: () => live.gate,
    track: (stop) => inflight.add({ longLived: true, stop }),
    now,
    breakers,
    handles: federatedTaskHandles(state.requestStateKey),
    caller: memberCaller(live, handlerDeps.callers),
    callers: handlerDeps.callers,
    observer: metrics && ((name) => metrics.federationObserver(name)),
    sessions: handlerDeps.sessions,
    log,
  });
  const gateway: Gateway = {
    get config() {
      return live.config;
    },
    app,
    nodeListener,
    metricsApp: routes?.app,
    ready,
    reload: (next) => {
      let plan: ReloadPlan;
      try {
        plan = reloadLive(live, next, { now, log });
      } catch (err) {
        reloads.failed(now(), (err as Error).message);
        throw err;
      }
      reloads.succeeded(now(), plan);
      // New names get labels of their own; a removed upstream's keep theirs while its last tasks finish.
      metrics?.setUpstreams([
        ...upstreams.all().map((r) => r.entry.name),
        ...upstreamEntries(live.config).map((e) => e.name),
      ]);
      upstreams.apply(live.config);
      federated.apply(live.config);
      return plan;
    },
    reloadFailed: (error) => reloads.failed(now(), error),
    fetch: async (request) => app.fetch(request),
    inFlight: () => inflight.size,
    stats: () => gatewayStats(parts),
    shutdown: gatewayShutdown(config, { ...parts, federation: federated }),
  };
  return { gateway, listening: (origin) => federated.listening(origin) };
}

export async function startGateway(
  input: GatewayConfigInput | GatewayConfig,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const config = validConfig(input);
  const now = options.now ?? Date.now;
  const log = options.logger ?? createLogger(config.log.level);
  // A shared store is connected first: a gateway that cannot reach it must not start (StoreStartError).
  const shared = await connectSharedTasks(config, options.shared, log, now);
  // The stdio host, tracing and the gateway; tracedStart closes the first two when a later step fails, and the
  // store opened above is closed here then, so a failed start leaves no connection keeping the process alive.
  const build = async () => {
    const stdio = await startStdioHost(config, options.stdio, log, now);
    const traced = await tracedStart(config, log, stdio, () =>
      buildGateway(config, { ...options, logger: log, now, ...(shared && { shared }), ...(stdio && { stdio }) }),
    );
    return { gateway: traced.gateway.gateway, listening: traced.gateway.listening, tracing: traced.tracing, stdio };
  };
  const { gateway, listening, stdio, tracing } = await build().catch(async (err: unknown) => {
    await closeUnusedSharedTasks(shared, options.shared);
    throw err;
  });
  await gateway.ready;
  const listeners = createListeners(
    gateway,
    shared,
    now,
    config.server.maxBodyBytes,
    shared && readInternalTls(config),
    shared && internalSocketPath(config, shared.leases.replicaId),
  );
  const started = { shutdown: gateway.shutdown, stdio, tracing };
  const { origin, metricsOrigin } = await listenAll(listeners, config, shared).catch(async (err: unknown) => {
    await undoStart(started);
    throw err;
  });
  listening(origin);
  return {
    ...gateway,
    // The spread copied the config in force now; a reload changes it later.
    get config() {
      return gateway.config;
    },
    url: `${origin}${config.server.path}`,
    origin,
    metricsOrigin: metricsOrigin ?? (config.metrics.enabled ? origin : undefined),
    server: listeners.server,
    internalSocket: listeners.local?.path,
    close: closeOnce(listeners, started),
  };
}
