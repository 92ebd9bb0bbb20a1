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
import { classifyPost } from "../protocol/modern-request.js";
import { internalError } from "../protocol/errors.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { faultResponse } from "../web/json-response.js";
import { createModernRoute, type ModernRouteDeps } from "./modern-route.js";
import { readPost } from "./read-post.js";
import { forbiddenOrigin, methodNotAllowed } from "./errors.js";
import { ReadinessProbe, StoreProbe } from "./health.js";
import type { InFlight } from "./inflight.js";
import { nodeEnv, requestHeader } from "./node-env.js";
import { createProxyHandler } from "./proxy.js";

export interface AppDeps extends Pick<ModernRouteDeps, "bridge" | "listens" | "engine" | "policy" | "modernTasks" | "forwarder" | "forwardTimeouts"> {
  /** A shared task store's health, reported by /readyz; undefined for the memory store. */
  storeReady: (() => Promise<void>) | undefined;
  config: GatewayConfig;
  upstream: UpstreamClient;
  inflight: InFlight;
  era: UpstreamEra;
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
  // Anything thrown that no layer turned into an answer (a store that rejects, a bug) is still a JSON-RPC
  // error with a 500, never Hono's plain-text page; the cause goes to the log, not to the client.
  app.onError((err, c) => {
    log.error("unhandled error", { method: c.req.method, cause: err.message });
    return faultResponse(null, internalError(`${c.req.method} ${c.req.path}`));
  });
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
  const storeProbe = deps.storeReady ? new StoreProbe(deps.storeReady, config.server.readyTimeoutMs, deps.now) : undefined;
  app.get("/readyz", async (c) => {
    const [probe, store] = await Promise.all([readiness.check(), storeProbe?.check()]);
    // A shared store that is down degrades tasks only: pass-through and plain calls still work, so the
    // replica stays in rotation (200) and says what is missing.
    const body = {
      status: !probe.reachable ? "unavailable" : store && !store.ok ? "degraded" : "ready",
      upstream: upstream.displayUrl,
      ...(probe.status !== undefined && { upstreamStatus: probe.status }),
      ...(probe.cause !== undefined && { cause: probe.cause }),
      // The store's error text (addresses) stays in the log: /readyz answers anyone.
      ...(store && { store: store.ok ? "ready" : "unavailable" }),
    };
    if (store && !store.ok) log.warn("readiness: task store unavailable", { cause: store.cause ?? "" });
    return c.json(body, probe.reachable ? 200 : 503);
  });

  const modern = createModernRoute({
    upstream,
    era: deps.era,
    bridge: deps.bridge,
    listens: deps.listens,
    engine: deps.engine,
    policy: deps.policy,
    modernTasks: deps.modernTasks,
    forwarder: deps.forwarder,
    forwardTimeouts: deps.forwardTimeouts,
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
