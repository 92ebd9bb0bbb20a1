// The gateway's error vocabulary: every error the gateway itself answers with is
// built here, as a Fault that carries the JSON-RPC error (code, message, and
// `data.reason` from one closed union) together with its HTTP status. A newcomer
// who wants to change what a failure looks like on the wire changes this file.
//
// Pure: upstream failures are classified from the error's `code`/`name` only,
// so undici's named errors and Node's system errors map the same way.
//
// The error codes live here too: the rest of src/ builds no error object itself,
// it calls a builder below (an upstream's own error relayed as it is excepted).
// ESLint (eslint.config.js) fails on an error code written as `code:` anywhere else in src/.
import { isRecord } from "./json.js";

/** A JSON-RPC 2.0 error object (jsonrpc.ts, which builds on this file, exports it too). */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** JSON-RPC 2.0 error codes. */
export const JSONRPC_PARSE_ERROR = -32700;
const JSONRPC_INVALID_REQUEST = -32600;
const JSONRPC_METHOD_NOT_FOUND = -32601;
const JSONRPC_INVALID_PARAMS = -32602;
export const JSONRPC_INTERNAL_ERROR = -32603;
/** What the MCP SDKs' HTTP transports answer outside a valid session (server-defined JSON-RPC codes). */
const SDK_BAD_REQUEST = -32000;
const SDK_SESSION_NOT_FOUND = -32001;

/** MCP error codes (2026-07-28). */
export const HEADER_MISMATCH = -32020;
const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
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
  // A federated endpoint's member whose circuit breaker is open (federation.breaker*).
  | "upstream_unavailable"
  // A stdio upstream (upstream.command): its process could not start, or ended, or broke the framing; its host is not up yet.
  | "upstream_process_failed"
  | "too_many_processes"
  | "too_many_processes_for_caller"
  // The request cannot be served as asked.
  | "body_too_large"
  | "unsupported_media_type"
  | "origin_not_allowed"
  | "method_not_allowed"
  | "unknown_upstream"
  | "legacy_not_federated"
  | "no_identity"
  | "unauthorized"
  | "auth_unavailable"
  // Upstream credentials per caller (upstreams.<name>.oauth): none could be obtained, the authorization server
  // refused, the upstream refused a fresh one, or the caller's user must consent first.
  | "upstream_credentials_unavailable"
  | "upstream_credentials_refused"
  | "upstream_credentials_rejected"
  | "consent_required"
  | "access_denied"
  | "unknown_tool"
  | "unknown_prompt"
  | "pinned_argument"
  | "invalid_arguments"
  | "catalog_batch"
  // Pinned definitions (upstreams.<name>.pinning hide): a tool whose definition changed, or is new, until approved.
  | "tool_changed"
  | "answer_too_large"
  | "invalid_request_state"
  | "too_many_pending_inputs"
  | "task_limit"
  | "result_too_large"
  | "store_full"
  | "store_unavailable"
  // Rate limits (limits.rules): a request over a rule's budget, or a limit store that is down under onStoreDown deny.
  | "rate_limited"
  | "rate_limit_unavailable"
  | "task_runner_unreachable"
  | "not_a_replica"
  | "runner_lost"
  // A message that breaks JSON-RPC or MCP rules, or that the gateway cannot serve as asked.
  | "parse_error"
  | "invalid_request"
  | "batch_not_allowed"
  | "invalid_envelope"
  | "invalid_params"
  | "header_mismatch"
  | "unsupported_protocol_version"
  | "method_not_found"
  | "missing_client_capability"
  | "arguments_too_deep"
  | "too_many_input_rounds"
  // Sessions the gateway (or its stdio host) serves.
  | "session_not_found"
  | "session_required"
  | "stream_conflict"
  // Tasks.
  | "task_not_found"
  | "task_already_terminal"
  | "task_augmentation_required"
  | "task_augmentation_not_supported"
  | "task_cancelled"
  | "task_failed"
  // A server-to-client request the gateway cannot relay, or a client's malformed answer to one.
  | "no_client_stream"
  | "no_client_request"
  | "input_request_unsupported"
  | "client_error"
  // The gateway itself.
  | "gateway_shutting_down"
  | "internal_error";

