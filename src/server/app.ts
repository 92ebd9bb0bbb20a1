// The Hono app: health routes, the RFC 9728 document, /metrics and /status, and the MCP endpoints, one per
// upstream (endpoints/named-route.ts): server.path for the single upstream, <server.path>/<name> for each named
// one, and the federated endpoints. The endpoints are a live table the composition root fills (Endpoints): a
// reload adds, retires and replaces upstreams without touching the rest of the app. Every MCP request gets its
// Exchange here (or carries the one the lean path made), and its endpoint's pipeline serves it.
import { Hono, type Context } from "hono";
import { namedUpstreamPath } from "../config/upstream-set.js";
import { internalError, unknownUpstream } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { StoreProbe, type ReadinessProbe } from "./health.js";
import { resourceMetadataPaths } from "../auth/challenge.js";
import { tracingOn } from "../telemetry/trace.js";
import { observeRequests } from "./observe.js";
import { countRequests, metricsTokenCheck, registerMetricsRoutes, type MetricsRouteDeps } from "./metrics-routes.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { Exchange } from "./exchange.js";
import { registerOAuthRoutes, type OAuthRouteDeps } from "./oauth-routes.js";

/** An endpoint: a pipeline that serves a request's Exchange. */
interface Endpoint {
  serve(ex: Exchange): Promise<Response> | Response;
}

/** An upstream's endpoint, as /readyz reports it. */
interface UpstreamEndpoint extends Endpoint {
  readonly retired: boolean;
  readonly readiness: ReadinessProbe;
  readonly deps: { readonly path: string; readonly upstream: { readonly name: string; readonly displayUrl: string } };
}

/** The endpoints served now, by path (endpoints/route-table.ts is the composition root's). */
interface Endpoints {
  /** The upstream served at exactly `path`, or undefined. */
  at(path: string): UpstreamEndpoint | undefined;
  /** The federated endpoint at exactly `path`, or undefined. */
  federatedAt(path: string): (Endpoint & { readonly deps: { readonly name: string } }) | undefined;
  /** Every upstream's endpoint, retired ones included. */
  handlers(): UpstreamEndpoint[];
}

export interface AppDeps {
  config: GatewayConfig;
  log: Logger;
  now: () => number;
  /** The endpoints served, by path; the composition root fills it. */
  routes: Endpoints;
  /** A shared task store's health, reported by /readyz; undefined for the memory store. */
  storeReady: (() => Promise<void>) | undefined;
  /** The auth gate in force, whose key health /readyz reports (every upstream shares its verifier). */
  gate: () => AuthGate | undefined;
  /** Metrics on (metrics.enabled): requests are counted; `routes`: /metrics and /status are served here (no metrics.port). */
  metrics?: (MetricsRouteDeps & { routes: boolean }) | undefined;
  /** The consent flow's /oauth routes (userConsent upstreams); undefined without auth.vault. */
  consent?: Pick<OAuthRouteDeps, "consent" | "callers"> | undefined;
}

/** The MCP app, and whether requests are observed (tracing or the access log: the lean tasks/get path is then off). */
export interface GatewayApp {
  app: Hono;
  observed: boolean;
}

