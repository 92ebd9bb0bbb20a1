// The MCP app (server/app.ts) over the parts: the endpoints the upstream set fills, /metrics and /status when they
// are served on it (metrics on, no metrics.port), and the Node listener to serve it with: the lean tasks/get
// endpoint (endpoints/task-poll.ts) in front of it, unless requests are observed (tracing or the access log).
import type { Hono } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import { createApp } from "../server/app.js";
import type { RouteTable } from "../endpoints/route-table.js";
import type { UpstreamHandler } from "../endpoints/named-route.js";
import {
  POLL_COUNT,
  taskPollListener,
  type NodeListener,
  type PollRoute,
  type TaskPollDeps,
} from "../endpoints/task-poll.js";
import type { GatewayParts } from "./parts.js";

export interface ServedApp {
  app: Hono;
  /** Wraps @hono/node-server's listener for `app`; returns it as it is when the lean path is off. */
  nodeListener(honoListener: NodeListener): NodeListener;
}

export function gatewayApp(config: GatewayConfig, parts: GatewayParts, table: RouteTable): ServedApp {
  const { state, metricsRoutes, live } = parts;
  const { shared } = state;
  const deps = parts.handlerDeps;
  const metrics = metricsRoutes && { ...metricsRoutes.deps, routes: config.metrics.port === undefined };
  const { app, observed } = createApp({
    config,
    log: deps.log,
    now: deps.now,
    routes: table,
    gate: () => live.gate,
    storeReady: shared ? () => shared.ping() : undefined,
    metrics,
    consent: parts.consent && { consent: parts.consent, callers: deps.callers },
  });
  // A handler's upstream and policy never change (a reload serves a new handler), so its poll route is made once.
  const pollRoutes = new WeakMap<UpstreamHandler, PollRoute>();
  const pollRoute = (handler: UpstreamHandler): PollRoute => {
    const upstream = handler.deps.upstream.name;
    const { era, method, status } = POLL_COUNT;
    const route: PollRoute = {
      upstream,
      live: handler.deps.live,
      count: metrics?.metrics.requestCounter("mcp", era, method, status, upstream),
    };
    pollRoutes.set(handler, route);
    return route;
  };
  const pollDeps: TaskPollDeps = {
    server: config.server,
    routeAt(path) {
      const handler = table.at(path);
      return handler && (pollRoutes.get(handler) ?? pollRoute(handler));
    },
    callers: deps.callers,
    engine: deps.engine,
    limiter: deps.limiter,
  };
  return { app, nodeListener: (next) => (observed ? next : taskPollListener(pollDeps, next)) };
}