/** An error answer: the JSON-RPC error, its HTTP status, and headers that go with it (a challenge, Retry-After). */
export interface Fault {
  status: number;
  error: JsonRpcErrorObject;
  headers?: Record<string, string> | undefined;
}

/** Every error object this file builds: `data.reason` first, then what else the error carries. */
function rpcError(
  code: number,
  message: string,
  reason: ErrorReason,
  data: Record<string, unknown> = {},
): JsonRpcErrorObject {
  return { code, message, data: { reason, ...data } };
}

function fault(
  status: number,
  code: number,
  message: string,
  reason: ErrorReason,
  data: Record<string, unknown> = {},
  headers?: Record<string, string>,
): Fault {
  return { status, error: rpcError(code, message, reason, data), ...(headers && { headers }) };
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

// ── Messages that break JSON-RPC or MCP rules ───────────────────────────────

/** A header that disagrees with the body, or is missing or malformed (SEP-2243): 400, -32020. */
export function headerMismatch(message: string, header: string, body: unknown): Fault {
  return fault(400, HEADER_MISMATCH, `Header mismatch: ${message}`, "header_mismatch", { mismatch: { header, body } });
}

/** A body that is not JSON (400, -32700): the gateway answers it instead of relaying an opaque upstream error. */
export function parseError(detail: string): Fault {
  return fault(400, JSONRPC_PARSE_ERROR, `Parse error: ${detail}`, "parse_error");
}

/** A modern request without jsonrpc "2.0" or with an id that is neither a string nor an integer. */
export function invalidRequest(): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    'Invalid Request: expected jsonrpc "2.0" and a string or integer id',
    "invalid_request",
  );
}

/** A batch holding a modern request: `revision` (2026-07-28) forbids batches. */
export function batchNotAllowed(revision: string): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    `Invalid Request: batches are not allowed in protocol revision ${revision}`,
    "batch_not_allowed",
  );
}

/** A modern request whose per-request `_meta` envelope lacks `key` or has it malformed (400, -32602). */
export function invalidEnvelope(revision: string, key: string, problem: string): Fault {
  return fault(
    400,
    JSONRPC_INVALID_PARAMS,
    `Invalid _meta envelope for protocol revision ${revision}: ${key}: ${problem}`,
    "invalid_envelope",
    { envelope: { key, problem } },
  );
}

/** A modern request for a protocol version the gateway does not serve (400, -32022, the versions it does). */
export function unsupportedProtocolVersion(requested: string, supported: readonly string[]): Fault {
  return fault(
    400,
    UNSUPPORTED_PROTOCOL_VERSION,
    `Unsupported protocol version: ${requested}`,
    "unsupported_protocol_version",
    { supported: [...supported], requested },
  );
}

/** A modern request for a method the gateway does not serve (404, -32601, as the spec's status table says). */
export function methodNotFound(method: string): Fault {
  return fault(404, JSONRPC_METHOD_NOT_FOUND, `Method not found: ${method}`, "method_not_found");
}

/** -32021 (400) for a request that needs a client capability it did not declare; `required` is what to declare. */
export function missingClientCapability(message: string, required: Record<string, unknown>): Fault {
  return fault(400, MISSING_REQUIRED_CLIENT_CAPABILITY, message, "missing_client_capability", {
    requiredCapabilities: required,
  });
}

/**
 * An upstream's legacy -32002 (resource not found), which the modern surface spells -32602: the upstream's
 * own error, recoded, keeping its message and data (no reason of the gateway's is added).
 */
