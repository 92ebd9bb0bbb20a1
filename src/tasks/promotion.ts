// "Task or not", decided once per call. A tools/call from a client that
// declares the Tasks extension may become a task, as the policy for its tool
// says; `required` without the extension is refused before anything goes
// upstream. Both upstream eras act on the same plan.
import type { Fault } from "../protocol/errors.js";
import type { ModernRequest } from "../protocol/modern-request.js";
import { isTasksDeclared, missingTasksCapability } from "../protocol/tasks-extension.js";
import type { Decision, TaskPolicy } from "../policy/policy.js";

export type PromotionPlan =
  /** An ordinary call: never a task. */
  | { kind: "plain" }
  /** Refused before it reaches the upstream. */
  | { kind: "refuse"; fault: Fault }
  /**
   * May become a task: `eager` (always/required) creates it before the call goes
   * upstream, and a refusal by the limits is an error; otherwise the call races
   * `decision.thresholdMs` and a refusal just keeps it plain.
   */
  | { kind: "task"; decision: Decision; eager: boolean };

/** The tool a tools/call names ("" when it names none; the upstream judges that). */
export function toolName(req: ModernRequest): string {
  return typeof req.params.name === "string" ? req.params.name : "";
}

export function planPromotion(req: ModernRequest, policy: TaskPolicy): PromotionPlan {
  if (req.method !== "tools/call") return { kind: "plain" };
  const name = toolName(req);
  const decision = policy.decide(name);
  const declared = isTasksDeclared(req.envelope.clientCapabilities);
  if (decision.mode === "required" && !declared) return { kind: "refuse", fault: missingTasksCapability(`Tool ${name} runs only as a task`) };
  if (decision.mode === "never" || !declared) return { kind: "plain" };
  return { kind: "task", decision, eager: decision.mode === "always" || decision.mode === "required" };
}
