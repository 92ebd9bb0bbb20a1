// The parts of one gateway, once built: what the app, stats and shutdown are made of.
import type { ReplicaForwarder } from "../replicas/forward.js";
import type { InFlight } from "../http/inflight.js";
import type { AuditLog } from "../log/audit.js";
import type { Logger } from "../log/logger.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { LatencyHistory } from "../tasks/latency-history.js";
import type { LiveConfig } from "./live-config.js";
import type { MetricsRoutes } from "./metrics-routes.js";
import type { TaskState } from "./shared-state.js";
import type { UpstreamSet } from "./upstream-set.js";
import type { SharedHandlerDeps } from "../endpoints/named-route.js";
import type { ConsentService } from "../credentials/consent/flow.js";

export interface GatewayParts {
  state: TaskState;
  engine: TaskEngine;
  history: LatencyHistory;
  live: LiveConfig;
  upstreams: UpstreamSet;
  /** What every upstream's handler shares (identity, engine, forwarder, audit). */
  handlerDeps: SharedHandlerDeps;
  forwarder: ReplicaForwarder;
  /** Undefined with metrics off. */
  metricsRoutes: MetricsRoutes | undefined;
  inflight: InFlight;
  audit: AuditLog;
  /** The consent flow of userConsent upstreams (its /oauth routes); undefined without auth.vault. */
  consent: ConsentService | undefined;
  log: Logger;
  now: () => number;
}
