// Adaptive promotion's latency history: one for the gateway's life (a reload changes its settings in place),
// shared with the other replicas through the store when there are any.
import type { Logger } from "../log/logger.js";
import type { LatencyShare } from "../store/latency-share.js";
import { LatencyHistory, type AdaptiveSettings } from "../tasks/latency-history.js";

export function latencyHistory(parts: {
  /** The live settings (live-config.ts), kept by the history. */
  settings: AdaptiveSettings;
  share: LatencyShare | undefined;
  log: Logger;
  now: () => number;
}): LatencyHistory {
  const { log } = parts;
  return new LatencyHistory({
    now: parts.now,
    settings: parts.settings,
    share: parts.share,
    onShareError: (err) =>
      log.warn("could not share the latency history (retried at the next sync)", { cause: err.message }),
  });
}
