// The audit trail: one structured line per task created, cancelled, completed
// or failed, per access denial, per rate-limited request, and per pinned
// definition changed, approved or refused, at info level with `audit` naming the
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
  consent: () => {},
  toolChanged: () => {},
  toolApproved: () => {},
  toolRefused: () => {},
};
