// The rate limiter every route shares (limits.rules): its budgets in Redis when replicas share a store (so every
// replica and worker spends one budget), else in this process; its refusals and check times counted on the
// metrics when they are on.
import type { Logger } from "../log/logger.js";
import type { PrometheusMetrics } from "../metrics/prometheus.js";
import { RateLimiter } from "../ratelimit/limiter.js";
import { MemoryRateStore } from "../ratelimit/memory-store.js";
import type { TaskState } from "./shared-state.js";

export function rateLimiter(parts: {
  state: TaskState;
  metrics: PrometheusMetrics | undefined;
  log: Logger;
  now: () => number;
}): RateLimiter {
  const { state, metrics, log, now } = parts;
  return new RateLimiter({
    store: state.shared?.rateLimits ?? new MemoryRateStore(),
    now,
    log,
    observer: metrics?.rateLimitObserver(),
  });
}
