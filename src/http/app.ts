// The Hono app: health routes, Origin validation and the MCP endpoint.
// The Origin check runs inside the one MCP route handler. A POST is read once,
// then classified: legacy traffic passes through (proxy.ts), modern traffic goes
// to modern-route.ts (validation, then pass-through or the era bridge).
import { Hono, type Context } from "hono";
import type { GatewayConfig } from "../config/schema.js";
import { isOriginAllowed } from "../protocol/origin.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import type { LegacyBridge } from "../bridge/legacy-bridge.js";
import { classifyPost } from "../protocol/modern-request.js";
import { createModernRoute } from "./modern-route.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { ModernTaskBridge } from "../bridge/modern-tasks.js";
import { TASK_METHODS } from "../tasks/methods.js";
import { readPost } from "./post-body.js";
import { forbiddenOrigin, methodNotAllowed } from "./errors.js";
import { ReadinessProbe } from "./health.js";
import type { InFlight } from "./inflight.js";
import { nodeEnv, requestHeader } from "./node-env.js";
import { createProxyHandler } from "./proxy.js";

export interface AppDeps {
  config: GatewayConfig;
  upstream: UpstreamClient;
  inflight: InFlight;
  era: UpstreamEra;
  bridge: LegacyBridge;
  engine: TaskEngine;
  modernTasks: ModernTaskBridge | undefined;
  log: Logger;
  now: () => number;
}

const PROXIED = new Set(["POST", "GET", "DELETE", "OPTIONS"]);

/** Null when the request may go on; otherwise the 403 to send. One function, not middleware: it runs per request on the hot path. */
function checkOrigin(c: Context, config: GatewayConfig["server"], log: Logger): Response | null {
  const origin = requestHeader(c, nodeEnv(c.env), "origin");
  if (isOriginAllowed(origin, config)) return null;
  log.warn("rejected request from a disallowed origin", { origin });
  return forbiddenOrigin(origin ?? "");
}

export function createApp(deps: AppDeps): Hono {
  const { config, upstream, log } = deps;
  const app = new Hono();
  const readiness = new ReadinessProbe(upstream, config.server.readyTimeoutMs, deps.now);
  const proxy = createProxyHandler({
    upstream,
    inflight: deps.inflight,
    log,
    maxBodyBytes: config.server.maxBodyBytes,
    sseKeepAliveMs: config.server.sseKeepAliveMs,
    now: deps.now,
  });

  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    const probe = await readiness.check();
    const body = {
      status: probe.reachable ? "ready" : "unavailable",
      upstream: upstream.displayUrl,
      ...(probe.status !== undefined && { upstreamStatus: probe.status }),
      ...(probe.cause !== undefined && { cause: probe.cause }),
    };
    return c.json(body, probe.reachable ? 200 : 503);
  });

  const modern = createModernRoute({
    upstream,
    era: deps.era,
    bridge: deps.bridge,
    engine: deps.engine,
    modernTasks: deps.modernTasks,
    log,
    passThrough: (c, post) => proxy(c, post),
    inflight: deps.inflight,
    identityHeader: config.tasks.identityHeader?.toLowerCase(),
  });

  app.all(config.server.path, async (c) => {
    const forbidden = checkOrigin(c, config.server, log);
    if (forbidden) return forbidden;
    if (!PROXIED.has(c.req.method)) return methodNotAllowed("GET, POST, DELETE, OPTIONS");
    if (c.req.method !== "POST") return proxy(c);
    const env = nodeEnv(c.env);
    const post = await readPost(c, env, config.server.maxBodyBytes, log);
    if (post instanceof Response) return post;
    if (post.parsed) {
      const cls = classifyPost(post.parsed.message, (name) => requestHeader(c, env, name), TASK_METHODS);
      if (cls.era === "modern") return modern(c, env, cls, post);
    }
    return proxy(c, post);
  });
  return app;
}
