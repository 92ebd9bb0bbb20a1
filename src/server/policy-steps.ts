// The policy steps of a route (pipeline.ts): rate limits, then access rules, decided where the request lands,
// before any upstream, task or other replica sees it. Both eras, every request.
import type { AuditLog } from "../log/audit.js";
import { accessDenied, noIdentity, unsupportedMediaType } from "../protocol/errors.js";
import { legacyAccess } from "../policy/legacy-access.js";
import type { Callers } from "../policy/sets/identity.js";
import { toolName } from "../tasks/promotion.js";
import { faultResponse } from "../web/json-response.js";
import { whoOf } from "./identify.js";
import { step, type Step } from "./pipeline.js";
import { limitRequest, type RouteLimitDeps } from "./rate-limit.js";

/**
 * Fail closed: while access rules or rate limits apply, a POST whose body the gateway did not parse as JSON-RPC
 * (its content type is not JSON) never reaches the upstream. It is refused (415), not forwarded: the gateway can
 * only vouch for what it parsed, and an upstream may read the same bytes differently (the Python SDK takes
 * `application/jsonp, application/json` for JSON and a body with NaN in it). Re-encoding the parsed message
 * instead would hand the upstream a body the client never sent. Without policy, such a POST passes through
 * untouched, as it always did: there is nothing to check.
 */
export function parsedUnderPolicyStep(): Step {
  return step("parsed under policy", (ex) => {
    const set = ex.set;
    if (ex.method !== "POST" || !set || ex.post?.parsed) return undefined;
    if (set.access.unrestricted && set.limits.empty) return undefined;
    return faultResponse(null, unsupportedMediaType(ex.header("content-type")));
  });
}

/** Rate limits (limits.rules), first of the policy: a limited request is answered before access rules, tasks or the upstream see it. */
export function limitStep(deps: RouteLimitDeps, upstream: string): Step {
  return step("rate limit", (ex) => {
    const set = ex.set;
    if (ex.method !== "POST" || !set) return undefined;
    ex.limitsDecided = true;
    const cls = ex.cls;
    if (cls?.era === "modern") {
      const parsed = ex.post?.parsed;
      return "message" in cls && parsed && !set.limits.empty
        ? limitRequest(deps, ex, set, upstream, parsed.message)
        : undefined;
    }
    const parsed = ex.post?.parsed;
    return parsed && !set.limits.empty ? limitRequest(deps, ex, set, upstream, parsed.message) : undefined;
  });
}

/**
 * Tool access: a denied call never reaches the upstream, and tools/list is filtered (the edit is left on the
 * Exchange for the endpoint). A modern request also needs the identity header when one is configured: without it
 * every such caller would share one identity, and so each other's tasks.
 */
export function accessStep(deps: { callers: Callers; audit: AuditLog }, upstream: string): Step {
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
        deps.audit.accessDenied(whoOf(deps.callers, ex), toolName(req), upstream);
        return faultResponse(req.id, accessDenied(toolName(req)));
      }
      if (req.method === "tools/list") ex.answerEdit = set.access.toolsListEdit(claims);
      return undefined;
    }
    const parsed = ex.post?.parsed;
    if (set.access.unrestricted || !parsed) return undefined;
    const verdict = legacyAccess(parsed, set.access, claims);
    if (verdict.kind === "deny") {
      deps.audit.accessDenied(whoOf(deps.callers, ex), verdict.tool, upstream);
      return faultResponse(parsed.id, verdict.fault);
    }
    if (verdict.kind === "filter") ex.answerEdit = verdict.edit;
    return undefined;
  });
}
