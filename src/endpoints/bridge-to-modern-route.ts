// The routing hook for legacy clients in front of a modern-only upstream
// (bridge-to-modern/). The first legacy initialize goes to the upstream as usual;
// when the upstream refuses it as modern-only (-32022, upstream_modern_only),
// the gateway serves that session, and every later initialize, itself. Requests
// on a session of the gateway's (POST, GET, DELETE) are served by it; anything
// else goes on to `next` (the 2025-11-25 tasks hook, then the pass-through).
import { isRecord } from "../protocol/json.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { sessionNotFound } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { LegacyFront, type LegacyFrontOptions } from "../bridge-to-modern/front.js";
import type { Caller } from "../calls/caller.js";
import type { Callers } from "../policy/sets/identity.js";
import type { Exchange } from "../server/exchange.js";
import { identify } from "../server/identify.js";

type PostHandler = (ex: Exchange, edit: ResultEdit | undefined) => Promise<Response>;

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
  const callerOf = (ex: Exchange): Caller => identify(callers, ex, ex.controller().signal);

  const post: PostHandler = async (ex, edit) => {
    const parsed = ex.post?.parsed;
    if (!parsed || !isRecord(parsed.message)) return next(ex, edit);
    const sessionId = ex.header("mcp-session-id");
    const message = parsed.message;
    if (sessionId !== undefined && front.owns(sessionId)) {
      return front.post(sessionId, message, callerOf(ex), edit);
    }
    if (parsed.method === "initialize") {
      const params = isRecord(message.params) ? message.params : {};
      if (front.modernOnly) return front.initialize(parsed.id, params, callerOf(ex));
      const res = await next(ex, edit);
      if (!(await isModernOnlyRefusal(res))) return res;
      front.modernOnly = true;
      deps.log.info("the upstream speaks only 2026-07-28: the gateway serves legacy sessions itself");
      return front.initialize(parsed.id, params, callerOf(ex));
    }
    // A modern-only upstream knows no legacy session: one the gateway does not hold (expired, ended, another
    // process's) is unknown, and the client starts a new one.
    if (front.modernOnly && sessionId !== undefined) return faultResponse(parsed.id, sessionNotFound());
    return next(ex, edit);
  };

  /** GET and DELETE on a session of the gateway's; undefined for anything else (the pass-through's). */
  const other = (ex: Exchange): Response | undefined => {
    const sessionId = ex.header("mcp-session-id");
    if (sessionId === undefined) return undefined;
    if (!front.owns(sessionId))
      return front.modernOnly && ex.method !== "OPTIONS" ? faultResponse(null, sessionNotFound()) : undefined;
    const who = callerOf(ex);
    if (ex.method === "GET") return front.openGet(sessionId, who);
    if (ex.method === "DELETE") return front.close(sessionId, who.caller);
    return undefined;
  };

  return { post, other, front };
}
