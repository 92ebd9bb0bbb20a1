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
 * The deepest nesting of arrays and objects a client's message may have. JSON.parse spends about 1–2 µs per level
 * of nesting (nanoseconds per byte of flat JSON), so a body within server.maxBodyBytes of nothing but `[` (4 MiB:
 * 2 million levels) held the event loop, and every other client, for seconds. No MCP message comes near this depth
 * (the gateway's own canonical JSON stops at 200 levels); a deeper one is refused as a parse error before JSON.parse.
 */
export const MAX_JSON_DEPTH = 1_000;

/**
 * Whether `body` nests arrays and objects deeper than `max`: one pass over the bytes, skipping strings (a bracket in
 * a string is text). Only structure is looked at; anything malformed is left to JSON.parse.
 */
function nestsDeeperThan(body: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const b = body[i];
    if (inString) {
      if (b === 0x5c)
        i++; // a backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > max) return true;
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
  return false;
}

/**
 * Parses a client body. Malformed JSON is the only thing rejected here (and JSON nested deeper than
 * MAX_JSON_DEPTH): shape errors (batches, missing jsonrpc, …) are the upstream's to judge, so a
 * transparent proxy answers them exactly as a direct connection would.
 */
export function parseJsonRpcBody(body: Uint8Array): ParsedBody {
  // A body no longer than the limit cannot nest deeper than it: small messages are not scanned.
  if (body.byteLength > MAX_JSON_DEPTH && nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    return { ok: false, error: parseError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`).error };
  }
  let message: unknown;
  try {
    // A Buffer (every body read from Node) is decoded as it is: no view of it made per request. toString()
    // without arguments is UTF-8 straight away.
    const text = (Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength)).toString();
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
