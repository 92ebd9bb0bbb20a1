// Public API. `createGateway` builds the web-standard handler (usable with any
// runtime's server); `startGateway` also listens with @hono/node-server, which
// enables the zero-copy Node streaming path, and owns graceful shutdown.
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { createAdaptorServer, getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { parseConfig } from "./config/validate.js";
import { takeDeprecations } from "./config/deprecations.js";
import type { GatewayConfig, GatewayConfigInput } from "./config/schema.js";
import { createApp } from "./http/app.js";
import type { NodeListener } from "./http/task-poll-path.js";
import { InFlight } from "./http/inflight.js";
import { createLogger, type Logger } from "./log/logger.js";
import { UpstreamClient } from "./upstream/client.js";
import { UpstreamEra } from "./upstream/era-probe.js";
import { LegacySessionPool } from "./bridge-to-legacy/legacy-sessions.js";
import { LegacyBridge } from "./bridge-to-legacy/bridge.js";
import { LegacyListens } from "./bridge-to-legacy/listen.js";
import { ModernTaskFront } from "./modern-upstream/task-front.js";
import { packageInfo } from "./version.js";
import { MemoryTaskStore } from "./store/memory-store.js";
import type { TaskStore } from "./store/task-store.js";
import { LocalLeases } from "./store/local-leases.js";
import { LocalTaskEvents } from "./store/local-events.js";
import { forwardingKey, ReplicaForwarder } from "./http/forward.js";
import { internalListener } from "./http/internal-listener.js";
import { openSharedTasks, secretKey, type SharedTasks } from "./shared-tasks.js";
import { TaskEngine } from "./tasks/engine.js";
import { LatencyHistory, type AdaptiveSettings, type AdaptiveStats } from "./tasks/latency-history.js";
import { globToRegExp } from "./policy/glob.js";
import { buildPolicySet, type LivePolicy } from "./http/policy-set.js";
import { createAuditLog } from "./log/audit.js";
import { StdioHost, type StdioUpstreamConfig } from "./stdio/host.js";
import { StdioUpstreamClient } from "./stdio/upstream-client.js";
import { planReload, reloadedConfig, type ReloadPlan } from "./reload.js";
import { startTracing } from "./telemetry/sdk.js";
import { setTracing, tracerProviderRegistered, tracingOn } from "./telemetry/trace.js";
import { PrometheusMetrics, RateWindow } from "./metrics/prometheus.js";
import { NO_METRICS } from "./metrics/gateway-metrics.js";
import { createMetricsApp, type MetricsRouteDeps } from "./http/metrics-routes.js";
import { ReadinessProbe } from "./http/health.js";

export { parseConfig, ConfigError } from "./config/validate.js";
export { gatewayConfigSchema, DEFAULT_PORT } from "./config/schema.js";
export type { GatewayConfig, GatewayConfigInput, LogLevel } from "./config/schema.js";
export type { Logger } from "./log/logger.js";
export type { SharedTasks } from "./shared-tasks.js";
export { StoreStartError } from "./shared-tasks.js";
export { StdioHost } from "./stdio/host.js";

export interface GatewayOptions {
  logger?: Logger;
  /** A task store of the caller's for one process (tests, embedders); default: memory. */
  store?: TaskStore;
  /** Shared task state (replicas); when given, `store` is ignored. */
  shared?: SharedTasks;
  /** Injected clock (ms since epoch) so time-based logic is testable without sleeping. */
  now?: () => number;
  /**
   * The stdio host serving upstream.command (startGateway starts one and owns it); createGateway
   * needs it when the config names a command, and leaves closing it to the caller.
   */
  stdio?: StdioHost;
}

export interface GatewayStats {
  /**
   * Tasks in the store, the bytes they account for, the unfinished ones (over every process sharing
   * the store), and the unfinished ones whose upstream call runs in this process.
   */
  tasks: { stored: number; bytes: number; unfinished: number; runningHere: number };
  /** Legacy upstream sessions open on behalf of modern clients. */
  upstreamSessions: number;
  /** Child processes of a stdio upstream (upstream.command) alive now; absent for an HTTP upstream. */
  upstreamProcesses?: number;
  /** MRTR exchanges waiting for a client's retry. */
  pendingInputs: number;
  /**
   * Adaptive promotion (tasks.adaptive): how tools/call were decided since start (promoted at once, at the
   * threshold, plain; always/required as eager), the exchanges with the shared store, and the current estimate
   * of each tracked tool that a task rule names (its glob matches; at most 100, most recently used).
   */
  adaptive: AdaptiveStats;
}

export interface Gateway {
  /** The configuration in force: the start's, with the live settings of the last reload. */
  readonly config: GatewayConfig;
  readonly app: Hono;
  /** The Node listener for the MCP app: `app` behind the lean tasks/get path (http/task-poll-path.ts). */
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
  /** Stops accepting connections, then shuts down gracefully. */
  close(graceMs?: number): Promise<{ drained: boolean }>;
}

export function createGateway(input: GatewayConfigInput | GatewayConfig, options: GatewayOptions = {}): Gateway {
  const config = parseConfig(input);
  const log = options.logger ?? createLogger(config.log.level);
  for (const message of takeDeprecations()) log.warn(message);
  const now = options.now ?? Date.now;
  // An embedder that registered an OpenTelemetry SDK of its own gets the gateway's spans too (startGateway
  // starts one itself when telemetry is configured); otherwise tracing stays off and costs nothing.
  if (!tracingOn() && tracerProviderRegistered()) setTracing(true, packageInfo().version);
  if (config.upstream.command && !options.stdio)
    throw new Error("a stdio upstream (upstream.command) needs startGateway, or a started StdioHost as options.stdio");
  const upstream = options.stdio
    ? new StdioUpstreamClient(config.upstream, options.stdio)
    : new UpstreamClient(config.upstream);
  const inflight = new InFlight();
  const gatewayInfo = packageInfo();
  const era = new UpstreamEra(upstream, config.upstream.era, gatewayInfo);
  const pool = new LegacySessionPool(upstream, {
    idleMs: config.eraBridge.sessionIdleMs,
    maxSessions: config.eraBridge.maxSessions,
    gatewayInfo,
    openTimeoutMs: config.eraBridge.sessionOpenTimeoutMs,
    controlTimeoutMs: config.upstream.controlTimeoutMs,
    now,
    log,
  });
  const { shared } = options;
  const requestStateKey = shared?.requestStateKey ?? secretKey(config.eraBridge.requestStateSecret);
  const store =
    shared?.store ??
    options.store ??
    new MemoryTaskStore(config.tasks.storeBytes, now, { maxBytesPerCaller: config.tasks.maxBytesPerCaller });
  const leases = shared?.leases ?? new LocalLeases(store);
  const audit = createAuditLog(log);
  // Metrics (metrics.enabled): events are counted where they happen, from here on; the state read at scrape
  // time is wired below, once the parts it reads exist.
  const metrics: PrometheusMetrics | undefined = config.metrics.enabled
    ? new PrometheusMetrics({ toolLabels: config.metrics.toolLabels, replicaId: leases.replicaId })
    : undefined;
  if (metrics) upstream.observer = metrics.upstream;
  // One object the engine keeps: a reload changes the limits in place, for tasks created afterwards.
  const limitsOf = (c: GatewayConfig) => ({
    maxTasks: c.tasks.maxTasks,
    maxTasksPerCaller: c.tasks.maxTasksPerCaller,
    maxResultBytes: c.tasks.maxResultBytes,
  });
  const limits = limitsOf(config);
  const engine: TaskEngine = new TaskEngine({
    store,
    leases,
    events: shared?.events ?? new LocalTaskEvents(),
    limits,
    now,
    log,
    timing: shared ? { leaseMs: config.tasks.leaseMs, sweepIntervalMs: config.tasks.sweepIntervalMs } : undefined,
    audit,
    metrics: metrics ?? NO_METRICS,
  });
  let current = config;
  const live: LivePolicy = { current: buildPolicySet(config, { now, log }) };
  // Adaptive promotion: one latency history for the gateway's life (a reload changes its settings in place).
  const adaptiveOf = (c: GatewayConfig): AdaptiveSettings => ({
    enabled: c.tasks.adaptive,
    minPollIntervalMs: c.tasks.minPollIntervalMs,
    maxPollIntervalMs: c.tasks.maxPollIntervalMs,
  });
  const adaptive = adaptiveOf(config);
  const history = new LatencyHistory({
    now,
    settings: adaptive,
    share: shared?.latency,
    onShareError: (err) =>
      log.warn("could not share the latency history (retried at the next sync)", { cause: err.message }),
  });
  const bridge = new LegacyBridge({
    engine,
    upstream,
    pool,
    hints: { ttlMs: config.eraBridge.cacheTtlMs, cacheScope: config.eraBridge.cacheScope },
    exchanges: {
      max: config.eraBridge.maxPendingInputs,
      maxPerCaller: config.eraBridge.maxPendingInputsPerCaller,
      ttlMs: config.eraBridge.inputRequestTtlMs,
    },
    keepAliveMs: config.server.sseKeepAliveMs,
    now,
    log,
    replicaId: leases.replicaId,
    requestStateKey,
    gather: { windowMs: config.eraBridge.inputGatherMs, max: config.eraBridge.maxInputRequestsPerRound },
    toolSchemas: { ttlMs: config.eraBridge.toolSchemaTtlMs, maxBytes: config.eraBridge.toolSchemaCacheBytes },
    controlTimeoutMs: config.upstream.controlTimeoutMs,
  });
  // With shared state, this instance takes over tasks that others hand on when they shut down.
  const ready = shared
    ? engine
        .acceptHandoffs(bridge.resumeTask)
        .catch((err: unknown) => log.warn("cannot hear task handoffs", { cause: (err as Error).message }))
    : Promise.resolve();
  const listens = new LegacyListens(upstream, pool, config.server.sseKeepAliveMs, log, engine, gatewayInfo);
  const modernTasks = new ModernTaskFront({ upstream, engine, keepAliveMs: config.server.sseKeepAliveMs, log });
  metrics?.readState({
    storeBytesBudget: config.tasks.storeBytes,
    storeStats: () => store.stats(),
    runningTasks: () => engine.runningSummary(0),
    legacySessions: () => pool.size,
    pendingInputs: () => bridge.pendingExchanges,
    eventStreams: () => inflight.longLived,
    inFlight: () => inflight.size,
    upstreamEra: () => era.known ?? "unknown",
    adaptive: () => history.stats(() => undefined, 0).decisions,
    upstreamProcesses: options.stdio ? () => options.stdio?.processes ?? 0 : undefined,
  });
  const forwarder = new ReplicaForwarder({
    leases,
    key: forwardingKey(requestStateKey ?? randomBytes(32)),
    config,
    inflight,
    log,
    now,
  });
  let metricsRoutes: MetricsRouteDeps | undefined;
  let rateTimer: NodeJS.Timeout | undefined;
  if (metrics) {
    const rates = new RateWindow(() => metrics.totals(), now);
    // A sample every 5 s, so the page shows a minute's rates as soon as it is opened.
    rateTimer = setInterval(() => rates.sample(), 5_000);
    rateTimer.unref();
    const probe = new ReadinessProbe(upstream, config.server.readyTimeoutMs, now);
    metricsRoutes = {
      metrics,
      rates,
      config,
      log,
      status: {
        upstream: async () => {
          const p = await probe.check();
          return {
            url: upstream.displayUrl,
            era: era.known ?? "unknown",
            reachable: p.reachable,
            status: p.status,
            cause: p.cause,
          };
        },
        store: () => store.stats(),
        storeBudgetBytes: config.tasks.storeBytes,
        running: (limit) => engine.runningSummary(limit),
        sessions: () => ({
          legacy: pool.size,
          pendingInputs: bridge.pendingExchanges,
          eventStreams: inflight.longLived,
          inFlight: inflight.size,
        }),
        now,
      },
    };
  }
  const { app, nodeListener } = createApp({
    config,
    upstream,
    inflight,
    era,
    bridge,
    listens,
    engine,
    live,
    audit,
    modernTasks,
    forwarder,
    forwardTimeouts: { control: config.tasks.forwardTimeoutMs, retry: config.upstream.headersTimeoutMs },
    history,
    storeReady: shared ? () => shared.ping() : undefined,
    log,
    now,
    metrics: metricsRoutes && { ...metricsRoutes, routes: config.metrics.port === undefined },
  });
  let shuttingDown: Promise<{ drained: boolean }> | undefined;

  return {
    get config() {
      return current;
    },
    app,
    nodeListener,
    metricsApp: metricsRoutes && config.metrics.port !== undefined ? createMetricsApp(metricsRoutes) : undefined,
    ready,
    reload(input) {
      const next = parseConfig(input);
      for (const message of takeDeprecations()) log.warn(message);
      const plan = planReload(current, next);
      const after = reloadedConfig(current, next, plan);
      // Built before anything is swapped: a policy that cannot be built leaves the old one whole.
      const policy = buildPolicySet(after, { previous: { set: live.current, config: current }, now, log });
      current = after;
      live.current = policy;
      Object.assign(limits, limitsOf(current));
      Object.assign(adaptive, adaptiveOf(current));
      if (plan.restart.length > 0)
        log.warn("configuration reloaded; these settings keep their old value until a restart", {
          settings: plan.restart.join(", "),
        });
      log.info("configuration reloaded", { applied: plan.live.join(", ") || "(no policy change)" });
      return plan;
    },
    fetch: async (request) => app.fetch(request),
    inFlight: () => inflight.size,
    stats: async () => {
      const stored = await store.stats();
      // Estimates for the tools the config names: a tracked tool that a task rule's glob matches.
      const rules = current.tasks.rules.map((r) => globToRegExp(r.tool));
      const policy = live.current.tasks;
      const named = (tool: string) => (rules.some((re) => re.test(tool)) ? policy.decide(tool) : undefined);
      return {
        tasks: { ...stored, runningHere: engine.runningHere },
        upstreamSessions: pool.size,
        ...(options.stdio && { upstreamProcesses: options.stdio.processes }),
        pendingInputs: bridge.pendingExchanges,
        adaptive: history.stats(named),
      };
    },
    shutdown(graceMs = config.server.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        inflight.stopLongLived();
        // With shared state, tasks running here get drainMs to finish (clients poll other replicas meanwhile);
        // what is left is handed on or ended failed, never silently dropped.
        const [drained, unfinished] = await Promise.all([
          inflight.drained(graceMs),
          shared ? engine.drain(config.tasks.drainMs) : Promise.resolve([]),
        ]);
        if (!drained) inflight.stopAll();
        // What is left: handed to another instance where the upstream can resume the call's stream
        // (it gave its events ids), else cancelled upstream and ended failed, saying so.
        // Settled one by one: a store that fails for one task must not stop the rest of the shutdown.
        await Promise.allSettled(
          unfinished.map(async (id) => {
            if (await engine.handOff(id, config.tasks.forwardTimeoutMs)) return;
            await engine.abandon(
              id,
              "The gateway instance running this task shut down before it finished, and its upstream call could not be handed to another instance; the call was cancelled",
            );
          }),
        );
        bridge.close();
        clearInterval(rateTimer);
        listens.close();
        await forwarder.close();
        await shared?.leave?.();
        // The last samples go to the shared store before its connection closes with the engine.
        await history.close();
        await engine.close();
        await pool.close();
        await upstream.close();
        return { drained };
      })();
      return shuttingDown;
    },
  };
}

function formatHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

async function listen(server: Server, port: number, host: string, exclusive: boolean): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // exclusive: a cluster worker's internal listener gets a port of its own (port 0 would be shared otherwise).
    server.listen({ port, host, exclusive }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}

export async function startGateway(
  input: GatewayConfigInput | GatewayConfig,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const config = parseConfig(input);
  const now = options.now ?? Date.now;
  const log = options.logger ?? createLogger(config.log.level);
  // A shared store is connected first: a gateway that cannot reach it must not start (StoreStartError).
  const opened =
    options.shared === undefined && config.tasks.store !== "memory"
      ? await openSharedTasks(config, log, now)
      : undefined;
  const shared = options.shared ?? (opened && { ...opened, leave: () => opened.leases.close() });
  // A stdio upstream: its host serves Streamable HTTP on an internal loopback listener, one child per session.
  const { command } = config.upstream;
  const stdio =
    command && !options.stdio
      ? await StdioHost.start({ ...config.upstream, command } satisfies StdioUpstreamConfig, { log, now })
      : undefined;
  // Tracing (telemetry.endpoint or OTEL_EXPORTER_OTLP_*): the SDK is registered before anything makes a span.
  let tracing: ReturnType<typeof startTracing>;
  let gateway: Gateway;
  try {
    tracing = startTracing(config.telemetry, { version: packageInfo().version, log });
    gateway = createGateway(config, {
      ...options,
      logger: log,
      now,
      ...(shared && { shared }),
      ...(stdio && { stdio }),
    });
  } catch (err) {
    // Nothing listens yet, but the stdio host does, and tracing may: neither may outlive a start that failed.
    await tracing?.shutdown();
    await stdio?.close();
    throw err;
  }
  await gateway.ready;
  const hono = getRequestListener(gateway.app.fetch);
  // getRequestListener answers its own failures (500), so the promise it returns never rejects.
  const server = createServer(gateway.nodeListener((req, res) => void hono(req, res)));
  // With shared tasks, other replicas forward task control and MRTR retries to this internal listener.
  const internal = shared && internalListener(gateway.app, forwardingKey(shared.requestStateKey), now);
  // metrics.port: /metrics and /status on a listener of their own.
  const metricsApp = gateway.metricsApp;
  const metricsServer = metricsApp ? (createAdaptorServer({ fetch: metricsApp.fetch }) as Server) : undefined;
  const metricsHost = config.metrics.host ?? config.server.host;
  let metricsOrigin: string | undefined;

  try {
    await listen(server, config.server.port, config.server.host, false);
    if (metricsServer) {
      const at = await listen(metricsServer, config.metrics.port ?? 0, metricsHost, false);
      metricsOrigin = `http://${formatHost(metricsHost)}:${at.port}`;
    }
    if (internal && shared) {
      const at = await listen(internal, config.server.internalPort, config.server.internalHost, true);
      await shared.leases.register(
        config.server.advertiseUrl ?? `http://${formatHost(config.server.internalHost)}:${at.port}`,
      );
    }
  } catch (err) {
    internal?.close();
    metricsServer?.close();
    server.close();
    await gateway.shutdown(0);
    await stdio?.close();
    await tracing?.shutdown();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const origin = `http://${formatHost(config.server.host)}:${address.port}`;
  let closing: Promise<{ drained: boolean }> | undefined;

  return {
    ...gateway,
    // The spread copied the config in force now; a reload changes it later.
    get config() {
      return gateway.config;
    },
    url: `${origin}${config.server.path}`,
    origin,
    metricsOrigin: metricsOrigin ?? (config.metrics.enabled ? origin : undefined),
    server,
    close(graceMs) {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // The internal listener stays open while tasks drain: forwarded tasks/update and tasks/cancel still arrive.
        const result = await gateway.shutdown(graceMs);
        server.closeAllConnections();
        if (internal) {
          const internalClosed = new Promise<void>((resolve) => internal.close(() => resolve()));
          internal.closeAllConnections();
          await internalClosed;
        }
        await closed;
        if (metricsServer) {
          const metricsClosed = new Promise<void>((resolve) => metricsServer.close(() => resolve()));
          metricsServer.closeAllConnections();
          await metricsClosed;
        }
        // After the pool's sessions were closed: every child gets stdin closed, then SIGTERM, then SIGKILL.
        await stdio?.close();
        // Last: the spans of everything above are ended by now, and exported before the process may exit.
        await tracing?.shutdown();
        return result;
      })();
      return closing;
    },
  };
}
