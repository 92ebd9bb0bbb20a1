// The one way the gateway builds a JSON answer of its own (errors, bridged
// results, task methods) as a web-standard Response. Below every layer that
// answers a client, so status, body and content type stay consistent.
import type { Fault } from "../protocol/errors.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return jsonTextResponse(status, JSON.stringify(body), headers);
}

/** For a body already serialized (a stored task answer). */
function jsonTextResponse(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { "content-type": "application/json", ...headers } });
}

/** A fault as the answer to request `id`. */
export function faultResponse(id: JsonRpcId, fault: Fault): Response {
  return jsonResponse(fault.status, { jsonrpc: "2.0", id, error: fault.error }, fault.headers);
}

/** A result whose JSON is already serialized, as the answer to request `id`. */
export function resultTextResponse(id: JsonRpcId, resultJson: string): Response {
  return jsonTextResponse(200, `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`);
}
