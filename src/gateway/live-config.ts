// What a reload changes in a running gateway: the config in force, the policy set (swapped whole: a request
// reads it once, at its start), and the two objects the engine and the latency history keep, changed in place
// for what starts afterwards. Running tasks keep going as they were.
import type { GatewayConfig, GatewayConfigInput } from "../config/schema.js";
import { takeDeprecations } from "../config/deprecations.js";
import { parseConfig } from "../config/validate.js";
import { upstreamEntries, type UpstreamEntry } from "../config/upstream-set.js";
import { buildAuthGate, buildPolicySet, type LivePolicy } from "../policy/sets/policy-set.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { Logger } from "../log/logger.js";
import { planReload, reloadedConfig, type ReloadPlan } from "../reload.js";
import type { TaskLimits } from "../tasks/engine.js";
import type { AdaptiveSettings } from "../tasks/latency-history.js";

export interface LiveConfig {
  /** The configuration in force: the start's, with the live settings of the last reload. */
  config: GatewayConfig;
  /** The auth gate in force (auth.jwt): one verifier, shared by every upstream's policy. */
  gate: AuthGate | undefined;
  /**
   * Each upstream's policy, by name. An upstream's object stays the same across reloads (its route holds it);
   * only its content is swapped. A removed upstream keeps its last policy, under which its tasks stay readable.
   */
  readonly policies: Map<string, LivePolicy>;
  /** Kept by the engine: new limits apply to tasks created afterwards. */
  readonly limits: TaskLimits;
  /** Kept by the latency history (adaptive promotion). */
  readonly adaptive: AdaptiveSettings;
}

function limitsOf(c: GatewayConfig): TaskLimits {
  return {
    maxTasks: c.tasks.maxTasks,
    maxTasksPerCaller: c.tasks.maxTasksPerCaller,
    maxResultBytes: c.tasks.maxResultBytes,
  };
}

function adaptiveOf(c: GatewayConfig): AdaptiveSettings {
  return {
    enabled: c.tasks.adaptive,
    minPollIntervalMs: c.tasks.minPollIntervalMs,
    maxPollIntervalMs: c.tasks.maxPollIntervalMs,
  };
}

export function liveConfig(config: GatewayConfig, opts: { now: () => number; log: Logger }): LiveConfig {
  const gate = buildAuthGate(config, opts);
  return {
    config,
    gate,
    policies: new Map(
      upstreamEntries(config).map((e) => [e.name, { current: buildPolicySet(config, { gate, upstream: e }) }]),
    ),
    limits: limitsOf(config),
    adaptive: adaptiveOf(config),
  };
}

/** The policy object of an upstream (made for one a reload added). */
export function policyOf(live: LiveConfig, entry: UpstreamEntry): LivePolicy {
  let policy = live.policies.get(entry.name);
  if (!policy) {
    policy = { current: buildPolicySet(live.config, { gate: live.gate, upstream: entry }) };
    live.policies.set(entry.name, policy);
  }
  return policy;
}

/**
 * Gateway.reload: applies a new configuration's policy to requests that start from now on. Settings that need
 * a restart keep their old value and are listed in the answer (and a warning).
 */
export function reloadLive(
  live: LiveConfig,
  input: GatewayConfigInput | GatewayConfig,
  opts: { now: () => number; log: Logger },
): ReloadPlan {
  const { log } = opts;
  const next = parseConfig(input);
  for (const message of takeDeprecations()) log.warn(message);
  const plan = planReload(live.config, next);
  const after = reloadedConfig(live.config, next, plan);
  // Built before anything is swapped: a policy that cannot be built leaves the old one whole.
  const gate = buildAuthGate(after, { previous: { gate: live.gate, config: live.config }, ...opts });
  const sets = upstreamEntries(after).map((e) => [e, buildPolicySet(after, { gate, upstream: e })] as const);
  live.config = after;
  live.gate = gate;
  for (const [entry, set] of sets) {
    const policy = live.policies.get(entry.name);
    if (policy) policy.current = set;
    else live.policies.set(entry.name, { current: set });
  }
  Object.assign(live.limits, limitsOf(after));
  Object.assign(live.adaptive, adaptiveOf(after));
  if (plan.restart.length > 0)
    log.warn("configuration reloaded; these settings keep their old value until a restart", {
      settings: plan.restart.join(", "),
    });
  log.info("configuration reloaded", { applied: plan.live.join(", ") || "(no policy change)" });
  return plan;
}
