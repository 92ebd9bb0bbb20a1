// Gateway.stats: gauges for operators and tests, read when asked.
import { globToRegExp } from "../config/glob.js";
import type { AdaptiveStats } from "../tasks/latency-history.js";
import type { GatewayParts } from "./parts.js";

export interface GatewayStats {
  /**
   * Tasks in the store, the bytes they account for, the unfinished ones (over every process sharing
   * the store), and the unfinished ones whose upstream call runs in this process.
   */
  tasks: { stored: number; bytes: number; unfinished: number; runningHere: number };
  /** Legacy upstream sessions open on behalf of modern clients. */
  upstreamSessions: number;
  /** Child processes of a stdio upstream (upstream.command) alive now; absent for an HTTP upstream. */
  upstreamProcesses?: number;
  /** MRTR exchanges waiting for a client's retry. */
  pendingInputs: number;
  /**
   * Adaptive promotion (tasks.adaptive): how tools/call were decided since start (promoted at once, at the
   * threshold, plain; always/required as eager), the exchanges with the shared store, and the current estimate
   * of each tracked tool that a task rule names (its glob matches; at most 100, most recently used).
   */
  adaptive: AdaptiveStats;
}

export async function gatewayStats(
  parts: Pick<GatewayParts, "state" | "engine" | "history" | "live" | "route">,
): Promise<GatewayStats> {
  const { engine, live, route } = parts;
  const stored = await parts.state.store.stats();
  // Estimates for the tools the config names: a tracked tool that a task rule's glob matches.
  const rules = live.config.tasks.rules.map((r) => globToRegExp(r.tool));
  const policy = live.policy.current.tasks;
  const named = (tool: string) => (rules.some((re) => re.test(tool)) ? policy.decide(tool) : undefined);
  return {
    tasks: { ...stored, runningHere: engine.runningHere },
    upstreamSessions: route.pool.size,
    ...(route.processes && { upstreamProcesses: route.processes() }),
    pendingInputs: route.bridge.pendingExchanges,
    adaptive: parts.history.stats(named),
  };
}
