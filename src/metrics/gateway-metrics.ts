// What the layers below http/ tell the metrics (issue 11), as one small
// interface. The Prometheus implementation (prometheus.ts) is wired in
// the composition root (src/gateway/); everything else depends on this interface only, and gets
// NO_METRICS (plain no-ops, nothing allocated) when metrics are off.
//
// Only bounded values cross it: an HTTP method, a status, a policy mode, a
// terminal status, a tool name that the implementation maps through
// metrics.toolLabels (anything not listed is "other"), an upstream name that it
// maps onto the configured ones (anything else is "other"). Never a task id, a
// caller or arguments.

/** How a call racing its threshold ended (tasks/promotion in front of either upstream era). */
export type PromotionOutcome =
  /** Answered (or asked for input) before the threshold: a plain call. */
  | "in_time"
  /** Ran past the threshold and became a task. */
  | "promoted"
  /** Ran past the threshold, but the task could not be created (limits, store, draining): it stayed plain. */
  | "refused";

export type TaskEnding = "completed" | "failed" | "cancelled";

export interface GatewayMetrics {
  /** False for NO_METRICS: callers may skip work that only feeds the metrics. */
  readonly enabled: boolean;
  /**
   * A task was stored: its policy mode ("auto", "always", "required"; "unknown" when not known), tool, and the
   * configured name of the upstream that runs it.
   */
  taskCreated(mode: string, tool: string | undefined, upstream: string): void;
  /** A task this process wrote ended, after `seconds` since its creation; `upstream` as for taskCreated. */
  taskFinished(status: TaskEnding, tool: string | undefined, seconds: number, upstream: string): void;
  /** A call that raced its threshold was decided. */
  promotion(outcome: PromotionOutcome): void;
}

const noop = (): void => {};

/** Metrics off: every hook is a no-op. */
export const NO_METRICS: GatewayMetrics = { enabled: false, taskCreated: noop, taskFinished: noop, promotion: noop };
