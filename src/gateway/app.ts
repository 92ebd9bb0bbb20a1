// The MCP app (http/app.ts) over the parts: the upstream route, the engine, the live policy, the forwarder,
// and /metrics and /status when they are served on it (metrics on, no metrics.port).
import { singleUpstream } from "../config/upstream-set.js";
import type { GatewayConfig } from "../config/schema.js";
import { createApp, type GatewayApp } from "../http/app.js";
import type { GatewayParts } from "./parts.js";

export function gatewayApp(config: GatewayConfig, parts: GatewayParts): GatewayApp {
  const { route, state, metricsRoutes } = parts;
  const { shared } = state;
  return createApp({
    config,
    upstream: route.upstream,
    inflight: parts.inflight,
    era: route.era,
    bridge: route.bridge,
    listens: route.listens,
    engine: parts.engine,
    live: parts.live.policy,
    audit: parts.audit,
    modernTasks: route.modernTasks,
    forwarder: parts.forwarder,
    forwardTimeouts: { control: config.tasks.forwardTimeoutMs, retry: singleUpstream(config).headersTimeoutMs },
    history: parts.history,
    storeReady: shared ? () => shared.ping() : undefined,
    log: parts.log,
    now: parts.now,
    metrics: metricsRoutes && { ...metricsRoutes.deps, routes: config.metrics.port === undefined },
  });
}
