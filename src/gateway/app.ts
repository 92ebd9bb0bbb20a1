// The MCP app (http/app.ts) over the parts: the route table the upstream set fills, the engine, the live
// policy, the forwarder, and /metrics and /status when they are served on it (metrics on, no metrics.port).
import type { GatewayConfig } from "../config/schema.js";
import { createApp, type GatewayApp } from "../http/app.js";
import type { RouteTable } from "../http/route-table.js";
import type { GatewayParts } from "./parts.js";

export function gatewayApp(config: GatewayConfig, parts: GatewayParts, table: RouteTable): GatewayApp {
  const { state, metricsRoutes, live } = parts;
  const { shared } = state;
  return createApp({
    ...parts.handlerDeps,
    routes: table,
    gate: () => live.gate,
    storeReady: shared ? () => shared.ping() : undefined,
    metrics: metricsRoutes && { ...metricsRoutes.deps, routes: config.metrics.port === undefined },
  });
}
