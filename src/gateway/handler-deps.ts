// What every upstream's handler shares: one identity resolver (and its digest cache), the engine, the audit
// trail, the replica forwarder, the latency history and the rate limiter.
import type { GatewayConfig } from "../config/schema.js";
import type { ReplicaForwarder } from "../http/forward.js";
import { Callers } from "../http/identity.js";
import type { InFlight } from "../http/inflight.js";
import type { SharedHandlerDeps } from "../http/upstream-handler.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { RateLimiter } from "../ratelimit/limiter.js";

export function sharedHandlerDeps(
  config: GatewayConfig,
  parts: {
    engine: TaskEngine;
    audit: AuditLog;
    forwarder: ReplicaForwarder;
    history: LatencyHistory;
    inflight: InFlight;
    limiter: RateLimiter;
    log: Logger;
    now: () => number;
  },
): SharedHandlerDeps {
  return { config, callers: new Callers(), forwardControlMs: config.tasks.forwardTimeoutMs, ...parts };
}
