// The gateway's error vocabulary: every error the gateway itself answers with is
// built here, as a Fault that carries the JSON-RPC error (code, message, and
// `data.reason` from one closed union) together with its HTTP status. A newcomer
// who wants to change what a failure looks like on the wire changes this file.
//
// Pure: upstream failures are classified from the error's `code`/`name` only,
// so undici's named errors and Node's system errors map the same way.
import { isRecord } from "./json.js";
import {
  JSONRPC_INTERNAL_ERROR,
  JSONRPC_INVALID_PARAMS,
  JSONRPC_INVALID_REQUEST,
  JSONRPC_METHOD_NOT_FOUND,
  type JsonRpcErrorObject,
} from "./jsonrpc.js";

/** MCP error codes (2026-07-28). */
export const HEADER_MISMATCH = -32020;
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** Legacy (≤ 2025-11-25) "resource not found"; the modern surface says -32602 instead. */
export const LEGACY_RESOURCE_NOT_FOUND = -32002;

/** Every `data.reason` the gateway puts on an error of its own. */
type ErrorReason =
  // The upstream could not be used.
  | "upstream_unreachable"
  | "upstream_reset"
  | "upstream_connect_timeout"
  | "upstream_timeout"
  | "upstream_error"
  | "upstream_no_answer"
  | "upstream_session"
  | "upstream_modern_only"
  // A stdio upstream (upstream.command): its process could not start, or ended, or broke the framing.
  | "upstream_process_failed"
  | "too_many_processes"
  // The request cannot be served as asked.
  | "body_too_large"
  | "origin_not_allowed"
  | "method_not_allowed"
  | "no_identity"
  | "unauthorized"
  | "auth_unavailable"
  | "access_denied"
  | "answer_too_large"
  | "invalid_request_state"
  | "too_many_pending_inputs"
  | "task_limit"
  | "result_too_large"
  | "store_full"
  | "store_unavailable"
  | "task_runner_unreachable"
  | "not_a_replica"
  | "runner_lost"
  // The gateway itself.
  | "gateway_shutting_down"
  | "internal_error";

/** An error answer: the JSON-RPC error, its HTTP status, and headers that go with it (a challenge, Retry-After). */
export interface Fault {
  status: number;
  error: JsonRpcErrorObject;
  headers?: Record<string, string> | undefined;
}

function fault(
  status: number,
  code: number,
  message: string,
  reason: ErrorReason,
  data: Record<string, unknown> = {},
  headers?: Record<string, string>,
): Fault {
  return { status, error: { code, message, data: { reason, ...data } }, ...(headers && { headers }) };
}

// ── HTTP status of a JSON-RPC error on the modern surface ──────────────────

/**
 * The HTTP status a modern (2026-07-28) answer carrying `code` must have, when
 * nothing was streamed yet: the spec's table (basic/index, streamable-http):
 * -32020 header mismatch, -32021 missing client capability and -32022
 * unsupported version are 400; -32601 method not found is 404; every other
 * JSON-RPC error (an unknown tool, a tool's own failure) is a 200 answer.
 * An upstream's error relayed by the era bridge gets the status it would have
 * had from a modern server.
 */
export function modernErrorStatus(code: number): 200 | 400 | 404 {
  if (code === HEADER_MISMATCH || code === MISSING_REQUIRED_CLIENT_CAPABILITY || code === UNSUPPORTED_PROTOCOL_VERSION)
    return 400;
  if (code === JSONRPC_METHOD_NOT_FOUND) return 404;
  return 200;
}

/** A header that disagrees with the body, or is missing or malformed (SEP-2243): 400, -32020. */
export function headerMismatch(message: string, header: string, body: unknown): Fault {
  return {
    status: 400,
    error: { code: HEADER_MISMATCH, message: `Header mismatch: ${message}`, data: { mismatch: { header, body } } },
  };
}

// ── Upstream failures ───────────────────────────────────────────────────────

type UpstreamFailureReason = Extract<
  ErrorReason,
  "upstream_unreachable" | "upstream_reset" | "upstream_connect_timeout" | "upstream_timeout" | "upstream_error"
>;

export interface UpstreamFailure {
  /** 502 when the upstream could not be reached or broke the connection, 504 when it was too slow. */
  status: 502 | 504;
  reason: UpstreamFailureReason;
  /** The low-level code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …) for operators. */
  cause: string;
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "EADDRNOTAVAIL"]);
const RESET = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);
const CONNECT_TIMEOUT = new Set(["UND_ERR_CONNECT_TIMEOUT", "ETIMEDOUT"]);
// A deadline of the gateway's own (AbortSignal.timeout) is the upstream being too slow, like undici's timeouts.
const TIMEOUT = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "TimeoutError"]);

