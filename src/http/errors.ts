// The HTTP-level refusals, as Responses: each is a Fault from the one error
// vocabulary (protocol/errors.ts), so both HTTP-level and JSON-RPC-level
// clients understand what happened.
import {
  bodyTooLarge,
  methodNotAllowed as notAllowed,
  originNotAllowed,
  shuttingDown as stopping,
} from "../protocol/errors.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { faultResponse } from "../web/json-response.js";

export function payloadTooLarge(limit: number): Response {
  return faultResponse(null, bodyTooLarge(limit));
}

export function forbiddenOrigin(origin: string): Response {
  return faultResponse(null, originNotAllowed(origin));
}

export function methodNotAllowed(allow: string): Response {
  return faultResponse(null, notAllowed(allow));
}

/** A call still waiting for the upstream when the shutdown grace ran out. */
export function shuttingDown(id: JsonRpcId): Response {
  return faultResponse(id, stopping());
}