export function createApp(deps: AppDeps): GatewayApp {
  const { config, log } = deps;
  const app = new Hono();
  // Anything thrown that no layer turned into an answer (a store that rejects, a bug) is still a JSON-RPC
  // error with a 500, never Hono's plain-text page; the cause goes to the log, not to the client.
  app.onError((err, c) => {
    log.error("unhandled error", { method: c.req.method, cause: err.message });
    return faultResponse(null, internalError(`${c.req.method} ${c.req.path}`));
  });
  // Server spans (tracing on) and the access log (log.access); nothing at all when both are off.
  const observe = observeRequests({
    tracing: tracingOn(),
    access: config.log.access ? log : undefined,
    // The app's own paths (read at the first request, once every route is registered); "*" is middleware.
    routes: () => new Set(app.routes.map((r) => r.path).filter((p) => p !== "*")),
    upstreamAt: (path) => deps.routes.at(path)?.deps.upstream.name ?? deps.routes.federatedAt(path)?.deps.name,
  });
  if (observe) app.use("*", observe);

  const { routes } = deps;
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  const storeProbe = deps.storeReady
    ? new StoreProbe(deps.storeReady, config.server.readyTimeoutMs, deps.now)
    : undefined;
  const tokenIn = metricsTokenCheck(config.metrics.token);
  app.get("/readyz", async (c) => {
    const serving = routes.handlers().filter((h) => !h.retired);
    const [probes, store] = await Promise.all([
      Promise.all(serving.map((h) => h.readiness.check())),
      storeProbe?.check(),
    ]);
    const up = probes.filter((p) => p.reachable).length;
    // A shared store that is down degrades tasks only: pass-through and plain calls still work, so the
    // replica stays in rotation (200) and says what is missing. So does an upstream that is down while
    // another is up: taking the replica out of rotation would cut the healthy ones too.
    // Keys that cannot be fetched refuse every request with 503 (never a pass): said here too, as degraded,
    // because every replica shares the identity provider and taking this one out of rotation would not help.
    const authFailure = deps.gate()?.verifier.keysUnavailable();
    const status =
      up === 0
        ? "unavailable"
        : up < probes.length || (store && !store.ok) || authFailure !== undefined
          ? "degraded"
          : "ready";
    // Anyone may ask /readyz (load balancers, probes): it names each upstream and its state, nothing more. Where an
    // upstream is, and why it is down (an address, a command's error), is only for a caller with metrics.token.
    const detailed = tokenIn(c.req.header("authorization"));
    const states = serving.map((h, i) => {
      const probe = probes[i] ?? { reachable: false };
      return {
        name: h.deps.upstream.name,
        status: probe.reachable ? "ready" : "unavailable",
        ...(detailed && {
          path: h.deps.path,
          upstream: h.deps.upstream.displayUrl,
          ...(probe.status !== undefined && { upstreamStatus: probe.status }),
          ...(probe.cause !== undefined && { cause: probe.cause }),
        }),
      };
    });
    const [only] = states;
    const body = {
      status,
      // The single upstream's details at the top too, as before there were several (with the token).
      ...(states.length === 1 &&
        only &&
        detailed && { upstream: only.upstream, upstreamStatus: only.upstreamStatus, cause: only.cause }),
      upstreams: states,
      // The store's error text (addresses) stays in the log: /readyz answers anyone.
      ...(store && { store: store.ok ? "ready" : "unavailable" }),
      ...(deps.gate() && { auth: authFailure === undefined ? "ready" : "unavailable" }),
    };
    if (store && !store.ok) log.warn("readiness: task store unavailable", { cause: store.cause ?? "" });
    return c.json(body, up > 0 ? 200 : 503);
  });

  // RFC 9728: where clients learn which authorization server issues tokens for this endpoint. Public, like
  // the challenge that points to it; served while auth.resourceMetadata is configured (it may come and go on a reload).
  for (const path of resourceMetadataPaths(config.server.path, config.auth?.resourceMetadata?.resource)) {
    app.get(path, (c) => {
      const document = deps.gate()?.metadata;
      return document ? c.json(document, 200, { "cache-control": "max-age=300" }) : c.notFound();
    });
  }

  const mcp = (ex: Exchange): Promise<Response> | Response => {
    const named = routes.at(ex.path);
    if (named) {
      // The request counter's `upstream` (metrics on); a federated endpoint names its member (observeUpstream).
      if (ex.seen) ex.seen.upstream = named.deps.upstream.name;
      return named.serve(ex);
    }
    const handler = routes.federatedAt(ex.path);
    return handler ? handler.serve(ex) : faultResponse(null, unknownUpstream(ex.path, false));
  };
  const { metrics } = deps;
  // mcp itself, not an async wrapper around it: one promise less per request.
  const endpoint = metrics
    ? countRequests(metrics.metrics, "mcp", (c, seen) => {
        const ex = Exchange.of(c);
        ex.seen = seen;
        return mcp(ex);
      })
    : (c: Context) => mcp(Exchange.of(c));
  // Before the MCP routes: with server.path "/", <server.path>/<name> would otherwise take /metrics and /status.
  if (metrics?.routes) registerMetricsRoutes(app, metrics);
  if (deps.consent) registerOAuthRoutes(app, { ...deps.consent, config, gate: deps.gate, log });
  app.all(config.server.path, endpoint);
  app.all(namedUpstreamPath(config.server.path, ":upstream"), endpoint);
  // Any deeper path under server.path (/mcp/github/x, /mcp/) is no upstream's either: a JSON-RPC 404, not Hono's
  // text. Answered as "not found", not as a route of its own: a request that two routes match goes through
  // Hono's middleware composition, which cost a named route a third more CPU per request than server.path.
  const under = namedUpstreamPath(config.server.path, "");
  app.notFound((c) =>
    c.req.path.startsWith(under)
      ? faultResponse(null, unknownUpstream(c.req.path, false))
      : c.text("404 Not Found", 404),
  );
  return { app, observed: observe !== undefined };
}
