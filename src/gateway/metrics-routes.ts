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
import type { UpstreamRoute } from "./upstream-route.js";
import type { ReloadHistory } from "./reload-history.js";
import { probeHealth } from "../metrics/status-health.js";
import type { StatusUpstream } from "../metrics/status-page.js";
import cluster from "node:cluster";

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
    /** The configuration's last load and reload (gateway/reload-history.ts). */
    reloads: ReloadHistory;
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
  /**
   * The era an upstream speaks: configured, or learned by the era probe. A gateway learns it from the first
   * modern request (pass-through legacy traffic never asks), so the page asks itself, once a reachable upstream's
   * is unknown: the probe is the routes' own (shared, and remembered once it answers; without the caller's
   * credentials, an upstream that wants them stays unknown until a caller's request probes it).
   */
  const eraOf = async (route: UpstreamRoute, reachable: boolean): Promise<Pick<StatusUpstream, "era" | "eraFrom">> => {
    if (route.era.known === undefined && reachable) {
      await route.era.get([], AbortSignal.timeout(config.server.readyTimeoutMs)).catch(() => undefined);
    }
    const era = route.era.known;
    return era === undefined ? { era: "unknown" } : { era, eraFrom: route.era.knownFrom };
  };
  /** One upstream as the page shows it: its probe, what the answer says, its era and its stdio processes. */
  const describe = async (route: UpstreamRoute): Promise<StatusUpstream> => {
    const p = await probes(route).check();
    const processes = route.processes?.();
    const credentials = route.credentials?.health();
    const iso = (ms: number): string => new Date(ms).toISOString();
    return {
      name: route.entry.name,
      path: route.entry.path,
      origin: route.upstream.displayUrl,
      ...(await eraOf(route, p.reachable)),
      reachable: p.reachable,
      status: p.status,
      cause: p.cause,
      ...probeHealth(p),
      ...(processes !== undefined && {
        processes: {
          live: processes,
          idle: route.idleProcesses?.() ?? 0,
          warm: route.warmProcesses?.() ?? 0,
          idleMs: route.entry.upstream.processIdleMs,
        },
      }),
      ...(credentials !== undefined && {
        credentials: {
          mode: credentials.mode,
          ...(credentials.lastOkAt !== undefined && { lastOkAt: iso(credentials.lastOkAt) }),
          ...(credentials.lastError !== undefined && {
            lastError: { ...credentials.lastError, at: iso(credentials.lastError.at) },
          }),
        },
      }),
    };
  };
  const { reloads } = parts;
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
      request: (route, era, method, status, upstream) => metrics.request(route, era, method, status, upstream),
      requestCounter: (route, era, method, status, upstream) =>
        metrics.requestCounter(route, era, method, status, upstream),
      totals: () => metrics.totals(),
    },
    rates,
    config,
    log: parts.log,
    status: {
      upstream: async () => {
        // The first upstream served; every upstream's state is on /readyz.
        const route = upstreams.serving()[0];
        if (!route) {
          const none = { reachable: false, cause: "no upstream" };
          return {
            name: "(none)",
            path: "",
            origin: "(none)",
            url: "(none)",
            era: "unknown",
            ...none,
            ...probeHealth(none),
          };
        }
        const row = await describe(route);
        return { ...row, url: row.origin };
      },
      store: () => state.store.stats(),
      upstreams: async () => {
        const routes = upstreams.serving();
        if (routes.every((r) => !r.entry.own)) return undefined;
        const running = engine.runningSummary(0).byUpstream;
        return Promise.all(
          routes.map(async (r) => ({
            ...(await describe(r)),
            tasks: running.get(r.entry.name) ?? { working: 0, inputRequired: 0 },
          })),
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
      reload: () => {
        const iso = (ms: number) => new Date(ms).toISOString();
        const last = reloads.last;
        return {
          lastSuccessAt: iso(reloads.lastSuccessAt),
          failures: reloads.failures,
          ...(last && { last: { ...last, at: iso(last.at) } }),
        };
      },
      worker: () => (cluster.isWorker ? { worker: cluster.worker?.id ?? null, pid: process.pid } : undefined),
      now,
    },
  };
  return {
    deps,
    app: config.metrics.port !== undefined ? createMetricsApp(deps) : undefined,
    close: () => clearInterval(rateTimer),
  };
}