function codeOf(err: unknown): string {
  // fetch-style wrappers keep the real error in `cause`; walk the chain, guarding against cycles.
  const seen = new Set<unknown>();
  let current: unknown = err;
  let fallback: string | undefined;
  while (typeof current === "object" && current !== null && !seen.has(current)) {
    seen.add(current);
    const rec = current as { code?: unknown; name?: unknown; cause?: unknown };
    if (typeof rec.code === "string") return rec.code;
    // Without a code anywhere, the innermost specific name (e.g. AbortError under TypeError) says most.
    if (typeof rec.name === "string" && rec.name !== "Error") fallback = rec.name;
    current = rec.cause;
  }
  return fallback ?? "UNKNOWN";
}

export function classifyUpstreamFailure(err: unknown): UpstreamFailure {
  const cause = codeOf(err);
  if (UNREACHABLE.has(cause)) return { status: 502, reason: "upstream_unreachable", cause };
  if (RESET.has(cause)) return { status: 502, reason: "upstream_reset", cause };
  if (CONNECT_TIMEOUT.has(cause)) return { status: 504, reason: "upstream_connect_timeout", cause };
  if (TIMEOUT.has(cause)) return { status: 504, reason: "upstream_timeout", cause };
  return { status: 502, reason: "upstream_error", cause };
}

const DESCRIPTION: Record<UpstreamFailureReason, string> = {
  upstream_unreachable: "is unreachable",
  upstream_reset: "closed the connection",
  upstream_connect_timeout: "did not accept a connection in time",
  upstream_timeout: "did not answer in time",
  upstream_error: "failed",
};

/** The JSON-RPC error object; `upstream` must already be redacted. */
export function upstreamFailureError(failure: UpstreamFailure, upstream: string): JsonRpcErrorObject {
  return {
    code: JSONRPC_INTERNAL_ERROR,
    message: `Upstream MCP server ${upstream} ${DESCRIPTION[failure.reason]} (${failure.cause})`,
    data: { reason: failure.reason, upstream, cause: failure.cause },
  };
}

/**
 * The one mapping of "reaching the upstream failed" (thrown by undici, a
 * deadline, or a broken stream) used by pass-through, the era bridge and tasks.
 */
export function upstreamFault(err: unknown, upstream: string): Fault & { failure: UpstreamFailure } {
  const failure = classifyUpstreamFailure(err);
  return { status: failure.status, error: upstreamFailureError(failure, upstream), failure };
}

/** The upstream broke a call's stream after answering headers. */
export function upstreamBrokeStream(upstream: string, method: string, err: unknown): Fault {
  const failure = classifyUpstreamFailure(err);
  const reason = failure.reason === "upstream_error" ? "upstream_reset" : failure.reason;
  return fault(
    failure.status,
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream} broke the stream of ${method}: ${(err as Error).message}`,
    reason,
    {
      upstream,
      cause: failure.cause,
    },
  );
}

/** The upstream ended a call's answer without the response to it. */
export function upstreamNoAnswer(upstream: string, method: string): Fault {
  return fault(
    502,
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream} ended the stream of ${method} without answering`,
    "upstream_no_answer",
    { upstream },
  );
}

