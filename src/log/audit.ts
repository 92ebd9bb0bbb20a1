// The audit trail: one structured line per task created, cancelled, completed
// or failed, per access denial, per rate-limited request, and per pinned
// definition changed, approved or refused, at info level with `audit` naming the
// event. Each line says who (the verified identity claim, or the identity
// header's value; never a token, and for credential-hashed callers only a short
// prefix of the digest), which tool, how long and with what outcome.
//
// Task ids are shortened to their first 8 characters: a task id is bound to its
// caller and is no credential, but logs travel further than answers do, and 48
// bits are plenty to correlate lines.
import type { Logger } from "./logger.js";

/** Who did it, as an audit line may say it. */
export interface AuditWho {
  /** The verified identity claim (auth.jwt) or the identity header's value. */
  subject?: string | undefined;
  /** The caller's identity digest; only a prefix is logged. */
  caller: string;
}

type AuditOutcome = "completed" | "failed" | "cancelled";

export interface AuditLog {
  taskCreated(who: AuditWho, taskId: string, tool: string): void;
  taskEnded(who: AuditWho, taskId: string, tool: string, outcome: AuditOutcome, durationMs: number): void;
  accessDenied(who: AuditWho, tool: string): void;
  /** A request refused by a rate limit (limits.rules): never sent upstream. */
  rateLimited(who: AuditWho, limited: RateLimitedLine): void;
  /** Pinned definitions (docs/pinning.md): a tool's definition differs from its pin, or the tool is new. */
  toolChanged(change: ToolChangeLine): void;
  /** A definition was approved: on first use, by the allow policy, or by `mcp-task-gateway pins approve`. */
  toolApproved(upstream: string, tool: string, digest: string, via: string): void;
  /** A call to a tool whose definition is not approved (pinning hide): never sent upstream. */
  toolRefused(who: AuditWho, upstream: string, tool: string, digest: string | undefined): void;
}

/** What an audit line says of a changed definition: never the definition itself, only which fields changed. */
interface ToolChangeLine {
  upstream: string;
  tool: string;
  kind: string;
  policy: string;
  digest: string;
  /** The approved digest it replaces; undefined for a new tool. */
  approved: string | undefined;
  fields: readonly string[];
}

/** What an audit line says of a rate-limited request. */
interface RateLimitedLine {
  rule: string;
  method: string;
  /** The tool of a tools/call. */
  tool: string | undefined;
  upstream: string;
  retryAfterMs: number;
}

const shortTask = (taskId: string): string => taskId.slice(0, 8);
const shortCaller = (caller: string): string => caller.slice(0, 12);

function whoFields(who: AuditWho): { subject?: string; caller: string } {
  return { ...(who.subject !== undefined && { subject: who.subject }), caller: shortCaller(who.caller) };
}

export function createAuditLog(log: Logger): AuditLog {
  return {
    taskCreated: (who, taskId, tool) =>
      log.info("audit", {
        audit: "task.created",
        ...whoFields(who),
        tool,
        task: shortTask(taskId),
        outcome: "working",
      }),
    taskEnded: (who, taskId, tool, outcome, durationMs) =>
      log.info("audit", {
        audit: `task.${outcome}`,
        ...whoFields(who),
        tool,
        task: shortTask(taskId),
        outcome,
        duration_ms: durationMs,
      }),
    accessDenied: (who, tool) =>
      log.info("audit", { audit: "access.denied", ...whoFields(who), tool, outcome: "denied" }),
    rateLimited: (who, l) =>
      log.info("audit", {
        audit: "rate.limited",
        ...whoFields(who),
        rule: l.rule,
        method: l.method,
        ...(l.tool !== undefined && { tool: l.tool }),
        upstream: l.upstream,
        retry_after_ms: Math.ceil(l.retryAfterMs),
        outcome: "limited",
      }),
    toolChanged: (c) =>
      log.info("audit", {
        audit: "tool.changed",
        upstream: c.upstream,
        tool: c.tool,
        kind: c.kind,
        policy: c.policy,
        digest: c.digest,
        ...(c.approved !== undefined && { approved: c.approved }),
        fields: c.fields.join(","),
        outcome: c.policy === "hide" ? "hidden" : c.policy === "warn" ? "served" : "approved",
      }),
    toolApproved: (upstream, tool, digest, via) =>
      log.info("audit", { audit: "tool.approved", upstream, tool, digest, via, outcome: "approved" }),
    toolRefused: (who, upstream, tool, digest) =>
      log.info("audit", {
        audit: "tool.refused",
        ...whoFields(who),
        upstream,
        tool,
        ...(digest !== undefined && { digest }),
        outcome: "denied",
      }),
  };
}

/** An audit log that writes nothing (embedders, tests that do not look). */
export const NO_AUDIT: AuditLog = {
  taskCreated: () => {},
  taskEnded: () => {},
  accessDenied: () => {},
  rateLimited: () => {},
  toolChanged: () => {},
  toolApproved: () => {},
  toolRefused: () => {},
};
