import { describe, expect, it } from "vitest";
import { errors } from "undici";
import {
  accessDeniedBatch,
  argumentsTooDeep,
  batchNotAllowed,
  classifyUpstreamFailure,
  clientErrorOf,
  headerMismatch,
  inputRequestUnsupported,
  invalidEnvelope,
  invalidParams,
  invalidRequest,
  JSONRPC_INTERNAL_ERROR,
  methodNotFound,
  missingClientCapability,
  noClientRequest,
  noClientStream,
  noValidSession,
  parseError,
  recodeResourceNotFound,
  sessionIdRequired,
  sessionNotFound,
  stdioBodyTooLarge,
  unsupportedMediaType,
  streamConflict,
  taskAlreadyTerminal,
  taskAugmentationForbidden,
  taskAugmentationRequired,
  taskCallFailed,
  taskCancelledNoResult,
  taskErrorOf,
  taskNotFound,
  tooManyInputRounds,
  unsupportedProtocolVersion,
  upstreamErrorOf,
  upstreamFailureError,
  type Fault,
  type UpstreamFailure,
  upstreamUnavailable,
} from "../../src/protocol/errors.js";
import type { JsonRpcErrorObject } from "../../src/protocol/jsonrpc.js";
import { redactUrl } from "../../src/log/logger.js";

function systemError(code: string, message = `connect ${code} 127.0.0.1:1`): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, syscall: "connect" });
}

describe("classifyUpstreamFailure", () => {
  it.each([
    ["ECONNREFUSED", 502, "upstream_unreachable"],
    ["ENOTFOUND", 502, "upstream_unreachable"],
    ["EHOSTUNREACH", 502, "upstream_unreachable"],
    ["EAI_AGAIN", 502, "upstream_unreachable"],
    ["ECONNRESET", 502, "upstream_reset"],
    ["EPIPE", 502, "upstream_reset"],
    ["UND_ERR_SOCKET", 502, "upstream_reset"],
    ["UND_ERR_CLOSED", 502, "upstream_reset"],
    ["UND_ERR_CONNECT_TIMEOUT", 504, "upstream_connect_timeout"],
    ["ETIMEDOUT", 504, "upstream_connect_timeout"],
    ["UND_ERR_HEADERS_TIMEOUT", 504, "upstream_timeout"],
    ["UND_ERR_BODY_TIMEOUT", 504, "upstream_timeout"],
  ] as const)("%s → %i %s", (code, status, reason) => {
    expect(classifyUpstreamFailure(systemError(code))).toEqual({ status, reason, cause: code });
  });

  it("maps an unknown code to 502 upstream_error and keeps the code for operators", () => {
    expect(classifyUpstreamFailure(systemError("EWHATEVER"))).toEqual({
      status: 502,
      reason: "upstream_error",
      cause: "EWHATEVER",
    });
  });

  it("maps errors without any code to 502 upstream_error", () => {
    expect(classifyUpstreamFailure(new Error("plain"))).toEqual({
      status: 502,
      reason: "upstream_error",
      cause: "UNKNOWN",
    });
    expect(classifyUpstreamFailure(new RangeError("odd"))).toEqual({
      status: 502,
      reason: "upstream_error",
      cause: "RangeError",
    });
    for (const weird of [undefined, null, "a string", 42, {}]) {
      expect(classifyUpstreamFailure(weird)).toEqual({ status: 502, reason: "upstream_error", cause: "UNKNOWN" });
    }
  });

  it("looks through `cause` wrappers (fetch-style), however deep", () => {
    const wrapped = new TypeError("fetch failed", { cause: systemError("ECONNREFUSED") });
    expect(classifyUpstreamFailure(wrapped)).toEqual({
      status: 502,
      reason: "upstream_unreachable",
      cause: "ECONNREFUSED",
    });

    const deep = new Error("outer", { cause: new Error("middle", { cause: new errors.HeadersTimeoutError() }) });
    expect(classifyUpstreamFailure(deep)).toEqual({
      status: 504,
      reason: "upstream_timeout",
      cause: "UND_ERR_HEADERS_TIMEOUT",
    });
  });

  it("prefers a code found in `cause` over the wrapper's generic name", () => {
    const wrapped = new TypeError("fetch failed", { cause: systemError("ECONNRESET") });
    expect(classifyUpstreamFailure(wrapped).cause).toBe("ECONNRESET");
    // A wrapper whose cause tells nothing falls back to the wrapper's own name.
    expect(classifyUpstreamFailure(new TypeError("fetch failed", { cause: new Error("bad port") })).cause).toBe(
      "TypeError",
    );
  });

  it("without any code, reports the innermost specific name (AbortError under a TypeError)", () => {
    const inner = Object.assign(new Error("aborted"), { name: "AbortError" });
    const wrapper = new TypeError("fetch failed", { cause: inner });
    expect(classifyUpstreamFailure(wrapper).cause).toBe("AbortError");
  });

  it("survives a self-referencing cause", () => {
    const err = new Error("loop") as Error & { cause?: unknown };
    err.cause = err;
    expect(classifyUpstreamFailure(err)).toEqual({ status: 502, reason: "upstream_error", cause: "UNKNOWN" });
  });

  it("survives a cycle of causes longer than one (a → b → a) without overflowing the stack", () => {
    const a = new Error("a") as Error & { cause?: unknown };
    const b = new Error("b", { cause: a });
    a.cause = b;
    expect(classifyUpstreamFailure(a)).toEqual({ status: 502, reason: "upstream_error", cause: "UNKNOWN" });
  });

  it("classifies undici's real error classes", () => {
    expect(classifyUpstreamFailure(new errors.ConnectTimeoutError())).toMatchObject({
      status: 504,
      reason: "upstream_connect_timeout",
      cause: "UND_ERR_CONNECT_TIMEOUT",
    });
    expect(classifyUpstreamFailure(new errors.HeadersTimeoutError())).toMatchObject({
      status: 504,
      reason: "upstream_timeout",
      cause: "UND_ERR_HEADERS_TIMEOUT",
    });
    expect(classifyUpstreamFailure(new errors.BodyTimeoutError())).toMatchObject({
      status: 504,
      reason: "upstream_timeout",
      cause: "UND_ERR_BODY_TIMEOUT",
    });
    expect(classifyUpstreamFailure(new errors.SocketError("other side closed"))).toMatchObject({
      status: 502,
      reason: "upstream_reset",
      cause: "UND_ERR_SOCKET",
    });
    expect(classifyUpstreamFailure(new errors.ClientClosedError())).toMatchObject({
      status: 502,
      reason: "upstream_reset",
      cause: "UND_ERR_CLOSED",
    });
    expect(classifyUpstreamFailure(new errors.RequestAbortedError())).toMatchObject({
      status: 502,
      reason: "upstream_error",
      cause: "UND_ERR_ABORTED",
    });
  });
});