export function recodeResourceNotFound(error: JsonRpcErrorObject): JsonRpcErrorObject {
  return { ...error, code: JSONRPC_INVALID_PARAMS };
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

/**
 * The JSON-RPC error object. `upstream` is the upstream's configured name, as the client knows it (its route or
 * member name): never its URL, which would show the internal topology to every caller. Logs may add the origin.
 */
export function upstreamFailureError(failure: UpstreamFailure, upstream: string): JsonRpcErrorObject {
  return rpcError(
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream} ${DESCRIPTION[failure.reason]} (${failure.cause})`,
    failure.reason,
    { upstream, cause: failure.cause },
  );
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
    `Upstream MCP server ${upstream} broke the stream of ${method} (${failure.cause})`,
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

/**
 * The error an upstream answered with, relayed as it is (it is the upstream's, not the gateway's); an answer
 * without a usable one (an error that is not an object, a result that is not one) gets the gateway's own.
 */
export function upstreamErrorOf(error: unknown): JsonRpcErrorObject {
  return isRecord(error)
    ? (error as unknown as JsonRpcErrorObject)
    : rpcError(JSONRPC_INTERNAL_ERROR, "Upstream error", "upstream_error");
}

/**
 * A request on a federated endpoint for a member whose circuit breaker is open: it failed
 * federation.breakerFailures times in a row and is skipped until `retryAfterMs` from now (503, Retry-After in
 * whole seconds, at least 1).
 */
export function upstreamUnavailable(upstream: string, retryAfterMs: number): Fault {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream} is unavailable: it failed repeatedly and is skipped for ${seconds} s; retry then`,
    "upstream_unavailable",
    { upstream, retryAfterSeconds: seconds },
    { "retry-after": String(seconds) },
  );
}

/** The upstream kept answering a request with input requests (MRTR) past the gateway's bound on rounds. */
export function tooManyInputRounds(limit: number): Fault {
  return fault(
    200,
    JSONRPC_INTERNAL_ERROR,
    `The upstream asked for input more than ${limit} times`,
    "too_many_input_rounds",
  );
}

// ── Server-to-client requests the gateway cannot relay (answered to the upstream) ──

/** A request from a stdio server while its client has no stream open to receive it (and the hold is full). */
export function noClientStream(): JsonRpcErrorObject {
  return rpcError(JSONRPC_INTERNAL_ERROR, "The client has no open stream to receive this request", "no_client_stream");
}

/** A request from a pooled legacy session outside any call: no client request to relay it on. */
export function noClientRequest(): JsonRpcErrorObject {
  return rpcError(JSONRPC_METHOD_NOT_FOUND, "No client request to relay this to", "no_client_request");
}

/** An input request the client cannot receive (it did not declare the capability); `detail` says which. */
export function inputRequestUnsupported(detail: string): JsonRpcErrorObject {
  return rpcError(JSONRPC_METHOD_NOT_FOUND, detail, "input_request_unsupported");
}

/** A client's answer to a relayed input request, relayed as it is; an error that is not an object gets ours. */
export function clientErrorOf(error: unknown): JsonRpcErrorObject {
  return isRecord(error)
    ? (error as unknown as JsonRpcErrorObject)
    : rpcError(JSONRPC_INTERNAL_ERROR, "The client failed the request", "client_error");
}

// ── Sessions served by the gateway (the era bridge's, the stdio host's) ─────
// The messages and codes are the MCP SDKs' own, so the SDK clients and the legacy session pool recognize them.

/** An unknown or ended session (404, -32001): the client starts a new one. */
export function sessionNotFound(): Fault {
  return fault(404, SDK_SESSION_NOT_FOUND, "Session not found", "session_not_found");
}

/**
 * A route that serves no upstream (404): a name no config gives, or an upstream a reload removed (its
 * tasks stay readable there until they expire; nothing else is served).
 */
export function unknownUpstream(path: string, removed: boolean): Fault {
  const message = removed
    ? `The upstream at ${path} was removed from the configuration; only its tasks are still served here`
    : `No upstream is served at ${path}`;
  return fault(404, JSONRPC_INVALID_REQUEST, message, "unknown_upstream");
}

/**
 * A legacy (≤ 2025-11-25) client on a federated endpoint that cannot be served (400): the gateway does not listen
 * (its session is held by a front that reaches the endpoint over loopback), or it sent no initialize first.
 */
