// What every upstream's handler shares: one identity resolver (and its digest cache), the engine, the audit
// trail, the replica forwarder, the session routing (issue 23), the latency history and the rate limiter.
import type { GatewayConfig } from "../config/schema.js";
import { upstreamEntries } from "../config/upstream-set.js";
import type { ReplicaForwarder } from "../replicas/forward.js";
import { Callers } from "../policy/sets/identity.js";
import type { InFlight } from "../http/inflight.js";
import { sessionRouting } from "../replicas/session-routing.js";
import type { SharedHandlerDeps } from "../endpoints/named-route.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { RateLimiter } from "../ratelimit/limiter.js";
import type { TaskState } from "./shared-state.js";
import type { PinRegistry } from "../catalog/pin-registry.js";

export function sharedHandlerDeps(
  config: GatewayConfig,
  parts: {
    engine: TaskEngine;
    audit: AuditLog;
    forwarder: ReplicaForwarder;
    history: LatencyHistory;
    inflight: InFlight;
    limiter: RateLimiter;
    pins: PinRegistry;
    state: TaskState;
    catalogObserver?: SharedHandlerDeps["catalogObserver"];
    catalogDispatch?: SharedHandlerDeps["catalogDispatch"];
    log: Logger;
    now: () => number;
  },
): SharedHandlerDeps {
  const { state, ...rest } = parts;
  // A forwarded request's answer starts when the owner's would: bounded by the slowest upstream's own wait, plus transit.
  const upstreamWait = Math.max(0, ...upstreamEntries(config).map((e) => e.upstream.headersTimeoutMs));
  const sessions = sessionRouting({
    owners: state.sessions,
    leases: state.leases,
    forwarder: parts.forwarder,
    addressTtlMs: Math.max(250, Math.floor(config.tasks.leaseMs / 3)),
    headersTimeoutMs: upstreamWait + config.tasks.forwardTimeoutMs,
    log: parts.log,
  });
  return { config, callers: new Callers(), forwardControlMs: config.tasks.forwardTimeoutMs, sessions, ...rest };
}
