// The modern (2026-07-28) surface: validation errors are answered here; valid
// requests go to a modern upstream as they are (pass-through, still streaming)
// or to the era bridge when the upstream is legacy.
import type { Context } from "hono";
import type { LegacyBridge } from "../bridge/legacy-bridge.js";
import type { ModernTaskBridge } from "../bridge/modern-tasks.js";
import type { Logger } from "../log/logger.js";
import { canonicalJson, isRecord } from "../protocol/json.js";
import { errorResponse, JSONRPC_INVALID_REQUEST } from "../protocol/jsonrpc.js";
import type { ModernNotification, ModernRequest, Rejection } from "../protocol/modern-request.js";
import { upstreamRequestHeaders } from "../protocol/headers.js";
import { classifyUpstreamFailure, upstreamFailureError } from "../protocol/upstream-failure.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { UpstreamEra } from "../upstream/era-probe.js";
import { jsonRpcErrorResponse } from "./errors.js";
import { credentialHeaders, IdentityCache } from "./identity.js";
import { clientController, rawRequestHeaders, requestHeader, type NodeEnv } from "./node-env.js";
import type { PostBody } from "./post-body.js";
import type { InFlight } from "./inflight.js";
import type { TaskEngine } from "../tasks/engine.js";
import { serveTaskMethod, TASK_METHODS } from "../tasks/methods.js";

export interface ModernRouteDeps {
  upstream: UpstreamClient;
  era: UpstreamEra;
  bridge: LegacyBridge;
  engine: TaskEngine;
  modernTasks: ModernTaskBridge | undefined;
  log: Logger;
  passThrough: (c: Context, post: PostBody) => Promise<Response>;
  inflight: InFlight;
  /** Header naming the caller (set by an auth proxy); default: a hash of Authorization. */
  identityHeader: string | undefined;
}

/**
 * Registers a bridged answer as in flight until its body has been fully read (or
 * cancelled), so graceful shutdown waits for it like for a proxied call.
 */
async function trackUntilDone(
  work: Promise<Response>,
  inflight: InFlight,
  longLived: boolean,
  stop: () => void,
): Promise<Response> {
  // Stopping counts as done: the call is cut (its upstream cancelled), whatever its answer would have been.
  const release: () => void = inflight.add({
    longLived,
    stop: () => {
      stop();
      release();
    },
  });
  let res: Response;
  try {
    res = await work;
  } catch (err) {
    release();
    throw err;
  }
  // A JSON answer is complete in memory and written at once; wrapping it would also cost node-server's
  // fast path for string bodies. Only event streams are followed to their end.
  if (!res.body || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    release();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

function isTaskOnlyListen(req: ModernRequest): boolean {
  const n = req.params.notifications;
  return isRecord(n) && n.taskIds !== undefined && Object.keys(n).every((k) => k === "taskIds");
}

export function createModernRoute(deps: ModernRouteDeps) {
  const { bridge, log } = deps;

  // By default the caller is whoever its credentials (Authorization, Cookie, X-Api-Key) say it is.
  const identities = new IdentityCache();
  const callerOf = (c: Context, env: NodeEnv | undefined, credentials?: string[]): string =>
    deps.identityHeader
      ? identities.of(requestHeader(c, env, deps.identityHeader), true)
      : identities.of(canonicalJson(credentials ?? credentialHeaders(rawRequestHeaders(c, env))), false);

  const reject = (r: Rejection): Response => jsonRpcErrorResponse(r.status, errorResponse(r.id, r.error));

  const notification = (c: Context, env: NodeEnv | undefined, n: ModernNotification): Response => {
    // The only client notification on modern HTTP: the 2.x client ends a listen with notifications/cancelled.
    if (n.method === "notifications/cancelled" && isRecord(n.params)) {
      bridge.listens.cancel(callerOf(c, env), n.params.requestId);
    }
    return new Response(null, { status: 202 });
  };

  const request = async (c: Context, env: NodeEnv | undefined, req: ModernRequest, post: PostBody): Promise<Response> => {
    if (deps.identityHeader && requestHeader(c, env, deps.identityHeader) === undefined) {
      // Without it every such caller would share one identity, and so each other's tasks.
      return jsonRpcErrorResponse(
        401,
        errorResponse(req.id, { code: JSONRPC_INVALID_REQUEST, message: `The ${deps.identityHeader} header that identifies the caller is missing`, data: { reason: "no_identity" } }),
      );
    }
    const raw = rawRequestHeaders(c, env);
    // Only credential headers identify the caller and travel on pooled sessions (no hop-by-hop among them).
    const credentials = credentialHeaders(raw);
    const caller = callerOf(c, env, credentials);
    // The gateway's own tasks are answered at once, whatever the upstream speaks (no era probe, one lookup).
    if (TASK_METHODS.has(req.method)) {
      const own = await serveTaskMethod(deps.engine, req, caller, "defer");
      if (own) return own;
    }
    // Answers the gateway produces itself (the bridges) count as in flight for graceful shutdown; the
    // shutdown's stop ends them like a client that left, which cancels their upstream calls.
    const stopper = clientController(c, env);
    const signal = stopper.signal;
    const tracked = (work: Promise<Response>): Promise<Response> =>
      trackUntilDone(work, deps.inflight, req.method === "subscriptions/listen", () => stopper.abort());
    let era;
    try {
      era = await deps.era.get(credentials, signal);
    } catch (err) {
      const failure = classifyUpstreamFailure(err);
      log.warn("upstream era probe failed", { reason: failure.reason, cause: failure.cause });
      return jsonRpcErrorResponse(failure.status, errorResponse(req.id, upstreamFailureError(failure, deps.upstream.displayUrl)));
    }
    if (TASK_METHODS.has(req.method) && !(era === "modern" && deps.era.upstreamServesTasks)) {
      // Nobody upstream serves tasks: an id the gateway does not know is unknown.
      return serveTaskMethod(deps.engine, req, caller, "answer");
    }
    if (era === "modern") {
      // A modern upstream without tasks of its own gets the gateway's task engine in front of it.
      if (!deps.era.upstreamServesTasks && deps.modernTasks) {
        const headers = upstreamRequestHeaders(raw, { clientIp: env?.incoming.socket.remoteAddress, proto: "http", host: requestHeader(c, env, "host") });
        if (req.method === "server/discover") return deps.modernTasks.discover(req, headers, signal);
        // A listen for task ids alone is about the gateway's own tasks; the upstream has none to report.
        if (req.method === "subscriptions/listen" && isTaskOnlyListen(req)) {
          return tracked(bridge.handle(req, { caller, credentialHeaders: credentials, signal }));
        }
        if (deps.modernTasks.wants(req)) return tracked(deps.modernTasks.handle(req, headers, caller, signal));
      }
      return deps.passThrough(c, post);
    }
    return tracked(bridge.handle(req, {
      caller,
      credentialHeaders: credentials,
      signal,
    }));
  };

  return (
    c: Context,
    env: NodeEnv | undefined,
    cls: { reject: Rejection } | { message: ModernRequest | ModernNotification },
    post: PostBody,
  ): Promise<Response> | Response => {
    if ("reject" in cls) return reject(cls.reject);
    if (cls.message.kind === "notification") return notification(c, env, cls.message);
    return request(c, env, cls.message, post);
  };
}