export function federatedLegacyClient(path: string, listening: boolean): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    listening
      ? `${path} is a federated endpoint: a legacy client starts a session with initialize (the gateway holds it)`
      : `${path} is a federated endpoint, which serves legacy clients only when the gateway listens itself (startGateway, not createGateway alone); here a legacy client connects to an upstream's own route`,
    "legacy_not_federated",
  );
}

/** GET or DELETE without an Mcp-Session-Id. */
export function sessionIdRequired(): Fault {
  return fault(400, SDK_BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required", "session_required");
}

/** A POST outside a session that is not an initialize (the era probe reads it as "legacy"). */
export function noValidSession(): Fault {
  return fault(400, SDK_BAD_REQUEST, "Bad Request: No valid session ID provided", "session_required");
}

/** A second standalone GET stream on a session (409): one per session, as the SDK servers keep it. */
export function streamConflict(): Fault {
  return fault(409, SDK_BAD_REQUEST, "Conflict: only one SSE stream is allowed per session", "stream_conflict");
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

/** A new stdio session of a caller that holds its share of upstream.maxProcesses already (upstream.maxProcessesPerCaller). */
export function tooManyProcessesForCaller(limit: number): Fault {
  return fault(
    429,
    JSONRPC_INTERNAL_ERROR,
    `This caller holds its share of upstream stdio server processes (upstream.maxProcessesPerCaller ${limit}); end a session first`,
    "too_many_processes_for_caller",
    { limit },
    { "retry-after": "1" },
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

/** An initialize for a new stdio session larger than one line may be (upstream.maxLineBytes). */
export function stdioBodyTooLarge(limit: number): Fault {
  return fault(413, JSONRPC_INVALID_REQUEST, `Request body exceeds upstream.maxLineBytes (${limit})`, "body_too_large");
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

/**
 * A POST whose content type is not JSON while access rules or rate limits apply: the gateway checks only what it
 * parsed, so what it did not parse is not passed on (some upstreams read such a body anyway).
 */
export function unsupportedMediaType(contentType: string | undefined): Fault {
  return fault(
    415,
    JSONRPC_INVALID_REQUEST,
    "Unsupported Media Type: MCP messages are sent as application/json",
    "unsupported_media_type",
    { contentType: contentType ?? null },
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

/** -32042 (2025-11-25): the request needs the user to finish a URL-mode elicitation first. */
const URL_ELICITATION_REQUIRED = -32042;

/** The authorization server could not be asked for this upstream's token (unreachable, 5xx): it may pass. */
export function upstreamCredentialsUnavailable(detail: string): Fault {
  return fault(503, JSONRPC_INTERNAL_ERROR, detail, "upstream_credentials_unavailable", {}, { "retry-after": "5" });
}

/** The authorization server refused this caller a token for the upstream (the caller's token cannot be exchanged, a grant is gone). */
export function upstreamCredentialsRefused(detail: string): Fault {
  return fault(403, JSONRPC_INVALID_REQUEST, detail, "upstream_credentials_refused");
}

/** The upstream refused the token it was given, and a fresh one too: its authorization server and it disagree. */
export function upstreamCredentialsRejected(upstream: string): Fault {
  return fault(
    502,
    JSONRPC_INTERNAL_ERROR,
    `Upstream ${upstream} refused the credentials the gateway obtained for it, a fresh token included`,
    "upstream_credentials_rejected",
    { upstream },
  );
}

/**
 * The caller's user has not granted the gateway access to this upstream yet: they must open `url` (the gateway's
 * consent link) and then retry. -32042 with the elicitation, as 2025-11-25 defines it; the same data on the
 * 2026-07-28 surface for a client that cannot take the elicitation as an input request.
 */
export function consentRequired(upstream: string, url: string, elicitationId: string, message: string): Fault {
  return fault(200, URL_ELICITATION_REQUIRED, message, "consent_required", {
    upstream,
    elicitations: [{ mode: "url", elicitationId, url, message }],
  });
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

/**
 * A tool the client may not call by that name: the upstream's own name of a tool the catalog renamed
 * (upstreams.<name>.tools.<tool>.name). -32602, as an upstream answers a tool it does not have.
 */
export function unknownTool(tool: string): Fault {
  return fault(200, JSONRPC_INVALID_PARAMS, `Unknown tool: ${JSON.stringify(tool)}`, "unknown_tool", { tool });
}

/** A prompt the client may not get by that name: the upstream's own name of a renamed prompt. */
export function unknownPrompt(prompt: string): Fault {
  return fault(200, JSONRPC_INVALID_PARAMS, `Unknown prompt: ${JSON.stringify(prompt)}`, "unknown_prompt", { prompt });
}

/** A call that sends an argument the catalog pins (the gateway sets it; the client never sees it). */
export function pinnedArgument(tool: string, argument: string): Fault {
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    `Argument ${JSON.stringify(argument)} of tool ${JSON.stringify(tool)} is set by the gateway and may not be sent`,
    "pinned_argument",
    { tool, argument },
  );
}

/** A call whose arguments break the tool's listed inputSchema (validateArguments, narrowed arguments). */
export function invalidArguments(tool: string, errors: ReadonlyArray<{ path: string; message: string }>): Fault {
  const first = errors[0];
  const where = first ? `${first.path === "" ? "arguments" : `arguments${first.path}`} ${first.message}` : "invalid";
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    `Invalid arguments for tool ${JSON.stringify(tool)}: ${where}`,
    "invalid_arguments",
    { tool, errors: errors.map((e) => ({ path: e.path, message: e.message })) },
  );
}

/** A legacy batch holding tools/call or prompts/get while the catalog renames or checks them. */
export function catalogBatch(): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    "A batch may not hold tools/call, tools/list, prompts/get or prompts/list while this upstream's catalog applies; send them one by one",
    "catalog_batch",
  );
}

/**
 * A call to a tool whose definition is not approved (upstreams.<name>.pinning hide): it changed since it was
 * pinned, or it is new. -32602, as MCP answers an unknown tool: under hide the client was never shown it.
 * The digest lets an operator match the refusal with `mcp-task-gateway pins list`.
 */
export function toolChanged(tool: string, digest: string | undefined): Fault {
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    `Tool ${JSON.stringify(tool)} changed upstream and awaits approval`,
    "tool_changed",
    { tool, ...(digest !== undefined && { digest }) },
  );
}

/** A batch on the legacy pass-through holding tools/call or tools/list while the upstream's tools are pinned. */
export function pinnedBatch(): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    "A batch may not hold tools/call or tools/list while tool definitions are pinned; send them one by one",
    "batch_not_allowed",
  );
}

/** A batch on the legacy pass-through holding a guarded method: checking it call by call would mean splitting it. */
export function accessDeniedBatch(): Fault {
  return fault(
    400,
    JSONRPC_INVALID_REQUEST,
    "A batch may not hold tools/call or tools/list while access rules apply; send them one by one",
    "access_denied",
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

/**
 * The upstream refused a request (`status`, a 4xx) with a body over the `limit` the gateway reads to understand a
 * refusal (a refused initialize, read to see whether the upstream speaks only 2026-07-28). The refusal keeps its
 * status, so a client still sees that the upstream said no and does not retry it as a gateway failure; the body is
 * the gateway's, since the upstream's was not read whole and is not relayed cut short.
 */
export function refusalTooLarge(upstream: string, method: string, status: number, limit: number): Fault {
  return fault(
    status,
    JSONRPC_INTERNAL_ERROR,
    `Upstream MCP server ${upstream} refused ${method} with HTTP ${status} and a body over ${limit} bytes, which the gateway does not relay`,
    "answer_too_large",
    { upstream, status, limit },
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
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    "The call's arguments are nested too deeply for an input round trip",
    "arguments_too_deep",
  );
}

/** A call that may only run as a task, refused by a task limit. */
export function taskLimit(detail: string): Fault {
  return fault(200, JSONRPC_INTERNAL_ERROR, `Cannot create a task: ${detail}`, "task_limit");
}

export function resultTooLarge(what: "result" | "error", bytes: number, limit: number): JsonRpcErrorObject {
  return rpcError(
    JSONRPC_INTERNAL_ERROR,
    `The ${what} is ${bytes} bytes, over the gateway's tasks.maxResultBytes (${limit})`,
    "result_too_large",
    { bytes, limit },
  );
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
  return rpcError(
    JSONRPC_INTERNAL_ERROR,
    `The task's ${what} (${bytes} bytes) is too large for the task store now (tasks.storeBytes, tasks.maxBytesPerCaller)`,
    what === "result" || what === "error" ? "result_too_large" : "store_full",
    { bytes },
  );
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

/**
 * A request over a rate limit (limits.rules): 429, never sent upstream. `retryAfterMs` is how long until it
 * would fit; Retry-After says it in whole seconds, rounded up. `policy` and `state` are the
 * RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10) of the rules it matched.
 */
export function rateLimited(rule: string, retryAfterMs: number, policy: string, state: string): Fault {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return fault(
    429,
    JSONRPC_INTERNAL_ERROR,
    `Rate limit exceeded (rule ${JSON.stringify(rule)}): retry in ${seconds} s`,
    "rate_limited",
    { rule, retryAfterMs: Math.ceil(retryAfterMs) },
    { "retry-after": String(seconds), "ratelimit-policy": policy, ratelimit: state },
  );
}

/** The rate-limit store cannot be reached and limits.onStoreDown is deny: 503, the request not sent upstream. */
export function rateLimitUnavailable(): Fault {
  return fault(
    503,
    JSONRPC_INTERNAL_ERROR,
    "Rate limits cannot be checked right now (their store is unavailable); retry shortly",
    "rate_limit_unavailable",
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
  return rpcError(JSONRPC_INTERNAL_ERROR, message, "runner_lost");
}

/** The error of a task ended by a graceful shutdown that could not hand it on. */
export function taskShutDown(message: string): JsonRpcErrorObject {
  return rpcError(JSONRPC_INTERNAL_ERROR, message, "gateway_shutting_down");
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
  return fault(200, JSONRPC_INVALID_PARAMS, `Failed to ${verb} task: Task not found`, "task_not_found");
}

/** The error of a failed task, as stored; a task that failed without one (never expected) gets ours. */
export function taskErrorOf(error: unknown): JsonRpcErrorObject {
  return isRecord(error)
    ? (error as unknown as JsonRpcErrorObject)
    : rpcError(JSONRPC_INTERNAL_ERROR, "The task failed", "task_failed");
}

/** A task's background call that failed inside the gateway (the cause goes to the log, never to the client). */
export function taskCallFailed(): JsonRpcErrorObject {
  return rpcError(JSONRPC_INTERNAL_ERROR, "The gateway failed to run the call", "internal_error");
}

export function invalidParams(message: string, status = 200): Fault {
  return fault(status, JSONRPC_INVALID_PARAMS, message, "invalid_params");
}

// ── 2025-11-25 experimental tasks (tasks-2025/): the codes that spec names ──

/** A tool whose policy is `required`, called without `params.task` (2025-11-25: -32601). */
export function taskAugmentationRequired(tool: string): Fault {
  return fault(
    200,
    JSONRPC_METHOD_NOT_FOUND,
    `Tool ${tool} requires task augmentation (params.task)`,
    "task_augmentation_required",
  );
}

/** A tool whose policy is `never`, called with `params.task` (2025-11-25: -32601). */
export function taskAugmentationForbidden(tool: string): Fault {
  return fault(
    200,
    JSONRPC_METHOD_NOT_FOUND,
    `Tool ${tool} does not support task augmentation`,
    "task_augmentation_not_supported",
  );
}

/** tasks/cancel for a task already terminal (2025-11-25: -32602). */
export function taskAlreadyTerminal(status: string): Fault {
  return fault(
    200,
    JSONRPC_INVALID_PARAMS,
    `Cannot cancel task: already in terminal status '${status}'`,
    "task_already_terminal",
  );
}

/** tasks/result of a cancelled task: the call has no outcome to return. */
export function taskCancelledNoResult(): Fault {
  return fault(200, JSONRPC_INTERNAL_ERROR, "The task was cancelled before it produced a result", "task_cancelled");
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
