// Maps a failure to reach the upstream onto the HTTP status and JSON-RPC error the
// gateway answers with. Pure: it reads only the error's `code`/`name`, so it works
// for undici's named errors and Node's system errors alike.
import { JSONRPC_INTERNAL_ERROR, type JsonRpcErrorObject } from "./jsonrpc.js";

export type UpstreamFailureReason =
  | "upstream_unreachable"
  | "upstream_reset"
  | "upstream_connect_timeout"
  | "upstream_timeout"
  | "upstream_error";

export interface UpstreamFailure {
  /** 502 when the upstream could not be reached or broke the connection, 504 when it was too slow. */
  status: 502 | 504;
  reason: UpstreamFailureReason;
  /** The low-level code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …) for operators. */
  cause: string;
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "EADDRNOTAVAIL"]);
const RESET = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);

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
  if (cause === "UND_ERR_CONNECT_TIMEOUT" || cause === "ETIMEDOUT") {
    return { status: 504, reason: "upstream_connect_timeout", cause };
  }
  if (cause === "UND_ERR_HEADERS_TIMEOUT" || cause === "UND_ERR_BODY_TIMEOUT") {
    return { status: 504, reason: "upstream_timeout", cause };
  }
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
