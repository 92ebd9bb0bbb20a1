// What a reload (SIGHUP, --watch-config) may change while the gateway runs, and
// what needs a restart. The live settings are the policy: task rules and
// thresholds, task limits, tool access, rate limits and auth. They apply to requests that
// start after the reload; running tasks keep their TTL, poll interval and
// upstream call; and the named upstreams. Everything else (ports, the single upstream, store, sessions) is bound to
// sockets and connections made at start, and is named in a warning instead.
import type { GatewayConfig } from "./config/schema.js";

/** Settings (section.key, or a whole section) that a reload applies. */
const LIVE = new Set([
  "tasks.rules",
  "tasks.thresholdMs",
  "tasks.defaultTtlMs",
  "tasks.maxTtlMs",
  "tasks.pollIntervalMs",
  "tasks.adaptive",
  "tasks.minPollIntervalMs",
  "tasks.maxPollIntervalMs",
  "tasks.maxTasks",
  "tasks.maxTasksPerCaller",
  "tasks.maxResultBytes",
  "tasks.identityHeader",
  "access",
  "limits.rules",
  "limits.onStoreDown",
  "auth",
]);

/**
 * Named upstreams (upstreams.<name>) and federated endpoints (federated.<name>) are live too: a reload adds, removes and changes them (the gateway
 * builds and retires their routes), while the single `upstream` stays bound to its start.
 */
function isLive(setting: string): boolean {
  return LIVE.has(setting) || setting.startsWith("upstreams.") || setting.startsWith("federated.");
}

/** Sections compared whole: a change anywhere inside is one change. */
const WHOLE = new Set(["access", "auth"]);

export interface ReloadPlan {
  /** Changed settings the reload applies. */
  live: string[];
  /** Changed settings that keep their old value until a restart. */
  restart: string[];
}

function json(value: unknown): string {
  return JSON.stringify(value) ?? "undefined";
}

/** The settings that differ between two configs, as section.key (or section for WHOLE ones). */
export function changedSettings(before: GatewayConfig, after: GatewayConfig): string[] {
  const out: string[] = [];
  const a = before as unknown as Record<string, unknown>;
  const b = after as unknown as Record<string, unknown>;
  for (const section of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[section];
    const y = b[section];
    const objects = typeof x === "object" && x !== null && typeof y === "object" && y !== null && !Array.isArray(x);
    if (WHOLE.has(section) || !objects) {
      if (json(x) !== json(y)) out.push(section);
      continue;
    }
    const xs = x as Record<string, unknown>;
    const ys = y as Record<string, unknown>;
    for (const key of new Set([...Object.keys(xs), ...Object.keys(ys)])) {
      if (json(xs[key]) !== json(ys[key])) out.push(`${section}.${key}`);
    }
  }
  return out;
}

export function planReload(before: GatewayConfig, after: GatewayConfig): ReloadPlan {
  const changed = changedSettings(before, after);
  return { live: changed.filter(isLive), restart: changed.filter((k) => !isLive(k) && k !== "$schema") };
}

/** The config that runs after a reload: the new live settings on top of the old ones that need a restart. */
export function reloadedConfig(before: GatewayConfig, after: GatewayConfig, plan: ReloadPlan): GatewayConfig {
  const out = structuredClone(before) as unknown as Record<string, Record<string, unknown>>;
  const next = after as unknown as Record<string, Record<string, unknown>>;
  for (const key of plan.live) {
    const [section, field] = key.split(".") as [string, string | undefined];
    if (field === undefined) out[section] = next[section] as Record<string, unknown>;
    else {
      const target = (out[section] ??= {});
      if (next[section]?.[field] === undefined) delete target[field];
      else target[field] = next[section][field];
    }
  }
  return out as unknown as GatewayConfig;
}
