// Each tracked tool's adaptive state (immediate, at the threshold, or plain, with its samples and quantiles),
// for /status and the mcp_gateway_adaptive_tool_state gauge. The history keys a named upstream's tool as
// <upstream>/<tool> (tasks/promotion.ts); its state is judged under that upstream's own policy.
import { DEFAULT_UPSTREAM_NAME } from "../config/schema.js";
import type { StatusAdaptiveTool } from "../metrics/status-page.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { Decision } from "../policy/policy.js";
import { globToRegExp } from "../config/glob.js";
import { upstreamEntries } from "../config/upstream-set.js";
import type { LiveConfig } from "./live-config.js";

/** The most tools reported: the most recently used. */
const MOST = 100;

function splitKey(key: string, upstreams: ReadonlySet<string>): { upstream: string; tool: string } {
  const slash = key.indexOf("/");
  const upstream = slash === -1 ? undefined : key.slice(0, slash);
  // A tool whose own name has a "/" on the single upstream: no configured upstream by that prefix.
  if (upstream === undefined || !upstreams.has(upstream)) return { upstream: DEFAULT_UPSTREAM_NAME, tool: key };
  return { upstream, tool: key.slice(slash + 1) };
}

/**
 * The decision a history key's tool gets under its upstream's policy; with `ruled`, only for a tool a task
 * rule names (a global rule meant for that upstream, or one of its own), as gateway.stats() reports them.
 */
export function keyedDecision(live: LiveConfig, ruled: boolean): (key: string) => Decision | undefined {
  const upstreams = new Set(live.policies.keys());
  const own = new Map(upstreamEntries(live.config).map((e) => [e.name, e.own?.tasks?.rules ?? []]));
  return (key) => {
    const { upstream, tool } = splitKey(key, upstreams);
    if (ruled) {
      const rules = [
        ...(own.get(upstream) ?? []),
        ...live.config.tasks.rules.filter((r) => r.upstream === undefined || globToRegExp(r.upstream).test(upstream)),
      ];
      if (!rules.some((r) => globToRegExp(r.tool).test(tool))) return undefined;
    }
    return live.policies.get(upstream)?.current.tasks.decide(tool);
  };
}

export function adaptiveTools(history: LatencyHistory, live: LiveConfig): StatusAdaptiveTool[] {
  const upstreams = new Set(live.policies.keys());
  const stats = history.stats(keyedDecision(live, false), MOST);
  return Object.entries(stats.tools).map(([key, e]) => ({
    ...splitKey(key, upstreams),
    state: e.state,
    samples: e.samples,
    p50Ms: e.p50Ms,
    p90Ms: e.p90Ms,
  }));
}
