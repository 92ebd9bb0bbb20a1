// Pure JSON-RPC 2.0 wire knowledge: no I/O. The pass-through path parses a body
// only to reject malformed JSON early and to learn the request id, so that the
// gateway's own error answers can carry it.
import { isRecord } from "./json.js";
import { parseError, type JsonRpcErrorObject } from "./errors.js";

export type { JsonRpcErrorObject };

export type JsonRpcId = string | number | null;

export interface JsonRpcErrorResponse {
  jsonrpc: "2.0";
  id: JsonRpcId;
  error: JsonRpcErrorObject;
}

/** What routing needs to know about a client's POST body. */
export type ParsedBody =
  { ok: true; message: unknown; id: JsonRpcId; method: string | undefined } | { ok: false; error: JsonRpcErrorObject };

function idOf(message: unknown): JsonRpcId {
  if (!isRecord(message)) return null;
  const id = message.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * Parses a client body. Malformed JSON is the only thing rejected here: shape
 * errors (batches, missing jsonrpc, …) are the upstream's to judge, so a
 * transparent proxy answers them exactly as a direct connection would.
 */
export function parseJsonRpcBody(body: Uint8Array): ParsedBody {
  let message: unknown;
  try {
    const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
    // A leading byte order mark is tolerated, as the MCP SDKs' own parsers do.
    message = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, error: parseError(detail).error };
  }
  const method = isRecord(message) && typeof message.method === "string" ? message.method : undefined;
  return { ok: true, message, id: idOf(message), method };
}

export function errorResponse(id: JsonRpcId, error: JsonRpcErrorObject): JsonRpcErrorResponse {
  return { jsonrpc: "2.0", id, error };
}
