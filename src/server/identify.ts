// The caller of a request, as every endpoint identifies it (calls/caller.ts): computed once per request from
// what the client sent and the policy in force (policy/sets/identity.ts Callers), and kept on the Exchange.
import type { Caller } from "../calls/caller.js";
import { auditSubject, credentialHeaders, type Callers } from "../policy/sets/identity.js";
import type { PolicySet } from "../policy/sets/policy-set.js";
import { traceHeaders } from "../telemetry/trace.js";
import type { Exchange } from "./exchange.js";

/** The policy set the request is served under (set by the endpoint's first step). */
function policyOf(ex: Exchange): PolicySet {
  if (!ex.set) throw new Error("the request's policy is read before its endpoint set it");
  return ex.set;
}

/**
 * The caller's identity digest, from what the client sent: its verified token, its identity header, or its own
 * credential headers. Never from what the upstream is to see: auth.upstreamCredentials (drop, identity, forward)
 * and an upstream's `drop` change the upstream's view of the request, not who is calling.
 */
export function callerOf(callers: Callers, ex: Exchange): string {
  // A verified caller is who its token says under any policy (a federated endpoint has none of its own).
  return callers.digest(
    ex.verified,
    ex.verified ? ex.set : policyOf(ex),
    (name) => ex.header(name),
    () => credentialHeaders(ex.clientHeaders()),
  );
}

/** How audit lines name the caller (never a token). */
function subjectOf(ex: Exchange): string | undefined {
  return auditSubject(ex.verified, policyOf(ex), (name) => ex.header(name));
}

/** Who, for an audit line. */
export function whoOf(callers: Callers, ex: Exchange): { subject: string | undefined; caller: string } {
  return { subject: subjectOf(ex), caller: callerOf(callers, ex) };
}

/**
 * The caller of every route (calls/caller.ts), computed one way for all of them: the identity digest, how audit
 * lines name it, the verified claims, the credential headers that travel on upstream sessions (with the verified
 * subject's header in auth.upstreamCredentials "identity"), and the headers as the upstream sees them. `signal`:
 * the route's own (it decides when a request's end matters, and may stop it itself).
 */
export function identify(callers: Callers, ex: Exchange, signal: AbortSignal): Caller {
  const set = policyOf(ex);
  const raw = ex.upstreamHeaders();
  const credentials = credentialHeaders(
    raw,
    set.auth?.upstreamCredentials === "identity" ? set.auth.upstreamIdentityHeader : undefined,
  );
  const caller = callerOf(callers, ex);
  const verified = ex.verified;
  return {
    caller,
    subject: subjectOf(ex),
    claims: verified?.claims,
    // A caller whose credentials the upstream does not see (a verified token not forwarded, or an upstream's
    // drop) never shares a pooled upstream session with another caller: the upstream could not tell them apart.
    partition: verified || set.dropAuthorization ? caller : undefined,
    credentialHeaders: credentials,
    upstreamHeaders: raw,
    traceHeaders: traceHeaders(raw),
    signal,
  };
}
