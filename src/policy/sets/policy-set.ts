// The policy a request is served under: task rules, tool access, rate limits, the auth gate
// and the identity source. It is one immutable set, swapped whole on a reload
// (SIGHUP, --watch-config), so a request sees either the old policy or the new
// one, never half of each. Requests read `live.current` once, when they start.
import { DEFAULT_UPSTREAM_NAME, type GatewayConfig } from "../../config/schema.js";
import { globToRegExp } from "../../config/glob.js";
import type { UpstreamEntry } from "../../config/upstream-set.js";
import { AccessPolicy } from "../access.js";
import { TaskPolicy } from "../policy.js";
import { RateLimitRules } from "../../ratelimit/rules.js";
import { JwtVerifier } from "../../auth/jwt-verifier.js";
import { resourceMetadataDocument, resourceMetadataUrl } from "../../auth/challenge.js";
import type { AuthGate } from "./auth-gate.js";
import type { Logger } from "../../log/logger.js";
import { RouteCatalog } from "../../catalog/route-catalog.js";

export interface PolicySet {
  tasks: TaskPolicy;
  access: AccessPolicy;
  /** The rate-limit rules meant for this upstream (limits.rules), and what a store that is down means. */
  limits: RateLimitRules;
  /** The auth gate, when auth.jwt is configured. */
  auth: AuthGate | undefined;
  /** Lowercase header naming the caller (tasks.identityHeader), when configured and auth.jwt is not. */
  identityHeader: string | undefined;
  /** Without auth.jwt: true when this upstream's block says drop (upstreams.<name>.auth.upstreamCredentials). */
  dropAuthorization: boolean;
  /** Tool and prompt overrides and argument validation (upstreams.<name>.tools, .prompts, .validateArguments). */
  catalog: RouteCatalog;
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
/** The global rules meant for `upstream`: those without an upstream glob, and those whose glob matches its name. */
function rulesFor<R extends { upstream?: string | undefined }>(rules: readonly R[], upstream: string): R[] {
  return rules.filter((r) => r.upstream === undefined || globToRegExp(r.upstream).test(upstream));
}

/**
 * The auth gate of a config (auth.jwt), or undefined without one. `previous` (the gate and the config it was
 * built from) lets an unchanged auth block keep its verifier, and with it the JWKS already fetched.
 */
export function buildAuthGate(
  config: GatewayConfig,
  opts: {
    previous?: { gate: AuthGate | undefined; config: GatewayConfig } | undefined;
    now?: () => number;
    log?: Logger;
  } = {},
): AuthGate | undefined {
  const { previous, now, log } = opts;
  const auth = config.auth;
  if (!auth) return undefined;
  if (previous?.gate && sameJson(previous.config.auth, auth)) return previous.gate;
  return {
    verifier: new JwtVerifier({ config: auth.jwt, ...(now && { now }), ...(log && { log }) }),
    upstreamCredentials: auth.upstreamCredentials,
    upstreamIdentityHeader: auth.upstreamIdentityHeader.toLowerCase(),
    realm: auth.realm,
    resourceMetadataUrl: auth.resourceMetadata ? resourceMetadataUrl(auth.resourceMetadata.resource) : undefined,
    metadata: auth.resourceMetadata ? resourceMetadataDocument(auth.resourceMetadata) : undefined,
  };
}

/**
 * The policy of a config for one upstream (the single one, default, when not given): its own rules first,
 * then the global rules meant for it. `gate` is the config's auth gate (buildAuthGate), shared by every
 * upstream's set so there is one verifier; built here when not given.
 */
export function buildPolicySet(
  config: GatewayConfig,
  opts: { gate?: AuthGate | undefined; upstream?: UpstreamEntry | undefined; now?: () => number; log?: Logger } = {},
): PolicySet {
  const { upstream } = opts;
  const name = upstream?.name ?? DEFAULT_UPSTREAM_NAME;
  const own = upstream?.own;
  const t = config.tasks;
  const tasks = new TaskPolicy([...(own?.tasks?.rules ?? []), ...rulesFor(t.rules, name)], {
    thresholdMs: own?.tasks?.thresholdMs ?? t.thresholdMs,
    ttlMs: t.defaultTtlMs,
    maxTtlMs: t.maxTtlMs,
    pollIntervalMs: t.pollIntervalMs,
  });
  const access = new AccessPolicy({
    default: own?.access?.default ?? config.access.default,
    rules: [...(own?.access?.rules ?? []), ...rulesFor(config.access.rules, name)],
  });
  const credentials = own?.auth?.upstreamCredentials;
  let gate = "gate" in opts ? opts.gate : buildAuthGate(config, opts);
  // An upstream's own credentials setting: the same verifier, another rule for what goes upstream.
  if (gate && credentials !== undefined && credentials !== gate.upstreamCredentials)
    gate = { ...gate, upstreamCredentials: credentials };
  return {
    tasks,
    access,
    limits: new RateLimitRules(config.limits, name),
    auth: gate,
    identityHeader: gate ? undefined : t.identityHeader?.toLowerCase(),
    dropAuthorization: !gate && credentials === "drop",
    catalog: new RouteCatalog(own?.tools, own?.prompts, own?.validateArguments ?? "off", opts.now),
  };
}