/** The upstream refused to open or keep a session (initialize failed, too many sessions). */
export function upstreamSessionFault(upstream: string, detail: string, httpStatus: number): Fault {
  return fault(
    httpStatus >= 500 ? 502 : 200,
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream}: ${detail}`,
    "upstream_session",
    { upstream },
  );
}

/** A legacy client in front of an upstream that speaks only modern versions; `original` is the upstream's -32022 answer. */
export function upstreamModernOnly(
  upstream: string,
  supported: string[],
  original: unknown,
  modernVersion: string,
): Fault {
  const data =
    isRecord(original) && isRecord(original.error) && isRecord(original.error.data) ? original.error.data : {};
  return fault(
    400,
    UNSUPPORTED_PROTOCOL_VERSION,
    `Protocol era mismatch: the upstream MCP server ${upstream} speaks only ${supported.join(", ")} (modern, no initialize), ` +
      `and this client uses the legacy initialize handshake (2025-11-25 or earlier). ` +
      `Connect with a ${modernVersion} client, or put the gateway in front of a server that still accepts legacy clients.`,
    "upstream_modern_only",
    { supported, requested: data.requested },
  );
}

// ── stdio upstreams (upstream.command) ─────────────────────────────────────

/**
 * The stdio server process of a session failed: it could not be started, exited (at once or mid-session),
 * did not answer initialize in time, or broke the framing. `command` is the redacted command line;
 * `data` says what is known (exit code, signal, the last stderr lines, redacted).
 */
export function upstreamProcessFailed(
  command: string,
  detail: string,
  status = 502,
  data: Record<string, unknown> = {},
): Fault {
  return fault(
    status,
    JSONRPC_INTERNAL_ERROR,
    `Upstream stdio server ${command} ${detail}`,
    "upstream_process_failed",
    { upstream: command, ...data },
  );
}

/** A new stdio session beyond upstream.maxProcesses. */
export function tooManyProcesses(limit: number): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    `Too many upstream stdio server processes (upstream.maxProcesses ${limit}); retry shortly`,
    "too_many_processes",
    { limit },
    { "retry-after": "1" },
  );
}

// ── Requests the gateway refuses ────────────────────────────────────────────

export function bodyTooLarge(limit: number): Fault {
  // The rest of the body was not read, so this connection cannot be reused.
  return fault(
    413,
    JSONRPC_INVALID_REQUEST,
    `Request body exceeds the gateway limit of ${limit} bytes`,
    "body_too_large",
    { limit },
    { connection: "close" },
  );
}

export function originNotAllowed(origin: string): Fault {
  return fault(403, JSONRPC_INVALID_REQUEST, `Origin ${JSON.stringify(origin)} is not allowed`, "origin_not_allowed");
}

export function methodNotAllowed(allow: string): Fault {
  return fault(405, JSONRPC_INVALID_REQUEST, "Method not allowed", "method_not_allowed", { allow }, { allow });
}

/** The identity header is configured but missing: without it every such caller would share one identity. */
export function noIdentity(header: string): Fault {
  return fault(
    401,
    JSONRPC_INVALID_REQUEST,
    `The ${header} header that identifies the caller is missing`,
    "no_identity",
  );
}

/**
 * No valid bearer token (auth.jwt): 401 with the RFC 6750 challenge, whose
 * error_description says precisely what was wrong; never the token itself.
 */
export function unauthorized(description: string, challenge: string): Fault {
  return fault(
    401,
    JSONRPC_INVALID_REQUEST,
    `Unauthorized: ${description}`,
    "unauthorized",
    {},
    { "www-authenticate": challenge },
  );
}

/** The token's keys cannot be fetched (JWKS unreachable): nothing is accepted unverified. */
export function authUnavailable(description: string): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    `Cannot verify the access token right now: ${description}; retry shortly`,
    "auth_unavailable",
    {},
    { "retry-after": "5" },
  );
}

/**
 * A tool this caller may not use (access rules). -32602, the code of an unknown
 * tool, with a message that says why; the upstream never sees the call.
 */
export function accessDenied(tool: string): Fault {
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    `Tool ${JSON.stringify(tool)} is not available to this caller`,
    "access_denied",
    { tool },
  );
}

/** An upstream answer that must be read whole to be filtered (tools/list under access rules) was too large. */
export function answerTooLarge(limit: number): Fault {
  return fault(
    502,
    JSONRPC_INTERNAL_ERROR,
    `The upstream's answer exceeds ${limit} bytes, too large to filter by the access rules`,
    "answer_too_large",
    { limit },
  );
}

export function invalidRequestState(detail: string): Fault {
  return fault(200, JSONRPC_INVALID_PARAMS, "Invalid or expired requestState", "invalid_request_state", { detail });
}

export function tooManyPendingInputs(limit: number): Fault {
  return fault(
    200,
    JSONRPC_INTERNAL_ERROR,
    `Too many pending input requests for this caller (limit ${limit})`,
    "too_many_pending_inputs",
    { limit },
  );
}

export function argumentsTooDeep(): Fault {
  return {
    status: 200,
    error: {
      code: JSONRPC_INVALID_PARAMS,
      message: "The call's arguments are nested too deeply for an input round trip",
    },
  };
}

/** A call that may only run as a task, refused by a task limit. */
export function taskLimit(detail: string): Fault {
  return fault(200, JSONRPC_INTERNAL_ERROR, `Cannot create a task: ${detail}`, "task_limit");
}

