// Metrics (metrics.enabled, issue 11). Built before the engine and the upstream routes, which count events on
// it from their construction; the state it reads at scrape time is given afterwards (metricsSources), once the
// parts it reads exist.
import type { StatusAdaptiveTool } from "../metrics/status-page.js";
import type { GatewayConfig } from "../config/schema.js";
import { upstreamEntries } from "../config/upstream-set.js";
import type { InFlight } from "../http/inflight.js";
import { PrometheusMetrics, type FederatedState, type MetricsSources } from "../metrics/prometheus.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { TaskState } from "./shared-state.js";
import type { UpstreamSet } from "./upstream-set.js";
import type { ReloadHistory } from "./reload-history.js";
import type { PinRegistry } from "../catalog/pin-registry.js";

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
    upstreams: UpstreamSet;
    inflight: InFlight;
    /** The federated endpoints and their members' breakers (gateway/federation.ts federationStatus). */
    federated: () => readonly FederatedState[];
    /** The tools adaptive promotion tracks, with their state (gateway/adaptive-state.ts). */
    adaptiveTools: () => readonly StatusAdaptiveTool[];
    reloads: ReloadHistory;
    /** Pinned definitions: the changes waiting for approval. */
    pins: PinRegistry;
  },
): MetricsSources {
  const { state, engine, history, upstreams, inflight } = parts;
  const sum = (of: (r: ReturnType<UpstreamSet["all"]>[number]) => number) => () =>
    upstreams.all().reduce((n, r) => n + of(r), 0);
  return {
    storeBytesBudget: config.tasks.storeBytes,
    storeStats: () => state.store.stats(),
    runningTasks: () => engine.runningSummary(0).byUpstream,
    legacySessions: sum((r) => r.pool.size),
    pendingInputs: sum((r) => r.bridge.pendingExchanges),
    eventStreams: () => inflight.longLived,
    inFlight: () => inflight.size,
    // Every upstream served now (a removed one's series stay until a restart, like any Prometheus series).
    upstreams: () =>
      upstreams.serving().map((r) => ({
        name: r.entry.name,
        era: r.era.known ?? "unknown",
        processes: r.processes?.(),
        warmProcesses: r.warmProcesses?.(),
        processRefusals: r.processRefusals?.(),
      })),
    adaptive: () => history.stats(() => undefined, 0).decisions,
    federated: parts.federated,
    adaptiveTools: parts.adaptiveTools,
    reloads: () => ({
      lastSuccessAt: parts.reloads.lastSuccessAt,
      lastOk: parts.reloads.last?.ok ?? true,
      failures: parts.reloads.failures,
    }),
    pinsPending: () => new Map([...parts.pins.pending()].map(([upstream, changes]) => [upstream, changes.length])),
  };
}
