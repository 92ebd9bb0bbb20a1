// The routing hook for legacy clients in front of a modern-only upstream
// (bridge-to-modern/). The first legacy initialize goes to the upstream as usual;
// when the upstream refuses it as modern-only (-32022, upstream_modern_only),
// the gateway serves that session, and every later initialize, itself. Requests
// on a session of the gateway's (POST, GET, DELETE) are served by it; anything
// else goes on to `next` (the 2025-11-25 tasks hook, then the pass-through).
import type { Context } from "hono";
import { isRecord } from "../protocol/json.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { sessionNotFound } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { LegacyFront, type LegacyFrontOptions } from "../bridge-to-modern/front.js";
import type { Caller } from "../calls/caller.js";
import type { Callers } from "./identity.js";
import { clientController, requestHeader, type NodeEnv } from "./node-env.js";
import type { PolicySet } from "./policy-set.js";
import type { PostBody } from "./read-post.js";

type PostHandler = (
  c: Context,
  env: NodeEnv | undefined,
  set: PolicySet,
  post: PostBody,
  edit: ResultEdit | undefined,
) => Promise<Response>;

export interface LegacyFrontRouteDeps extends LegacyFrontOptions {
  /** Who is calling (shared by every route, with its digest cache). */
  callers: Callers;
  next: PostHandler;
}

/** Whether a refused initialize is the gateway's own "the upstream speaks only 2026-07-28" (proxy.ts). */
async function isModernOnlyRefusal(res: Response): Promise<boolean> {
  if (res.status !== 400 || !(res.headers.get("content-type") ?? "").includes("json")) return false;
  try {
    const body: unknown = await res.clone().json();
    return (
      isRecord(body) &&
      isRecord(body.error) &&
      isRecord(body.error.data) &&
      body.error.data.reason === "upstream_modern_only"
    );
  } catch {
    return false;
  }
}

export function createLegacyFrontRoute(deps: LegacyFrontRouteDeps) {
  const { next } = deps;
  const front = new LegacyFront(deps);
  const { callers } = deps;

  /** The caller, as every route identifies it; a session's requests and its GET stream end with their client. */
  const callerOf = (c: Context, env: NodeEnv | undefined, set: PolicySet): Caller =>
    callers.identify(c, env, set, clientController(c, env).signal);

  const post: PostHandler = async (c, env, set, body, edit) => {
    const parsed = body.parsed;
    if (!parsed || !isRecord(parsed.message)) return next(c, env, set, body, edit);
    const sessionId = requestHeader(c, env, "mcp-session-id");
    const message = parsed.message;
    if (sessionId !== undefined && front.owns(sessionId)) {
      return front.post(sessionId, message, callerOf(c, env, set), edit);
    }
    if (parsed.method === "initialize") {
      const params = isRecord(message.params) ? message.params : {};
      if (front.modernOnly) return front.initialize(parsed.id, params, callerOf(c, env, set));
      const res = await next(c, env, set, body, edit);
      if (!(await isModernOnlyRefusal(res))) return res;
      front.modernOnly = true;
      deps.log.info("the upstream speaks only 2026-07-28: the gateway serves legacy sessions itself");
      return front.initialize(parsed.id, params, callerOf(c, env, set));
    }
    // A modern-only upstream knows no legacy session: one the gateway does not hold (expired, ended, another
    // process's) is unknown, and the client starts a new one.
    if (front.modernOnly && sessionId !== undefined) return faultResponse(parsed.id, sessionNotFound());
    return next(c, env, set, body, edit);
  };

  /** GET and DELETE on a session of the gateway's; undefined for anything else (the pass-through's). */
  const other = (c: Context, env: NodeEnv | undefined, set: PolicySet): Response | undefined => {
    const sessionId = requestHeader(c, env, "mcp-session-id");
    if (sessionId === undefined) return undefined;
    if (!front.owns(sessionId))
      return front.modernOnly && c.req.method !== "OPTIONS" ? faultResponse(null, sessionNotFound()) : undefined;
    const who = callerOf(c, env, set);
    if (c.req.method === "GET") return front.openGet(sessionId, who);
    if (c.req.method === "DELETE") return front.close(sessionId, who.caller);
    return undefined;
  };

  return { post, other, front };
}
