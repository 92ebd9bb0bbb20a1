// The auth gate (auth.jwt): every request to the MCP endpoint carries a bearer token that verifies, or gets 401
// with an RFC 6750 challenge (503 when the keys cannot be fetched; nothing is ever accepted unverified). What it
// learns stays on the Exchange for the steps after it:
//   - the verified caller (identity, subject, claims) binds tasks and MRTR state and feeds claim-matched rules;
//   - the headers the upstream is to see, per auth.upstreamCredentials. The MCP authorization spec forbids
//     passing the client's token through to another service, so by default it is dropped.
import { authUnavailable, unauthorized } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { bearerChallenge } from "../auth/challenge.js";
import { parseBearer, type AuthOutcome } from "../auth/jwt-verifier.js";
import type { Logger } from "../log/logger.js";
import { verifiedFrom, type AuthGate } from "../policy/sets/auth-gate.js";
import type { Exchange } from "./exchange.js";

/**
 * The client's headers as the upstream should see them: the Authorization header dropped (unless forwarded),
 * and in "identity" mode the subject in the configured header, replacing any the client sent, which could be forged.
 */
function upstreamHeaders(raw: readonly string[], gate: AuthGate, subject: string): string[] {
  if (gate.upstreamCredentials === "forward") return raw as string[];
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (name === "authorization" || name === gate.upstreamIdentityHeader) continue;
    out.push(raw[i] as string, raw[i + 1] as string);
  }
  if (gate.upstreamCredentials === "identity") out.push(gate.upstreamIdentityHeader, subject);
  return out;
}

/**
 * A request the gate lets through unverified (a CORS preflight): the upstream gets neither the token nor the
 * client's own upstream identity header (a forgery, since no subject was verified), unless tokens are forwarded.
 */
export function unverifiedUpstream(ex: Exchange, gate: AuthGate): void {
  if (gate.upstreamCredentials !== "forward")
    ex.upstreamHeaderList = upstreamHeaders(ex.upstreamHeaders(), { ...gate, upstreamCredentials: "drop" }, "");
}

/** Without auth, an upstream whose block says drop gets no Authorization header from the client. */
export function dropAuthorization(ex: Exchange): void {
  const raw = ex.upstreamHeaders();
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2)
    if ((raw[i] as string).toLowerCase() !== "authorization") out.push(raw[i] as string, raw[i + 1] as string);
  ex.upstreamHeaderList = out;
}

/** Verifies the request's token for `gate` before the pipeline runs (the lean path); the outcome stays on the Exchange. */
export async function verifyEarly(ex: Exchange, gate: AuthGate): Promise<AuthOutcome> {
  const outcome = await gate.verifier.verify(ex.header("authorization"));
  ex.earlyAuth = { gate, outcome };
  return outcome;
}

/** Verifies the request's token; undefined when it may go on, else the answer to send. */
export async function authenticate(ex: Exchange, gate: AuthGate, log: Logger): Promise<Response | undefined> {
  const authorization = ex.header("authorization");
  const earlier = ex.earlyAuth;
  // Only under the same gate: a reload between the two (another verifier) means verifying again.
  const outcome = earlier?.gate === gate ? earlier.outcome : await gate.verifier.verify(authorization);
  if (!outcome.ok) {
    if (outcome.status === 503) {
      log.warn("cannot verify access tokens: JWKS unavailable", { cause: outcome.description });
      return faultResponse(null, authUnavailable(outcome.description));
    }
    // Which check failed is worth a debug line for operators; the token itself never is.
    log.debug("access token refused", { error: outcome.error, description: outcome.description });
    // RFC 6750 §3.1: a request with no bearer credentials at all (none, or another scheme) gets the bare
    // challenge, without an error code.
    const parsed = parseBearer(authorization);
    const bare = outcome.error === "invalid_request" && !parsed.ok && !parsed.credentials;
    const challenge = bearerChallenge({
      realm: gate.realm,
      resourceMetadata: gate.resourceMetadataUrl,
      ...(bare ? {} : { error: outcome.error, errorDescription: outcome.description }),
    });
    return faultResponse(null, unauthorized(outcome.description, challenge));
  }
  ex.verified = verifiedFrom(outcome.principal);
  return undefined;
}

/** What the upstream sees of a request whose token verified, per the gate's upstreamCredentials. */
export function verifiedUpstream(ex: Exchange, gate: AuthGate): void {
  if (gate.upstreamCredentials !== "forward" && ex.verified)
    ex.upstreamHeaderList = upstreamHeaders(ex.upstreamHeaders(), gate, ex.verified.subject);
}