describe("upstreamFailureError", () => {
  const failures: UpstreamFailure[] = [
    { status: 502, reason: "upstream_unreachable", cause: "ECONNREFUSED" },
    { status: 502, reason: "upstream_reset", cause: "UND_ERR_SOCKET" },
    { status: 504, reason: "upstream_connect_timeout", cause: "UND_ERR_CONNECT_TIMEOUT" },
    { status: 504, reason: "upstream_timeout", cause: "UND_ERR_HEADERS_TIMEOUT" },
    { status: 502, reason: "upstream_error", cause: "UNKNOWN" },
  ];

  it.each(failures)("names the upstream and the cause ($reason)", (failure) => {
    const upstream = "http://mcp.internal:3001/mcp";
    const err = upstreamFailureError(failure, upstream);
    expect(err.code).toBe(JSONRPC_INTERNAL_ERROR);
    expect(err.message).toContain(upstream);
    expect(err.message).toContain(failure.cause);
    expect(err.data).toEqual({ reason: failure.reason, upstream, cause: failure.cause });
  });

  it("gives each reason its own wording", () => {
    const messages = new Set(
      failures.map((f) => upstreamFailureError(f, "http://u/mcp").message.replace(/\(.*\)$/, "")),
    );
    expect(messages.size).toBe(failures.length);
  });

  it("never contains credentials when given a redacted URL", () => {
    const secretUrl = "https://alice:hunter2@mcp.example.com:8443/mcp?token=tok-SECRET&x=1#frag";
    const shown = redactUrl(secretUrl);
    const err = upstreamFailureError(classifyUpstreamFailure(systemError("ECONNREFUSED")), shown);
    const serialized = JSON.stringify(err);
    expect(err.message).toContain("https://mcp.example.com:8443/mcp");
    for (const secret of ["alice", "hunter2", "tok-SECRET", "token=", "@"]) {
      expect(serialized).not.toContain(secret);
    }
  });
});

