// Rate limits at the route (limits.rules): one check per client request, before anything else is done with it
// (access rules, tasks, the upstream), on both eras and every route of an upstream, federated members
// included (a federated endpoint's member request comes through its member's route, under that upstream's
// name and with the tool's own name). A limited request is answered 429 here, with Retry-After and the
// RateLimit fields, and an audit line; it never reaches the upstream, and a limited tasks/get never reads
// the task. A request another replica forwarded (task control, an MRTR retry) was checked where it arrived.
// The lean tasks/get path (endpoints/task-poll.ts) checks a poll itself and leaves its verdict on the Exchange
// when the full route is to answer it, so a poll is never counted twice.
import type { AuditLog } from "../log/audit.js";
import { isRecord } from "../protocol/json.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { rateLimited, rateLimitUnavailable } from "../protocol/errors.js";
import type { RateLimiter, RateVerdict } from "../ratelimit/limiter.js";
import { rateLimitHeaders } from "../ratelimit/headers.js";
import { faultResponse } from "../web/json-response.js";
import type { Callers } from "../policy/sets/identity.js";
import type { PolicySet } from "../policy/sets/policy-set.js";
import type { Exchange } from "./exchange.js";
import { callerOf, whoOf } from "./identify.js";

export interface RouteLimitDeps {
  limiter: RateLimiter;
  callers: Callers;
  audit: AuditLog;
}

/** The method, id and tool of one JSON-RPC request; undefined for anything else (a notification, an answer). */
function requestOf(message: unknown): { method: string; id: JsonRpcId; tool: string | undefined } | undefined {
  if (!isRecord(message) || typeof message.method !== "string" || !("id" in message)) return undefined;
  const id = typeof message.id === "string" || typeof message.id === "number" ? message.id : null;
  const tool =
    message.method === "tools/call" && isRecord(message.params) && typeof message.params.name === "string"
      ? message.params.name
      : undefined;
  return { method: message.method, id, tool };
}

/**
 * The answer to a request over its limits (or refused because they cannot be checked), or undefined when it
 * may go on. `message`: the parsed body (a batch is checked request by request; the first refused one refuses it).
 */
export function limitRequest(
  deps: RouteLimitDeps,
  ex: Exchange,
  set: PolicySet,
  upstream: string,
  message: unknown,
): Response | undefined | Promise<Response | undefined> {
  const given = ex.rateVerdict;
  if (given) {
    const req = requestOf(message);
    return req && answer(deps, ex, upstream, req, given);
  }
  // A request another replica forwarded with its verdict was counted where it landed: once, never twice.
  if (set.limits.empty || ex.forwarded?.limitsDecided) return undefined;
  if (Array.isArray(message)) return limitBatch(deps, ex, set, upstream, message);
  const req = requestOf(message);
  if (!req) return undefined;
  const verdict = check(deps, ex, set, upstream, req);
  if (verdict === undefined) return undefined;
  if (verdict instanceof Promise)
    return verdict.then((v) => {
      ex.rateVerdict = v;
      return answer(deps, ex, upstream, req, v);
    });
  ex.rateVerdict = verdict;
  return answer(deps, ex, upstream, req, verdict);
}

async function limitBatch(
  deps: RouteLimitDeps,
  ex: Exchange,
  set: PolicySet,
  upstream: string,
  batch: readonly unknown[],
): Promise<Response | undefined> {
  for (const message of batch) {
    const req = requestOf(message);
    if (!req) continue;
    const verdict = await check(deps, ex, set, upstream, req);
    const refused = verdict && answer(deps, ex, upstream, { ...req, id: null }, verdict);
    if (refused) return refused;
  }
  return undefined;
}

function check(
  deps: RouteLimitDeps,
  ex: Exchange,
  set: PolicySet,
  upstream: string,
  req: { method: string; tool: string | undefined },
): RateVerdict | Promise<RateVerdict> | undefined {
  return deps.limiter.check(set.limits, {
    method: req.method,
    tool: req.tool,
    upstream,
    claims: ex.verified?.claims,
    caller: () => callerOf(deps.callers, ex),
  });
}

function answer(
  deps: RouteLimitDeps,
  ex: Exchange,
  upstream: string,
  req: { method: string; id: JsonRpcId; tool: string | undefined },
  verdict: RateVerdict,
): Response | undefined {
  if (verdict.kind === "allowed") return undefined;
  if (verdict.kind === "unavailable") return faultResponse(req.id, rateLimitUnavailable());
  deps.audit.rateLimited(whoOf(deps.callers, ex), {
    rule: verdict.rule.name,
    method: req.method,
    tool: req.tool,
    upstream,
    retryAfterMs: verdict.retryAfterMs,
  });
  const { policy, state } = rateLimitHeaders(verdict.rules);
  return faultResponse(req.id, rateLimited(verdict.rule.name, verdict.retryAfterMs, policy, state));
}
