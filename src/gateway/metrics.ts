// Metrics (metrics.enabled, issue 11). Built before the engine and the upstream routes, which count events on
// it from their construction; the state it reads at scrape time is given afterwards (metricsSources), once the
// parts it reads exist.
import { DEFAULT_UPSTREAM_NAME, type GatewayConfig } from "../config/schema.js";
import { upstreamEntries } from "../config/upstream-set.js";
import type { InFlight } from "../http/inflight.js";
import { PrometheusMetrics, type MetricsSources } from "../metrics/prometheus.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { TaskState } from "./shared-state.js";
import type { UpstreamRoute } from "./upstream-route.js";

/** The metrics, or undefined when they are off. */
export function gatewayMetrics(config: GatewayConfig, replicaId: string): PrometheusMetrics | undefined {
  return config.metrics.enabled
    ? new PrometheusMetrics({
        toolLabels: config.metrics.toolLabels,
        upstreams: upstreamEntries(config).map((e) => e.name),
        replicaId,
      })
    : undefined;
}

/** What a scrape reads: the store's counts, and what this process holds. */
export function metricsSources(
  config: GatewayConfig,
  parts: {
    state: TaskState;
    engine: TaskEngine;
    history: LatencyHistory;
    route: UpstreamRoute;
    inflight: InFlight;
  },
): MetricsSources {
  const { state, engine, history, route, inflight } = parts;
  return {
    storeBytesBudget: config.tasks.storeBytes,
    storeStats: () => state.store.stats(),
    runningTasks: () => engine.runningSummary(0).byUpstream,
    legacySessions: () => route.pool.size,
    pendingInputs: () => route.bridge.pendingExchanges,
    eventStreams: () => inflight.longLived,
    inFlight: () => inflight.size,
    upstreams: () => [
      { name: DEFAULT_UPSTREAM_NAME, era: route.era.known ?? "unknown", processes: route.processes?.() },
    ],
    adaptive: () => history.stats(() => undefined, 0).decisions,
  };
}
