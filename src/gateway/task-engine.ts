// The one task engine every upstream route creates tasks in, on the shared task state.
import type { GatewayConfig } from "../config/schema.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import { TaskEngine, type TaskLimits } from "../tasks/engine.js";
import type { TaskState } from "./shared-state.js";

export interface TaskEngineParts {
  state: TaskState;
  /** The live limits (live-config.ts): the engine keeps the object, a reload changes it in place. */
  limits: TaskLimits;
  /** Undefined with metrics off (NO_METRICS). */
  metrics: GatewayMetrics | undefined;
  audit: AuditLog;
  log: Logger;
  now: () => number;
}

export function taskEngine(config: GatewayConfig, parts: TaskEngineParts): TaskEngine {
  const { state } = parts;
  return new TaskEngine({
    store: state.store,
    leases: state.leases,
    events: state.events,
    limits: parts.limits,
    now: parts.now,
    log: parts.log,
    // Leases are renewed and lapsed ones swept only when replicas share the state: one process holds them all.
    timing: state.shared ? { leaseMs: config.tasks.leaseMs, sweepIntervalMs: config.tasks.sweepIntervalMs } : undefined,
    audit: parts.audit,
    metrics: parts.metrics,
  });
}
