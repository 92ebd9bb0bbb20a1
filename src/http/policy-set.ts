// The policy a request is served under: task rules, tool access, the auth gate
// and the identity source. It is one immutable set, swapped whole on a reload
// (SIGHUP, --watch-config), so a request sees either the old policy or the new
// one, never half of each. Requests read `live.current` once, when they start.
import type { GatewayConfig } from "../config/schema.js";
import { AccessPolicy } from "../policy/access.js";
import { TaskPolicy } from "../policy/policy.js";
import { JwtVerifier } from "../auth/jwt-verifier.js";
import { resourceMetadataDocument, resourceMetadataUrl } from "../auth/challenge.js";
import type { AuthGate } from "./request-auth.js";
import type { Logger } from "../log/logger.js";

export interface PolicySet {
  tasks: TaskPolicy;
  access: AccessPolicy;
  /** The auth gate, when auth.jwt is configured. */
  auth: AuthGate | undefined;
  /** Lowercase header naming the caller (tasks.identityHeader), when configured and auth.jwt is not. */
  identityHeader: string | undefined;
}

export interface LivePolicy {
  current: PolicySet;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Builds the policy of a config. `previous` lets an unchanged auth block keep
 * its verifier, and with it the JWKS already fetched.
 */
export function buildPolicySet(
  config: GatewayConfig,
  opts: { previous?: { set: PolicySet; config: GatewayConfig } | undefined; now?: () => number; log?: Logger } = {},
): PolicySet {
  const { previous, now, log } = opts;
  const t = config.tasks;
  const tasks = new TaskPolicy(t.rules, {
    thresholdMs: t.thresholdMs,
    ttlMs: t.defaultTtlMs,
    maxTtlMs: t.maxTtlMs,
    pollIntervalMs: t.pollIntervalMs,
  });
  const access = new AccessPolicy(config.access);
  const auth = config.auth;
  let gate: AuthGate | undefined;
  if (auth) {
    const keep = previous?.set.auth && sameJson(previous.config.auth, auth) ? previous.set.auth : undefined;
    gate = keep ?? {
      verifier: new JwtVerifier({ config: auth.jwt, ...(now && { now }), ...(log && { log }) }),
      upstreamCredentials: auth.upstreamCredentials,
      upstreamIdentityHeader: auth.upstreamIdentityHeader.toLowerCase(),
      realm: auth.realm,
      resourceMetadataUrl: auth.resourceMetadata ? resourceMetadataUrl(auth.resourceMetadata.resource) : undefined,
      metadata: auth.resourceMetadata ? resourceMetadataDocument(auth.resourceMetadata) : undefined,
    };
  }
  return { tasks, access, auth: gate, identityHeader: gate ? undefined : t.identityHeader?.toLowerCase() };
}
