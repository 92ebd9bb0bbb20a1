// The auth gate (auth.jwt): every request to the MCP endpoint carries a bearer
// token that verifies, or gets 401 with an RFC 6750 challenge (503 when the
// keys cannot be fetched; nothing is ever accepted unverified). What it learns
// stays on the Hono context for the layers after it:
//   - the verified caller (identity, subject, claims) binds tasks and MRTR state
//     and feeds claim-matched rules;
//   - the headers the upstream is to see, per auth.upstreamCredentials. The MCP
//     authorization spec forbids passing the client's token through to another
//     service, so by default it is dropped.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import type { Claims } from "../policy/claims.js";
import { authUnavailable, unauthorized } from "../protocol/errors.js";
import { faultResponse } from "../web/json-response.js";
import { bearerChallenge } from "../auth/challenge.js";
import { parseBearer, type AuthOutcome, type JwtVerifier, type Principal } from "../auth/jwt-verifier.js";
import type { Logger } from "../log/logger.js";
import { rawRequestHeaders, requestHeader, UPSTREAM_HEADERS_KEY, type NodeEnv } from "./node-env.js";

/** Who a verified token says is calling. `identity` is stable across token refreshes (issuer + identity claim). */
export interface VerifiedCaller {
  identity: string;
  /** The identity claim's value: what audit lines and the upstream identity header carry. */
  subject: string;
  claims: Claims;
}

type UpstreamCredentials = "forward" | "drop" | "identity";

export interface AuthGate {
  verifier: JwtVerifier;
  upstreamCredentials: UpstreamCredentials;
  /** Lowercase header name that carries the subject upstream in "identity" mode. */
  upstreamIdentityHeader: string;
  realm: string | undefined;
  /** The RFC 9728 metadata document's URL, named in every challenge. */
  resourceMetadataUrl: string | undefined;
  /** The RFC 9728 protected-resource metadata document, when auth.resourceMetadata configures it. */
  metadata: Readonly<Record<string, unknown>> | undefined;
}

const CALLER_KEY = "mcpGatewayVerifiedCaller";

/** What the routes keep of a verified token's principal. */
export function verifiedFrom(principal: Principal): VerifiedCaller {
  return { identity: principal.identity, subject: principal.subject, claims: principal.claims };
}

/** The verified caller of this request, when auth.jwt is on. */
export function verifiedCaller(c: Context): VerifiedCaller | undefined {
  return c.get(CALLER_KEY) as VerifiedCaller | undefined;
}

/**
 * The client's headers as the upstream should see them: the Authorization
 * header dropped (unless forwarded), and in "identity" mode the subject in the
 * configured header, replacing any the client sent, which could be forged.
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
 * A request the gate lets through unverified (a CORS preflight): the upstream gets neither the token nor
 * the client's own upstream identity header (a forgery, since no subject was verified), unless tokens are forwarded.
 */
export function unverifiedUpstream(c: Context, env: NodeEnv | undefined, gate: AuthGate): void {
  if (gate.upstreamCredentials !== "forward")
    c.set(
      UPSTREAM_HEADERS_KEY,
      upstreamHeaders(rawRequestHeaders(c, env), { ...gate, upstreamCredentials: "drop" }, ""),
    );
}

/**
 * Verifications made before Hono saw the request (the lean tasks/get path, http/task-poll-path.ts), for
 * the full route to use when the request is handed to it: a token is checked once per request.
 */
const verifiedEarlier = new WeakMap<IncomingMessage, { gate: AuthGate; outcome: AuthOutcome }>();

/** Verifies a Node request's token for `gate`; the outcome stays with the request for `authenticate`. */
export async function verifyEarly(incoming: IncomingMessage, gate: AuthGate): Promise<AuthOutcome> {
  const header = incoming.headers.authorization;
  const outcome = await gate.verifier.verify(header);
  verifiedEarlier.set(incoming, { gate, outcome });
  return outcome;
}

/** Verifies the request's token; undefined when it may go on, else the answer to send. */
export async function authenticate(
  c: Context,
  env: NodeEnv | undefined,
  gate: AuthGate,
  log: Logger,
): Promise<Response | undefined> {
  const authorization = requestHeader(c, env, "authorization");
  const earlier = env && verifiedEarlier.get(env.incoming);
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
  const { principal } = outcome;
  c.set(CALLER_KEY, verifiedFrom(principal));
  if (gate.upstreamCredentials !== "forward")
    c.set(UPSTREAM_HEADERS_KEY, upstreamHeaders(rawRequestHeaders(c, env), gate, principal.subject));
  return undefined;
}
