// The policy steps of a route (pipeline.ts): rate limits, then access rules, decided where the request lands,
// before any upstream, task or other replica sees it. Both eras, every request.
import type { AuditLog } from "../log/audit.js";
import { accessDenied, noIdentity } from "../protocol/errors.js";
import { parseJsonRpcBody, type ParsedBody } from "../protocol/jsonrpc.js";
import { legacyAccess } from "../policy/legacy-access.js";
import type { Callers } from "../policy/sets/identity.js";
import { toolName } from "../tasks/promotion.js";
import { faultResponse } from "../web/json-response.js";
import type { Exchange } from "./exchange.js";
import { whoOf } from "./identify.js";
import { step, type Step } from "./pipeline.js";
import { limitRequest, type RouteLimitDeps } from "./rate-limit.js";

/**
 * A legacy POST's message as policy reads it. Under access rules and rate limits a body is checked even when its
 * content type is not JSON: an upstream that reads it anyway must not get a denied call.
 */
function policyMessage(ex: Exchange): Extract<ParsedBody, { ok: true }> | undefined {
  const post = ex.post;
  if (!post) return undefined;
  if (post.parsed) return post.parsed;
  const lenient = parseJsonRpcBody(post.body);
  return lenient.ok ? lenient : undefined;
}

/** Rate limits (limits.rules), first of the policy: a limited request is answered before access rules, tasks or the upstream see it. */
export function limitStep(deps: RouteLimitDeps, upstream: string): Step {
  return step("rate limit", (ex) => {
    const set = ex.set;
    if (ex.method !== "POST" || !set) return undefined;
    const cls = ex.cls;
    if (cls?.era === "modern") {
      const parsed = ex.post?.parsed;
      return "message" in cls && parsed && !set.limits.empty
        ? limitRequest(deps, ex, set, upstream, parsed.message)
        : undefined;
    }
    if (set.limits.empty) return undefined;
    const parsed = policyMessage(ex);
    return parsed && limitRequest(deps, ex, set, upstream, parsed.message);
  });
}

/**
 * Tool access: a denied call never reaches the upstream, and tools/list is filtered (the edit is left on the
 * Exchange for the endpoint). A modern request also needs the identity header when one is configured: without it
 * every such caller would share one identity, and so each other's tasks.
 */
export function accessStep(deps: { callers: Callers; audit: AuditLog }): Step {
  return step("access", (ex) => {
    const set = ex.set;
    if (ex.method !== "POST" || !set) return undefined;
    const claims = ex.verified?.claims;
    const cls = ex.cls;
    if (cls?.era === "modern") {
      if (!("message" in cls) || cls.message.kind !== "request") return undefined;
      const req = cls.message;
      if (set.identityHeader && !ex.header(set.identityHeader))
        return faultResponse(req.id, noIdentity(set.identityHeader));
      if (req.method === "tools/call" && !set.access.unrestricted && !set.access.allows(toolName(req), claims)) {
        deps.audit.accessDenied(whoOf(deps.callers, ex), toolName(req));
        return faultResponse(req.id, accessDenied(toolName(req)));
      }
      if (req.method === "tools/list") ex.answerEdit = set.access.toolsListEdit(claims);
      return undefined;
    }
    if (set.access.unrestricted) return undefined;
    const parsed = policyMessage(ex);
    // A body that is not JSON at all is the upstream's to refuse.
    if (!parsed || !ex.post) return undefined;
    // The answer edited is the one to this request's id, also when the body was read leniently.
    ex.post = { body: ex.post.body, parsed };
    const verdict = legacyAccess(parsed, set.access, claims);
    if (verdict.kind === "deny") {
      deps.audit.accessDenied(whoOf(deps.callers, ex), verdict.tool);
      return faultResponse(parsed.id, verdict.fault);
    }
    if (verdict.kind === "filter") ex.answerEdit = verdict.edit;
    return undefined;
  });
}
