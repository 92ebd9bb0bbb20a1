// GET /metrics (Prometheus text exposition), the operator page (GET /status,
// /status.js, /status.json), and the request counter around the MCP route.
//
// Who may see them: both sit behind the same Origin rules as the MCP endpoint
// (a browser page of another origin cannot read them). /metrics answers
// anyone else unless metrics.token is set, then only `Authorization: Bearer
// <token>`. The operator page (metrics.status) by default answers loopback
// clients, and others only with the token; the page never shows identities or
// arguments, and task ids only truncated.
import { isMemberRequest } from "./member-request.js";
import type {
  StatusAdaptiveTool,
  StatusFederated,
  StatusPinChange,
  StatusRateLimited,
  StatusReload,
  StatusUpstream,
} from "../metrics/status-page.js";
import { taskRef, taskUpstream } from "../tasks/task-id.js";
import { createHash, timingSafeEqual } from "node:crypto";
import { Hono, type Context } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { GatewayConfig } from "../config/schema.js";
import { isOriginAllowed } from "../protocol/origin.js";
import { isLoopbackHost } from "../address/loopback.js";
import { originNotAllowed } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { httpMethodClass, type EraLabel } from "../metrics/labels.js";
import type { MetricsTotals, RateWindow } from "../metrics/prometheus.js";
import { STATUS_PAGE_HTML, STATUS_PAGE_SCRIPT } from "../metrics/status-page.js";
import type { Logger } from "../log/logger.js";
import { Exchange, type RequestLabels } from "./exchange.js";
import { mergeStatus } from "./status-merge.js";
import { clusterStatus } from "../metrics/cluster.js";

/** What the routes need of the metrics implementation (metrics/prometheus.ts). */
export interface MetricsEndpoint {
  readonly contentType: string;
  readonly replica: string;
  render(): Promise<string>;
  request(route: string, era: EraLabel, method: string, status: number, upstream: string | undefined): void;
  /** request() with its labels bound once (Prometheus.requestCounter). */
  requestCounter(
    route: string,
    era: EraLabel,
    method: string,
    status: number,
    upstream: string | undefined,
  ): () => void;
  totals(): MetricsTotals;
}

/** One row of the status page's oldest running tasks. */
interface StatusTask {
  taskId: string;
  tool: string | undefined;
  status: string;
  createdAt: string;
}

/** Where the status page's numbers come from (wired by the composition root, src/gateway/metrics-routes.ts). */
interface StatusSources {
  /** The first upstream served, as a row of `upstreams`, with `url` (its origin, as before there were rows). */
  upstream(): Promise<StatusUpstream & { url: string }>;
  store(): Promise<{ stored: number; bytes: number; unfinished: number } | undefined>;
  /** Every upstream served, with its health and the tasks this process runs for it; undefined with only the single one. */
  upstreams(): Promise<StatusUpstream[] | undefined>;
  /** The federated endpoints with their members' states; empty without any. */
  federated(): StatusFederated[];
  /** The tools adaptive promotion tracks, with their state; empty without any (or with tasks.adaptive off). */
  adaptive(): StatusAdaptiveTool[];
  /** The rate-limit rules that refused most requests in the last minute; empty without any. */
  rateLimited(): StatusRateLimited[];
  /** Tool definitions waiting for approval (pinning), read from the store now; empty without any. */
  pinning(): Promise<StatusPinChange[]>;
  storeBudgetBytes: number;
  running(limit: number): { working: number; inputRequired: number; oldest: StatusTask[] };
  sessions(): { legacy: number; pendingInputs: number; eventStreams: number; inFlight: number };
  /** The configuration's last load and reload. */
  reload(): StatusReload;
  /** Under --workers: this worker's node:cluster id and pid; undefined in a process of its own. */
  worker(): { worker: number | null; pid: number } | undefined;
  now(): number;
}

export interface MetricsRouteDeps {
  metrics: MetricsEndpoint;
  rates: RateWindow;
  status: StatusSources;
  config: GatewayConfig;
  log: Logger;
}

const OLDEST = 10;
const TOOL_CHARS = 64;

/** Wraps a handler so that every request it answers is counted, with the labels the handler learnt. */
export function countRequests(
  metrics: Pick<MetricsEndpoint, "request">,
  route: string,
  handler: (c: Context, seen: RequestLabels) => Promise<Response> | Response,
): (c: Context) => Promise<Response> {
  return async (c) => {
    // A federated endpoint's request to a member: the client's request is counted once, on the endpoint.
    if (isMemberRequest(c.env)) return handler(c, { era: "legacy", method: "other" });
    const method = c.req.method;
    // GET and DELETE on the MCP path are legacy session traffic; a POST's era is set once it is classified.
    const seen: RequestLabels = { era: method === "OPTIONS" ? "none" : "legacy", method: httpMethodClass(method) };
    let res: Response;
    try {
      res = await handler(c, seen);
    } catch (err) {
      metrics.request(route, seen.era, seen.method, 500, seen.upstream);
      throw err;
    }
    // The Node fast path wrote the status itself.
    const status =
      res === RESPONSE_ALREADY_SENT
        ? ((c.env as { outgoing?: { statusCode: number } } | undefined)?.outgoing?.statusCode ?? 200)
        : res.status;
    metrics.request(route, seen.era, seen.method, status, seen.upstream);
    return res;
  };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/**
 * Whether an Authorization header carries metrics.token (`Bearer <token>`), compared in constant time; always false
 * when no token is configured.
 */
export function metricsTokenCheck(token: string | undefined): (authorization: string | undefined) => boolean {
  const wanted = token === undefined ? undefined : digest(token);
  return (header) => {
    if (!wanted) return false;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), wanted);
  };
}

