// Pinned definitions (docs/pinning.md): the registry every route shares, over the shared store's pins (Redis
// with replicas) or this process's own, with its events sent to the log, the audit trail and the metrics.
import { PinRegistry, type PinningSettings } from "../catalog/pin-registry.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { PrometheusMetrics } from "../metrics/prometheus.js";
import type { StatusPinChange } from "../metrics/status-page.js";
import { MemoryPinStore } from "../store/pins.js";
import type { LiveConfig } from "./live-config.js";
import type { TaskState } from "./shared-state.js";

export function pinRegistry(parts: {
  live: LiveConfig;
  state: TaskState;
  metrics: PrometheusMetrics | undefined;
  audit: AuditLog;
  log: Logger;
  now: () => number;
}): PinRegistry {
  const { live, metrics, audit, log } = parts;
  const store = parts.state.shared?.pins ?? new MemoryPinStore();
  // Read from the config in force: a reload changes an upstream's policy and pins for the next request.
  const settingsOf = (upstream: string): PinningSettings | undefined => {
    const block = live.config.upstreams[upstream];
    if (!block?.pinning) return undefined;
    return { policy: block.pinning, pins: block.pins ?? {}, listMaxAgeMs: block.pinningListMaxAgeMs };
  };
  return new PinRegistry(
    store,
    settingsOf,
    {
      changed(upstream, change, policy, diff) {
        metrics?.toolChange(upstream, change.kind);
        log.warn("a tool's definition differs from its pin", {
          upstream,
          tool: change.tool,
          kind: change.kind,
          policy,
          fields: diff.fields.join(","),
        });
        audit.toolChanged({ upstream, ...change, policy, fields: diff.fields });
      },
      approved(upstream, tool, digest, via) {
        metrics?.toolApproval(upstream, via);
        audit.toolApproved(upstream, tool, digest, via);
      },
      overflow(upstream, tool) {
        metrics?.toolChange(upstream, "overflow");
        log.warn("too many tool changes wait for approval: this one is not recorded", { upstream, tool });
      },
      failed(upstream, err) {
        log.warn("pinned definitions could not be written", { upstream, cause: (err as Error).message });
      },
    },
    parts.now,
  );
}

/** /status.json's `pinning`: every change waiting for approval on the upstreams with pinning, read now. */
export async function pinStatus(pins: PinRegistry, live: LiveConfig): Promise<StatusPinChange[]> {
  const names = Object.entries(live.config.upstreams)
    .filter(([, block]) => block.pinning !== undefined)
    .map(([name]) => name);
  if (names.length === 0) return [];
  const pending = await pins.pendingNow(names);
  return [...pending].flatMap(([upstream, views]) =>
    views.map((p) => ({
      upstream,
      tool: p.tool,
      kind: p.kind,
      digest: p.digest,
      ...(p.approved !== undefined && { approved: p.approved }),
      fields: p.diff.fields,
      ...(p.diff.description !== undefined && { description: p.diff.description }),
      ...(p.diff.schema !== undefined && { schema: p.diff.schema }),
      seenAt: new Date(p.at).toISOString(),
    })),
  );
}
