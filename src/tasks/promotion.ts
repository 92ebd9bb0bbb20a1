// "Task or not", decided once per call. A tools/call from a client that
// declares the Tasks extension may become a task, as the policy for its tool
// says; `required` without the extension is refused before anything goes
// upstream. Both upstream eras act on the same plan.
import { DEFAULT_UPSTREAM_NAME } from "../config/schema.js";
import type { Fault } from "../protocol/errors.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import { isTasksDeclared, missingTasksCapability } from "../protocol/tasks-extension.js";
import type { Decision, TaskPolicy } from "../policy/policy.js";
import type { Claims } from "../policy/claims.js";
import type { CallTiming, LatencyHistory } from "./latency-history.js";

export type PromotionPlan =
  /** An ordinary call: never a task. `timing`: feed the latency history with it (adaptive promotion). */
  | { kind: "plain"; timing?: CallTiming | undefined }
  /** Refused before it reaches the upstream. */
  | { kind: "refuse"; fault: Fault }
  /**
   * May become a task: `eager` (always/required) creates it before the call goes
   * upstream, and a refusal by the limits is an error; otherwise the call races
   * `decision.thresholdMs` and a refusal just keeps it plain. `atOnce` (auto, and
   * the latency history says the tool is slow): eager too, but a refusal keeps the
   * call plain, as auto does. `timing`: times the call for the history and gives
   * the task's poll hint (`timing.pollIntervalMs()`, else decision.pollIntervalMs).
   */
  | { kind: "task"; decision: Decision; eager: boolean; atOnce?: boolean | undefined; timing?: CallTiming | undefined };

export interface PromotionOptions {
  /** The latency history of adaptive promotion (tasks.adaptive); absent: the threshold alone decides. */
  history?: LatencyHistory | undefined;
  /** The upstream the call goes to: a tool's history is its upstream's (two servers' "search" are two tools). */
  upstream?: string | undefined;
}

/** The tool a tools/call names ("" when it names none; the upstream judges that). */
export function toolName(req: ModernRequest): string {
  return typeof req.params.name === "string" ? req.params.name : "";
}

/**
 * `claims`: the caller's verified token claims (auth.jwt), which rules may match on.
 * `opts.history`: adaptive promotion. Under `auto`, a tool the history knows to be
 * slow (see latency-history.ts for the rule and its hysteresis) is a task at once;
 * always/never/required ignore it. Every tools/call it is on for is timed (`timing`).
 */
/** The history's key of a tool: its name for the single upstream (as before), `<upstream>/<name>` for a named one. */
export function historyKey(tool: string, upstream: string | undefined): string {
  return upstream === undefined || upstream === DEFAULT_UPSTREAM_NAME ? tool : `${upstream}/${tool}`;
}

export function planPromotion(
  req: ModernRequest,
  policy: TaskPolicy,
  claims?: Claims,
  opts: PromotionOptions = {},
): PromotionPlan {
  if (req.method !== "tools/call") return { kind: "plain" };
  const name = toolName(req);
  const decision = policy.decide(name, claims);
  const declared = isTasksDeclared(req.envelope.clientCapabilities);
  if (decision.mode === "required" && !declared)
    return { kind: "refuse", fault: missingTasksCapability(`Tool ${name} runs only as a task`) };
  const history = decision.adaptive ? opts.history : undefined;
  const key = historyKey(name, opts.upstream);
  if (decision.mode === "never" || !declared) return { kind: "plain", timing: history?.begin(key, decision, true) };
  const atOnce = decision.mode === "auto" && history?.atOnce(key, decision.thresholdMs) === true;
  const timing = history?.begin(key, decision, false);
  return {
    kind: "task",
    decision,
    eager: atOnce || decision.mode === "always" || decision.mode === "required",
    atOnce,
    timing,
  };
}