const PAGE_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

function plain(status: number, text: string, extra: Record<string, string> = {}): Response {
  return new Response(text, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...extra },
  });
}

/** Adds /metrics and the operator page to `app` (the main one, or the metrics.port listener's). */
export function registerMetricsRoutes(app: Hono, deps: MetricsRouteDeps): void {
  const { config, metrics, log } = deps;
  const wanted = config.metrics.token !== undefined;
  const tokenIn = metricsTokenCheck(config.metrics.token);
  const hasToken = (c: Context): boolean => tokenIn(Exchange.of(c).header("authorization"));
  const originRefused = (c: Context): Response | undefined => {
    const origin = Exchange.of(c).header("origin");
    if (isOriginAllowed(origin, config.server)) return undefined;
    log.warn("rejected a metrics or status request from a disallowed origin", { origin });
    return faultResponse(null, originNotAllowed(origin ?? ""));
  };
  const challenge = () => plain(401, "metrics.token required\n", { "www-authenticate": 'Bearer realm="metrics"' });
  /** The status page's rule; `shell`: the page itself, which carries no data. */
  const statusRefused = (c: Context, shell: boolean): Response | undefined => {
    const refused = originRefused(c);
    if (refused) return refused;
    if (config.metrics.status === "public") return undefined;
    if (isLoopbackHost(Exchange.of(c).clientAddress())) return undefined;
    // With a token, the data needs it; the page (no data) loads so that it can send it (#token=…).
    if (shell && wanted) return undefined;
    if (hasToken(c)) return undefined;
    return wanted ? challenge() : plain(403, "the status page answers loopback clients only (metrics.status)\n");
  };

  app.get(
    "/metrics",
    countRequests(metrics, "metrics", async (c, seen) => {
      seen.era = "none";
      const refused = originRefused(c);
      if (refused) return refused;
      if (wanted && !hasToken(c)) return challenge();
      const text = await metrics.render();
      return new Response(text, {
        status: 200,
        headers: { "content-type": metrics.contentType, "cache-control": "no-store" },
      });
    }),
  );
  if (config.metrics.status === "off") return;

  const page = (body: string, type: string) =>
    countRequests(metrics, "status", (c, seen) => {
      seen.era = "none";
      const refused = statusRefused(c, true);
      return Promise.resolve(
        refused ?? new Response(body, { status: 200, headers: { "content-type": type, ...PAGE_HEADERS } }),
      );
    });
  app.get("/status", page(STATUS_PAGE_HTML, "text/html; charset=utf-8"));
  app.get("/status.js", page(STATUS_PAGE_SCRIPT, "text/javascript; charset=utf-8"));
  // --workers: every worker's snapshot, merged (server/status-merge.ts); else this process's alone.
  const everyWorker = clusterStatus(() => statusSnapshot(deps));
  app.get(
    "/status.json",
    countRequests(metrics, "status", async (c, seen) => {
      seen.era = "none";
      const refused = statusRefused(c, false);
      if (refused) return refused;
      return new Response(JSON.stringify(mergeStatus(await everyWorker(), OLDEST)), {
        status: 200,
        headers: {
          "content-type": "application/json",
          "cache-control": "no-store",
          "x-content-type-options": "nosniff",
        },
      });
    }),
  );
}

/**
 * The status page's data: the upstreams, the last reload, counts, the oldest running tasks (truncated ids, no
 * callers, no arguments), the last minute.
 */
async function statusSnapshot(deps: Pick<MetricsRouteDeps, "metrics" | "rates" | "status">) {
  const { status } = deps;
  const now = status.now();
  const [upstream, upstreams, store, pinning] = await Promise.all([
    status.upstream(),
    status.upstreams(),
    status.store().catch(() => undefined),
    status.pinning().catch(() => []),
  ]);
  const running = status.running(OLDEST);
  const federated = status.federated();
  const adaptive = status.adaptive();
  const rateLimited = status.rateLimited();
  const lastMinute = deps.rates.lastMinute();
  const worker = status.worker();
  return {
    at: new Date(now).toISOString(),
    replica: deps.metrics.replica,
    ...(worker && { worker }),
    reload: status.reload(),
    upstream,
    ...(upstreams && { upstreams }),
    ...(federated.length > 0 && { federated }),
    ...(adaptive.length > 0 && { adaptive }),
    ...(rateLimited.length > 0 && { rateLimited }),
    ...(pinning.length > 0 && { pinning }),
    tasks: {
      working: running.working,
      inputRequired: running.inputRequired,
      storeUp: store !== undefined,
      unfinished: store?.unfinished ?? null,
      stored: store?.stored ?? null,
      bytes: store?.bytes ?? null,
      budgetBytes: status.storeBudgetBytes,
    },
    // A piece of the id's random part (tasks/task-id.ts taskRef, as in audit lines), never the whole id.
    oldest: running.oldest.map((t) => ({
      id: `${taskRef(t.taskId)}…`,
      upstream: taskUpstream(t.taskId),
      tool: (t.tool ?? "?").slice(0, TOOL_CHARS),
      state: t.status,
      ageSeconds: Math.max(0, Math.round((now - Date.parse(t.createdAt)) / 100) / 10),
    })),
    sessions: status.sessions(),
    lastMinute,
  };
}

/** The metrics.port listener's app: the same routes, nothing else. */
export function createMetricsApp(deps: MetricsRouteDeps): Hono {
  const app = new Hono();
  registerMetricsRoutes(app, deps);
  return app;
}
