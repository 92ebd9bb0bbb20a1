// The steps every endpoint's pipeline is built from (pipeline.ts), each a small function over the Exchange.
// An endpoint picks the ones that concern it, in the pipeline's order, and gives each what it needs (its policy,
// its session routing): the checks themselves are written once, here.
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { isOriginAllowed } from "../protocol/origin.js";
import { methodNotAllowed, originNotAllowed } from "../protocol/errors.js";
import { classifyPost } from "../protocol/modern-request.js";
import { TASK_METHODS } from "../protocol/tasks-extension.js";
import { methodClass } from "../metrics/labels.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { LivePolicy } from "../policy/sets/policy-set.js";
import { faultResponse } from "../web/json-response.js";
import type { Exchange } from "./exchange.js";
import { describeMcpRequest } from "./observe.js";
import { step, type Step } from "./pipeline.js";
import { readPost } from "./read-post.js";
import { authenticate, dropAuthorization, unverifiedUpstream, verifiedUpstream } from "./request-auth.js";

/** Origin: a browser page of another origin is refused (403), before anything else is done for it. */
export function originStep(server: GatewayConfig["server"], log: Logger): Step {
  return step("origin", (ex) => {
    const origin = ex.header("origin");
    if (isOriginAllowed(origin, server)) return undefined;
    log.warn("rejected request from a disallowed origin", { origin });
    return faultResponse(null, originNotAllowed(origin ?? ""));
  });
}

/** The HTTP methods the endpoint serves; anything else is 405 with Allow. */
export function methodStep(allowed: ReadonlySet<string>, allow: string): Step {
  return step("method", (ex) => (allowed.has(ex.method) ? undefined : faultResponse(null, methodNotAllowed(allow))));
}

/** The policy the request is served under: read once, so a reload meanwhile changes nothing for it. */
export function policyStep(live: LivePolicy): Step {
  return step("policy", (ex) => {
    ex.set = live.current;
    return undefined;
  });
}

/**
 * Authentication (auth.jwt): every method but a CORS preflight needs a verified token. `gate`: the gate in force
 * for this endpoint (a route's policy set, or the gateway's for a federated endpoint).
 */
export function authenticateStep(gate: (ex: Exchange) => AuthGate | undefined, log: Logger): Step {
  return step("authenticate", (ex) => {
    const g = gate(ex);
    if (!g || ex.method === "OPTIONS") return undefined;
    return authenticate(ex, g, log);
  });
}

/**
 * What the upstream sees of the caller's credentials (auth.upstreamCredentials, or an upstream's `drop` without
 * auth): computed from the client's headers once the caller is known, and never the source of who the caller is.
 */
export function upstreamViewStep(gate: (ex: Exchange) => AuthGate | undefined): Step {
  return step("upstream view", (ex) => {
    const g = gate(ex);
    if (g) {
      if (ex.verified) verifiedUpstream(ex, g);
      else unverifiedUpstream(ex, g);
    } else if (ex.set?.dropAuthorization) dropAuthorization(ex);
    return undefined;
  });
}

/** A POST's body, read (bounded) and parsed once; other methods have none. */
export function bodyStep(maxBodyBytes: number, log: Logger): Step {
  return step("body", (ex) => (ex.method === "POST" ? readPost(ex, maxBodyBytes, log) : undefined));
}

/** The message's era and validity (classifyPost), the request counter's labels, and the span's MCP attributes. */
export function classifyStep(): Step {
  return step("classify", (ex) => {
    const parsed = ex.post?.parsed;
    if (!parsed) return undefined;
    describeMcpRequest(ex, parsed.message);
    ex.cls = classifyPost(parsed.message, (name) => ex.header(name), TASK_METHODS);
    if (ex.seen) {
      ex.seen.era = ex.cls.era;
      ex.seen.method = methodClass(parsed.message);
    }
    return undefined;
  });
}
