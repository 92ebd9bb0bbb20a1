// Gateway.stats: gauges for operators and tests, read when asked.
import { keyedDecision } from "./adaptive-state.js";
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
  /** Of those, the warm ones waiting for a session (upstream.warmProcesses); absent for an HTTP upstream. */
  upstreamWarmProcesses?: number;
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
  parts: Pick<GatewayParts, "state" | "engine" | "history" | "live" | "upstreams">,
): Promise<GatewayStats> {
  const { engine, live, upstreams } = parts;
  const routes = upstreams.all();
  const stdio = routes.filter((r) => r.processes);
  const stored = await parts.state.store.stats();
  // Estimates for the tools the config names: a tracked tool that a task rule's glob matches (a named
  // upstream's tool under that upstream's rules; the history keys it <upstream>/<tool>).
  const named = keyedDecision(live, true);
  return {
    tasks: { ...stored, runningHere: engine.runningHere },
    upstreamSessions: routes.reduce((n, r) => n + r.pool.size, 0),
    ...(stdio.length > 0 && {
      upstreamProcesses: stdio.reduce((n, r) => n + (r.processes?.() ?? 0), 0),
      upstreamWarmProcesses: stdio.reduce((n, r) => n + (r.warmProcesses?.() ?? 0), 0),
    }),
    pendingInputs: routes.reduce((n, r) => n + r.bridge.pendingExchanges, 0),
    adaptive: parts.history.stats(named),
  };
}
