// The audit trail: one structured line per task created, cancelled, completed
// or failed, per access denial and per rate-limited request, at info level with `audit` naming the
// event. Each line says who (the verified identity claim, or the identity
// header's value; never a token, and for credential-hashed callers only a short
// prefix of the digest), which tool, how long and with what outcome.
//
// Every line names the upstream by its configured name (`upstream`).
//
// A task line carries `task`: a piece of the task id's random part (tasks/task-id.ts taskRef, 12 base64url
// characters, 72 bits), never the whole id. The upstream's name in front of a named route's ids is left out: it
// is the `upstream` field, and 8 characters of `everything.Q3v9…` said only "everythi". Why not the whole id:
// a task id is a handle bound to its caller, yet where the caller is only a header (tasks.identityHeader) or a
// shared credential, the id and that header are all it takes to read, update or cancel the task, and logs travel
// further (collectors, dashboards, support tickets) than answers do. 72 bits keep lines apart (a collision is
// unlikely below 2^36 tasks) and let an operator find the lines of an id a client reports (its first characters
// after the "."), while the 56 bits left out are not to be guessed over the network.
import type { Logger } from "./logger.js";

/** Who did it, as an audit line may say it. */
export interface AuditWho {
  /** The verified identity claim (auth.jwt) or the identity header's value. */
  subject?: string | undefined;
  /** The caller's identity digest; only a prefix is logged. */
  caller: string;
}

type AuditOutcome = "completed" | "failed" | "cancelled";

/** The task a line is about: its upstream's configured name and the piece of its id that lines show. */
export interface AuditTask {
  upstream: string;
  /** tasks/task-id.ts taskRef: a piece of the id's random part, never the whole id. */
  ref: string;
}

export interface AuditLog {
  taskCreated(who: AuditWho, task: AuditTask, tool: string): void;
  taskEnded(who: AuditWho, task: AuditTask, tool: string, outcome: AuditOutcome, durationMs: number): void;
  /** A tools/call refused by access rules on the route of `upstream` (a configured name). */
  accessDenied(who: AuditWho, tool: string, upstream: string): void;
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

const shortCaller = (caller: string): string => caller.slice(0, 12);

function whoFields(who: AuditWho): { subject?: string; caller: string } {
  return { ...(who.subject !== undefined && { subject: who.subject }), caller: shortCaller(who.caller) };
}

export function createAuditLog(log: Logger): AuditLog {
  return {
    taskCreated: (who, task, tool) =>
      log.info("audit", {
        audit: "task.created",
        ...whoFields(who),
        tool,
        upstream: task.upstream,
        task: task.ref,
        outcome: "working",
      }),
    taskEnded: (who, task, tool, outcome, durationMs) =>
      log.info("audit", {
        audit: `task.${outcome}`,
        ...whoFields(who),
        tool,
        upstream: task.upstream,
        task: task.ref,
        outcome,
        duration_ms: durationMs,
      }),
    accessDenied: (who, tool, upstream) =>
      log.info("audit", { audit: "access.denied", ...whoFields(who), tool, upstream, outcome: "denied" }),
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
