// The audit trail: one structured line per task created, cancelled, completed
// or failed, per access denial and per rate-limited request, at info level with `audit` naming the
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
  /** userConsent: a user's grant for an upstream was given, first used, or revoked (by the caller or an operator). */
  consent(who: AuditWho, upstream: string, event: "granted" | "used" | "revoked", by?: "caller" | "operator"): void;
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
    consent: (who, upstream, event, by) =>
      log.info("audit", {
        audit: `consent.${event}`,
        ...whoFields(who),
        upstream,
        ...(by !== undefined && { by }),
        outcome: event,
      }),
  };
}

/** An audit log that writes nothing (embedders, tests that do not look). */
export const NO_AUDIT: AuditLog = {
  taskCreated: () => {},
  taskEnded: () => {},
  accessDenied: () => {},
  rateLimited: () => {},
  consent: () => {},
};
