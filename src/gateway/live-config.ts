// What a reload changes in a running gateway: the config in force, the policy set (swapped whole: a request
// reads it once, at its start), and the two objects the engine and the latency history keep, changed in place
// for what starts afterwards. Running tasks keep going as they were.
import type { GatewayConfig, GatewayConfigInput } from "../config/schema.js";
import { takeDeprecations } from "../config/deprecations.js";
import { parseConfig } from "../config/validate.js";
import { buildPolicySet, type LivePolicy } from "../http/policy-set.js";
import type { Logger } from "../log/logger.js";
import { planReload, reloadedConfig, type ReloadPlan } from "../reload.js";
import type { TaskLimits } from "../tasks/engine.js";
import type { AdaptiveSettings } from "../tasks/latency-history.js";

export interface LiveConfig {
  /** The configuration in force: the start's, with the live settings of the last reload. */
  config: GatewayConfig;
  readonly policy: LivePolicy;
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
  return {
    config,
    policy: { current: buildPolicySet(config, opts) },
    limits: limitsOf(config),
    adaptive: adaptiveOf(config),
  };
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
  const policy = buildPolicySet(after, { previous: { set: live.policy.current, config: live.config }, ...opts });
  live.config = after;
  live.policy.current = policy;
  Object.assign(live.limits, limitsOf(after));
  Object.assign(live.adaptive, adaptiveOf(after));
  if (plan.restart.length > 0)
    log.warn("configuration reloaded; these settings keep their old value until a restart", {
      settings: plan.restart.join(", "),
    });
  log.info("configuration reloaded", { applied: plan.live.join(", ") || "(no policy change)" });
  return plan;
}