export function resultTooLarge(what: "result" | "error", bytes: number, limit: number): JsonRpcErrorObject {
  return {
    code: JSONRPC_INTERNAL_ERROR,
    message: `The ${what} is ${bytes} bytes, over the gateway's tasks.maxResultBytes (${limit})`,
    data: { reason: "result_too_large", bytes, limit },
  };
}

/**
 * A task's result (or error, or input request) that the task store has no room
 * for, its unfinished tasks taking tasks.storeBytes or the caller's
 * tasks.maxBytesPerCaller: the task ends failed with this short error instead.
 */
export function noRoomInStore(
  what: "result" | "error" | "input request" | "update",
  bytes: number,
): JsonRpcErrorObject {
  return {
    code: JSONRPC_INTERNAL_ERROR,
    message: `The task's ${what} (${bytes} bytes) is too large for the task store now (tasks.storeBytes, tasks.maxBytesPerCaller)`,
    data: { reason: what === "result" || what === "error" ? "result_too_large" : "store_full", bytes },
  };
}

/**
 * The task store cannot be used right now (a shared store that went away). The
 * cause (addresses, script names) goes to the log, never to the client.
 */
export function storeUnavailable(): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    "The task store is unavailable; retry shortly",
    "store_unavailable",
    {},
    { "retry-after": "1" },
  );
}

/** A task run by another replica that could not be reached (it is gone, or did not answer in time). */
export function runnerUnreachable(detail: string): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    `The gateway instance running this task could not be reached: ${detail}`,
    "task_runner_unreachable",
    {},
    { "retry-after": "1" },
  );
}

/** The error of a task whose gateway instance stopped (crashed, or could not hand the call on). */
export function runnerLost(message: string): JsonRpcErrorObject {
  return { code: JSONRPC_INTERNAL_ERROR, message, data: { reason: "runner_lost" } };
}

/** The error of a task ended by a graceful shutdown that could not hand it on. */
export function taskShutDown(message: string): JsonRpcErrorObject {
  return { code: JSONRPC_INTERNAL_ERROR, message, data: { reason: "gateway_shutting_down" } };
}

/** A request on the internal listener without a valid replica credential. */
export function forwardForbidden(): Fault {
  return fault(
    403,
    JSONRPC_INVALID_REQUEST,
    "This listener serves only requests forwarded by another gateway instance",
    "not_a_replica",
  );
}

/** tasks/* for an id this caller has no task under: unknown, expired and others' ids look the same. */
export function taskNotFound(verb: string): Fault {
  return { status: 200, error: { code: JSONRPC_INVALID_PARAMS, message: `Failed to ${verb} task: Task not found` } };
}

export function invalidParams(message: string, status = 200): Fault {
  return { status, error: { code: JSONRPC_INVALID_PARAMS, message } };
}

// ── 2025-11-25 experimental tasks (tasks-2025/): the codes that spec names ──

/** A tool whose policy is `required`, called without `params.task` (2025-11-25: -32601). */
export function taskAugmentationRequired(tool: string): Fault {
  return {
    status: 200,
    error: { code: JSONRPC_METHOD_NOT_FOUND, message: `Tool ${tool} requires task augmentation (params.task)` },
  };
}

/** A tool whose policy is `never`, called with `params.task` (2025-11-25: -32601). */
export function taskAugmentationForbidden(tool: string): Fault {
  return {
    status: 200,
    error: { code: JSONRPC_METHOD_NOT_FOUND, message: `Tool ${tool} does not support task augmentation` },
  };
}

/** tasks/cancel for a task already terminal (2025-11-25: -32602). */
export function taskAlreadyTerminal(status: string): Fault {
  return invalidParams(`Cannot cancel task: already in terminal status '${status}'`);
}

/** tasks/result of a cancelled task: the call has no outcome to return. */
export function taskCancelledNoResult(): Fault {
  return {
    status: 200,
    error: { code: JSONRPC_INTERNAL_ERROR, message: "The task was cancelled before it produced a result" },
  };
}

// ── The gateway itself ──────────────────────────────────────────────────────

/** A call still waiting for the upstream when the shutdown grace ran out: our doing, not the upstream's. */
export function shuttingDown(): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    "The gateway is shutting down; retry the request",
    "gateway_shutting_down",
    {},
    { connection: "close", "retry-after": "1" },
  );
}

/** Anything unexpected: the client learns it failed, never the internals (they go to the log). */
export function internalError(what: string): Fault {
  return fault(500, JSONRPC_INTERNAL_ERROR, `The gateway failed to serve ${what}`, "internal_error");
}
