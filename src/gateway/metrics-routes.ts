// /metrics and /status (metrics on): what they serve, the status page's rate window (sampled every 5 s, so
// the page shows a minute's rates as soon as it is opened), and, with metrics.port, the app of their own
// listener.
import type { Hono } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import { ReadinessProbe } from "../server/health.js";
import type { InFlight } from "../http/inflight.js";
import { createMetricsApp, type MetricsRouteDeps } from "../server/metrics-routes.js";
import type { Logger } from "../log/logger.js";
import { RateWindow, type PrometheusMetrics } from "../metrics/prometheus.js";
import { clusterRender } from "../metrics/cluster.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { TaskState } from "./shared-state.js";
import type {
  StatusAdaptiveTool,
  StatusFederated,
  StatusPinChange,
  StatusRateLimited,
} from "../metrics/status-page.js";
import type { UpstreamSet } from "./upstream-set.js";

const RATE_SAMPLE_MS = 5_000;

export interface MetricsRoutes {
  deps: MetricsRouteDeps;
  /** metrics.port: the app of their own listener; undefined when they are served on the MCP app. */
  app: Hono | undefined;
  /** Shutdown: the rate sampling stops. */
  close(): void;
}

/** Undefined with metrics off. */
export function metricsRoutes(
  config: GatewayConfig,
  metrics: PrometheusMetrics | undefined,
  parts: {
    state: TaskState;
    engine: TaskEngine;
    upstreams: UpstreamSet;
    inflight: InFlight;
    /** The federated endpoints and their members' states (gateway/federation.ts federationStatus). */
    federated: () => StatusFederated[];
    /** The tools adaptive promotion tracks, with their state (gateway/adaptive-state.ts). */
    adaptive: () => StatusAdaptiveTool[];
    /** The rate-limit rules that refused most requests in the last minute (ratelimit/limiter.ts recent). */
    rateLimited: () => StatusRateLimited[];
    /** Tool definitions waiting for approval (gateway/pins.ts pinStatus). */
    pinning: () => Promise<StatusPinChange[]>;
    log: Logger;
    now: () => number;
  },
): MetricsRoutes | undefined {
  if (!metrics) return undefined;
  const { state, engine, upstreams, inflight, now } = parts;
  // One probe per upstream client (shared by concurrent scrapes of the page).
  const probeOf = new WeakMap<object, ReadinessProbe>();
  const probes = (route: ReturnType<UpstreamSet["serving"]>[number]): ReadinessProbe => {
    let probe = probeOf.get(route);
    if (!probe) {
      probe = new ReadinessProbe(route.upstream, config.server.readyTimeoutMs, now);
      probeOf.set(route, probe);
    }
    return probe;
  };
  const rates = new RateWindow(() => metrics.totals(), now);
  const rateTimer = setInterval(() => rates.sample(), RATE_SAMPLE_MS);
  rateTimer.unref();
  // --workers: a scrape of the shared port shows every worker (metrics/cluster.ts); else this process's own.
  const render = clusterRender(
    () => metrics.clusterRegistries(),
    () => metrics.render(),
  );
  const deps: MetricsRouteDeps = {
    metrics: {
      get contentType() {
        return metrics.contentType;
      },
      replica: metrics.replica,
      render,
      request: (route, era, method, status) => metrics.request(route, era, method, status),
      totals: () => metrics.totals(),
    },
    rates,
    config,
    log: parts.log,
    status: {
      upstream: async () => {
        // The first upstream served; every upstream's state is on /readyz.
        const route = upstreams.serving()[0];
        if (!route) return { url: "(none)", era: "unknown", reachable: false, status: undefined, cause: "no upstream" };
        const p = await probes(route).check();
        return {
          url: route.upstream.displayUrl,
          era: route.era.known ?? "unknown",
          reachable: p.reachable,
          status: p.status,
          cause: p.cause,
        };
      },
      store: () => state.store.stats(),
      upstreams: async () => {
        const routes = upstreams.serving();
        if (routes.every((r) => !r.entry.own)) return undefined;
        const running = engine.runningSummary(0).byUpstream;
        return Promise.all(
          routes.map(async (r) => {
            const p = await probes(r).check();
            return {
              name: r.entry.name,
              path: r.entry.path,
              upstream: r.upstream.displayUrl,
              era: r.era.known ?? "unknown",
              reachable: p.reachable,
              status: p.status,
              cause: p.cause,
              tasks: running.get(r.entry.name) ?? { working: 0, inputRequired: 0 },
            };
          }),
        );
      },
      federated: parts.federated,
      adaptive: parts.adaptive,
      rateLimited: parts.rateLimited,
      pinning: parts.pinning,
      storeBudgetBytes: config.tasks.storeBytes,
      running: (limit) => engine.runningSummary(limit),
      sessions: () => ({
        legacy: upstreams.all().reduce((n, r) => n + r.pool.size, 0),
        pendingInputs: upstreams.all().reduce((n, r) => n + r.bridge.pendingExchanges, 0),
        eventStreams: inflight.longLived,
        inFlight: inflight.size,
      }),
      now,
    },
  };
  return {
    deps,
    app: config.metrics.port !== undefined ? createMetricsApp(deps) : undefined,
    close: () => clearInterval(rateTimer),
  };
}
