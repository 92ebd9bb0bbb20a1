// Each tracked tool's adaptive state (immediate, at the threshold, or plain, with its samples and quantiles),
// for /status and the mcp_gateway_adaptive_tool_state gauge. The history keys a named upstream's tool as
// <upstream>/<tool> (tasks/promotion.ts); its state is judged under that upstream's own policy.
import { DEFAULT_UPSTREAM_NAME } from "../config/schema.js";
import type { StatusAdaptiveTool } from "../metrics/status-page.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
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

export function adaptiveTools(history: LatencyHistory, live: LiveConfig): StatusAdaptiveTool[] {
  const upstreams = new Set(live.policies.keys());
  const stats = history.stats((key) => {
    const { upstream, tool } = splitKey(key, upstreams);
    return live.policies.get(upstream)?.current.tasks.decide(tool);
  }, MOST);
  return Object.entries(stats.tools).map(([key, e]) => ({
    ...splitKey(key, upstreams),
    state: e.state,
    samples: e.samples,
    p50Ms: e.p50Ms,
    p90Ms: e.p90Ms,
  }));
}
