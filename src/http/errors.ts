// The gateway's own error answers: always a JSON-RPC error object in a JSON body
// with the matching HTTP status, so both HTTP-level and JSON-RPC-level clients
// understand what happened.
import {
  errorResponse,
  JSONRPC_INTERNAL_ERROR,
  JSONRPC_INVALID_REQUEST,
  type JsonRpcErrorResponse,
  type JsonRpcId,
} from "../protocol/jsonrpc.js";
import { jsonResponse } from "../protocol/json-response.js";

export function jsonRpcErrorResponse(
  status: number,
  body: JsonRpcErrorResponse,
  extraHeaders?: Record<string, string>,
): Response {
  return jsonResponse(status, body, extraHeaders);
}

export function payloadTooLarge(limit: number): Response {
  // The rest of the body was not read, so this connection cannot be reused.
  return jsonRpcErrorResponse(
    413,
    errorResponse(null, {
      code: JSONRPC_INVALID_REQUEST,
      message: `Request body exceeds the gateway limit of ${limit} bytes`,
      data: { reason: "body_too_large", limit },
    }),
    { connection: "close" },
  );
}

export function forbiddenOrigin(origin: string): Response {
  return jsonRpcErrorResponse(
    403,
    errorResponse(null, {
      code: JSONRPC_INVALID_REQUEST,
      message: `Origin ${JSON.stringify(origin)} is not allowed`,
      data: { reason: "origin_not_allowed" },
    }),
  );
}

export function methodNotAllowed(allow: string): Response {
  return jsonRpcErrorResponse(
    405,
    errorResponse(null, { code: JSONRPC_INVALID_REQUEST, message: "Method not allowed", data: { allow } }),
    { allow },
  );
}

/** A call still waiting for the upstream when the shutdown grace ran out: our doing, not the upstream's. */
export function shuttingDown(id: JsonRpcId): Response {
  return jsonRpcErrorResponse(
    503,
    errorResponse(id, {
      code: JSONRPC_INTERNAL_ERROR,
      message: "The gateway is shutting down; retry the request",
      data: { reason: "gateway_shutting_down" },
    }),
    { connection: "close", "retry-after": "1" },
  );
}
