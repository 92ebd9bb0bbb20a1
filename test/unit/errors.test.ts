import { describe, expect, it } from "vitest";
import { errors } from "undici";
import { JSONRPC_INTERNAL_ERROR } from "../../src/protocol/jsonrpc.js";
import { classifyUpstreamFailure, upstreamFailureError, type UpstreamFailure } from "../../src/protocol/errors.js";
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