describe("the gateway's own errors: one builder each, with code, message, HTTP status and data.reason", () => {
  // [builder, fault, status, code, message, data (reason first)]
  const faults: Array<[string, Fault, number, number, string, Record<string, unknown>]> = [
    [
      "parseError",
      parseError("Unexpected token"),
      400,
      -32700,
      "Parse error: Unexpected token",
      { reason: "parse_error" },
    ],
    [
      "invalidRequest",
      invalidRequest(),
      400,
      -32600,
      'Invalid Request: expected jsonrpc "2.0" and a string or integer id',
      { reason: "invalid_request" },
    ],
    [
      "batchNotAllowed",
      batchNotAllowed("2026-07-28"),
      400,
      -32600,
      "Invalid Request: batches are not allowed in protocol revision 2026-07-28",
      { reason: "batch_not_allowed" },
    ],
    [
      "invalidEnvelope",
      invalidEnvelope("2026-07-28", "_meta", "missing"),
      400,
      -32602,
      "Invalid _meta envelope for protocol revision 2026-07-28: _meta: missing",
      { reason: "invalid_envelope", envelope: { key: "_meta", problem: "missing" } },
    ],
    [
      "headerMismatch",
      headerMismatch("the Mcp-Method header is missing", "(missing)", "tools/list"),
      400,
      -32020,
      "Header mismatch: the Mcp-Method header is missing",
      { reason: "header_mismatch", mismatch: { header: "(missing)", body: "tools/list" } },
    ],
    [
      "unsupportedProtocolVersion",
      unsupportedProtocolVersion("2099-01-01", ["2026-07-28"]),
      400,
      -32022,
      "Unsupported protocol version: 2099-01-01",
      { reason: "unsupported_protocol_version", supported: ["2026-07-28"], requested: "2099-01-01" },
    ],
    ["methodNotFound", methodNotFound("ping"), 404, -32601, "Method not found: ping", { reason: "method_not_found" }],
    [
      "missingClientCapability",
      missingClientCapability("Tool x runs only as a task", { extensions: { "x/tasks": {} } }),
      400,
      -32021,
      "Tool x runs only as a task",
      { reason: "missing_client_capability", requiredCapabilities: { extensions: { "x/tasks": {} } } },
    ],
    [
      "tooManyInputRounds",
      tooManyInputRounds(16),
      200,
      -32603,
      "The upstream asked for input more than 16 times",
      { reason: "too_many_input_rounds" },
    ],
    ["sessionNotFound", sessionNotFound(), 404, -32001, "Session not found", { reason: "session_not_found" }],
    [
      "sessionIdRequired",
      sessionIdRequired(),
      400,
      -32000,
      "Bad Request: Mcp-Session-Id header is required",
      { reason: "session_required" },
    ],
    [
      "noValidSession",
      noValidSession(),
      400,
      -32000,
      "Bad Request: No valid session ID provided",
      { reason: "session_required" },
    ],
    [
      "streamConflict",
      streamConflict(),
      409,
      -32000,
      "Conflict: only one SSE stream is allowed per session",
      { reason: "stream_conflict" },
    ],
    [
      "stdioBodyTooLarge",
      stdioBodyTooLarge(1024),
      413,
      -32600,
      "Request body exceeds upstream.maxLineBytes (1024)",
      { reason: "body_too_large" },
    ],
    [
      "unsupportedMediaType",
      unsupportedMediaType("text/plain"),
      415,
      -32600,
      "Unsupported Media Type: MCP messages are sent as application/json",
      { reason: "unsupported_media_type", contentType: "text/plain" },
    ],
    [
      "accessDeniedBatch",
      accessDeniedBatch(),
      400,
      -32600,
      "A batch may not hold tools/call or tools/list while access rules apply; send them one by one",
      { reason: "access_denied" },
    ],
    [
      "argumentsTooDeep",
      argumentsTooDeep(),
      200,
      -32602,
      "The call's arguments are nested too deeply for an input round trip",
      { reason: "arguments_too_deep" },
    ],
    [
      "taskNotFound",
      taskNotFound("retrieve"),
      200,
      -32602,
      "Failed to retrieve task: Task not found",
      { reason: "task_not_found" },
    ],
    [
      "invalidParams",
      invalidParams("params.uri must be a string"),
      200,
      -32602,
      "params.uri must be a string",
      { reason: "invalid_params" },
    ],
    ["invalidParams (with a status)", invalidParams("bad", 400), 400, -32602, "bad", { reason: "invalid_params" }],
    [
      "taskAugmentationRequired",
      taskAugmentationRequired("slow"),
      200,
      -32601,
      "Tool slow requires task augmentation (params.task)",
      { reason: "task_augmentation_required" },
    ],
    [
      "taskAugmentationForbidden",
      taskAugmentationForbidden("fast"),
      200,
      -32601,
      "Tool fast does not support task augmentation",
      { reason: "task_augmentation_not_supported" },
    ],
    [
      "taskAlreadyTerminal",
      taskAlreadyTerminal("completed"),
      200,
      -32602,
      "Cannot cancel task: already in terminal status 'completed'",
      { reason: "task_already_terminal" },
    ],
    [
      "taskCancelledNoResult",
      taskCancelledNoResult(),
      200,
      -32603,
      "The task was cancelled before it produced a result",
      { reason: "task_cancelled" },
    ],
  ];

  it.each(faults)("%s", (_name, fault, status, code, message, data) => {
    expect(fault).toEqual({ status, error: { code, message, data } });
  });

  // Errors that never carry an HTTP status of their own: sent to an upstream, or stored with a task.
  const errors: Array<[string, JsonRpcErrorObject, number, string, string]> = [
    [
      "noClientStream",
      noClientStream(),
      -32603,
      "The client has no open stream to receive this request",
      "no_client_stream",
    ],
    ["noClientRequest", noClientRequest(), -32601, "No client request to relay this to", "no_client_request"],
    [
      "inputRequestUnsupported",
      inputRequestUnsupported("the client did not declare sampling"),
      -32601,
      "the client did not declare sampling",
      "input_request_unsupported",
    ],
    ["taskCallFailed", taskCallFailed(), -32603, "The gateway failed to run the call", "internal_error"],
  ];

  it.each(errors)("%s", (_name, error, code, message, reason) => {
    expect(error).toEqual({ code, message, data: { reason } });
  });

  it("every reason is a stable snake_case name", () => {
    const reasons = [...faults.map(([, f]) => f.error.data), ...errors.map(([, e]) => e.data)].map(
      (data) => (data as { reason: string }).reason,
    );
    for (const reason of reasons) expect(reason).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});

describe("an error answered by someone else: relayed as it is, or the gateway's own when it is not an object", () => {
  it.each([
    ["upstreamErrorOf", upstreamErrorOf, "Upstream error", "upstream_error"],
    ["clientErrorOf", clientErrorOf, "The client failed the request", "client_error"],
    ["taskErrorOf", taskErrorOf, "The task failed", "task_failed"],
  ] as const)("%s", (_name, errorOf, message, reason) => {
    const theirs = { code: -32000, message: "boom", data: { x: 1 } };
    expect(errorOf(theirs)).toBe(theirs);
    for (const malformed of [undefined, null, "boom", 42, [1]]) {
      expect(errorOf(malformed)).toEqual({ code: -32603, message, data: { reason } });
    }
  });

  it("recodeResourceNotFound: an upstream's -32002 becomes -32602, its message and data kept, no reason added", () => {
    const theirs = { code: -32002, message: "Resource not found", data: { uri: "file:///x" } };
    expect(recodeResourceNotFound(theirs)).toEqual({
      code: -32602,
      message: "Resource not found",
      data: { uri: "file:///x" },
    });
  });
});

describe("upstreamUnavailable (a federated member whose circuit breaker is open)", () => {
  it("is a 503 naming the upstream, with Retry-After in whole seconds, at least 1", () => {
    const f = upstreamUnavailable("github", 2_500);
    expect(f.status).toBe(503);
    expect(f.error.code).toBe(-32603);
    expect(f.error.message).toContain("github");
    expect(f.error.data).toEqual({ reason: "upstream_unavailable", upstream: "github", retryAfterSeconds: 3 });
    expect(f.headers).toEqual({ "retry-after": "3" });
    expect(upstreamUnavailable("github", 0).headers).toEqual({ "retry-after": "1" });
    expect(upstreamUnavailable("github", 10).headers).toEqual({ "retry-after": "1" });
  });
});
