// Era detection and validation for MCP 2026-07-28 ("modern") requests. Pure: it
// looks at the parsed body and the request headers and answers either "legacy,
// pass it through", a validated modern request, or the exact error to send.
//
// The checks run in the order the spec lists them (and issue 3 fixes):
//   envelope (-32602, 400) → headers (-32020, 400) → version (-32022, 400) → method (-32601, 404).
// A request with several faults gets the first one. (The SDK 2.x server checks the
// version before missing headers; we follow the spec text's order and document it.)
import { isRecord } from "./json.js";
import {
  batchNotAllowed,
  headerMismatch,
  invalidEnvelope,
  invalidRequest,
  methodNotFound,
  unsupportedProtocolVersion,
  type Fault,
} from "./errors.js";
import type { JsonRpcErrorObject, JsonRpcId } from "./jsonrpc.js";

export const MODERN_VERSION = "2026-07-28";
export const SUPPORTED_MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];

export const META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId",
} as const;

export const LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** Requests the gateway serves on the modern surface. */
export const MODERN_METHODS: ReadonlySet<string> = new Set([
  "server/discover",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/read",
  "resources/templates/list",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "subscriptions/listen",
]);

/** Where `Mcp-Name` comes from, per method (streamable-http §Standard Request Headers; tasks extension). */
export const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
  "tasks/get": "taskId",
  "tasks/update": "taskId",
  "tasks/cancel": "taskId",
};

export interface Implementation {
  name: string;
  version: string;
  [key: string]: unknown;
}

interface ModernEnvelope {
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo: Implementation | undefined;
  logLevel: LogLevelName | undefined;
  progressToken: string | number | undefined;
}

export interface ModernRequest {
  kind: "request";
  id: string | number;
  method: string;
  params: Record<string, unknown>;
  envelope: ModernEnvelope;
}

export interface ModernNotification {
  kind: "notification";
  method: string;
  params: Record<string, unknown>;
}

export interface Rejection {
  status: number;
  id: JsonRpcId;
  error: JsonRpcErrorObject;
}

export type Classification =
  | { era: "legacy" }
  | { era: "modern"; message: ModernRequest | ModernNotification }
  | { era: "modern"; reject: Rejection };

/** Lowercase header name → value; callers pass Node's parsed headers or an adapter. */
export type HeaderLookup = (name: string) => string | undefined;

const DATE_VERSION = /^\d{4}-\d{2}-\d{2}$/;

export function isModernVersion(v: string | undefined): boolean {
  return v !== undefined && DATE_VERSION.test(v) && v >= MODERN_VERSION;
}

/**
 * A field value without the optional whitespace (spaces and tabs) around it, RFC 9110. Index walks, not
 * /^[ \t]+|[ \t]+$/: that pattern tries [ \t]+$ from every space of a run inside the value, so 16 KiB of spaces
 * between two letters (a client's header) cost 0.2–0.8 s.
 */
export function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 0x20 || value.charCodeAt(start) === 0x09)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 0x20 || value.charCodeAt(end - 1) === 0x09)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** RFC 9110 optional whitespace around a field value is not part of it. */
function headerOf(headers: HeaderLookup, name: string): string | undefined {
  const v = headers(name);
  return v === undefined ? undefined : trimOws(v);
}

const SENTINEL_PREFIX = "=?base64?";
const SENTINEL_SUFFIX = "?=";
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes an `Mcp-Name` / `Mcp-Param-*` value: `=?base64?…?=` carries base64 of
 * UTF-8 (case-sensitive markers); anything else is the value itself. Returns
 * undefined for a sentinel whose payload is not canonical base64 of valid UTF-8.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX))) return value;
  if (value.length < SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length) return undefined;
  const payload = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  if (!CANONICAL_BASE64.test(payload)) return undefined;
  try {
    return UTF8.decode(Buffer.from(payload, "base64"));
  } catch {
    return undefined;
  }
}

/**
 * The inverse, for the headers the gateway writes (Mcp-Name after a rename, a federated member's own name, the
 * bridge's requests): visible ASCII without edge spaces stays as it is; anything else, and a value that would read
 * as a sentinel itself, is sent as `=?base64?…?=`, so the receiver decodes exactly the name in the body.
 */
export function encodeHeaderValue(value: string): string {
  const plain =
    /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) &&
    !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, "utf8").toString("base64")}${SENTINEL_SUFFIX}`;
}

function reject(id: JsonRpcId, fault: Fault): Classification {
  return { era: "modern", reject: { status: fault.status, id, error: fault.error } };
}

function mismatch(id: JsonRpcId, message: string, header: string, body: unknown): Classification {
  return reject(id, headerMismatch(message, header, body));
}

function envelopeError(id: JsonRpcId, key: string, problem: string): Classification {
  return reject(id, invalidEnvelope(MODERN_VERSION, key, problem));
}

function isImplementation(v: unknown): v is Implementation {
  return isRecord(v) && typeof v.name === "string" && typeof v.version === "string";
}

function parseEnvelope(id: JsonRpcId, params: Record<string, unknown>): ModernEnvelope | Classification {
  const meta = params._meta;
  if (!isRecord(meta)) return envelopeError(id, "_meta", "missing");
  const protocolVersion = meta[META.protocolVersion];
  if (protocolVersion === undefined) return envelopeError(id, META.protocolVersion, "missing");
  if (typeof protocolVersion !== "string") return envelopeError(id, META.protocolVersion, "must be a string");
  const caps = meta[META.clientCapabilities];
  if (caps === undefined) return envelopeError(id, META.clientCapabilities, "missing");
  if (!isRecord(caps)) return envelopeError(id, META.clientCapabilities, "must be an object");
  const clientInfo = meta[META.clientInfo];
  if (clientInfo !== undefined && !isImplementation(clientInfo)) {
    return envelopeError(id, META.clientInfo, "must be an object with string name and version");
  }
  const logLevel = meta[META.logLevel];
  if (
    logLevel !== undefined &&
    !(typeof logLevel === "string" && (LOG_LEVELS as readonly string[]).includes(logLevel))
  ) {
    return envelopeError(id, META.logLevel, `must be one of ${LOG_LEVELS.join(", ")}`);
  }
  const token = meta.progressToken;
  return {
    protocolVersion,
    clientCapabilities: caps,
    clientInfo: clientInfo,
    logLevel: logLevel as LogLevelName | undefined,
    progressToken: typeof token === "string" || typeof token === "number" ? token : undefined,
  };
}

function checkHeaders(
  id: JsonRpcId,
  method: string,
  params: Record<string, unknown>,
  envelope: ModernEnvelope,
  headers: HeaderLookup,
  /** The MCP-Protocol-Version header, as classifyPost read it already. */
  version: string | undefined,
): Classification | undefined {
  if (version === undefined)
    return mismatch(id, "the MCP-Protocol-Version header is missing", "(missing)", envelope.protocolVersion);
  if (version !== envelope.protocolVersion) {
    return mismatch(
      id,
      `MCP-Protocol-Version header '${version}' does not match body '${envelope.protocolVersion}'`,
      version,
      envelope.protocolVersion,
    );
  }
  const mcpMethod = headerOf(headers, "mcp-method");
  if (mcpMethod === undefined) return mismatch(id, "the Mcp-Method header is missing", "(missing)", method);
  if (mcpMethod !== method)
    return mismatch(id, `Mcp-Method header '${mcpMethod}' does not match body '${method}'`, mcpMethod, method);
  const field = MCP_NAME_SOURCE[method];
  if (field !== undefined && typeof params[field] === "string") {
    const bodyValue = params[field];
    const raw = headerOf(headers, "mcp-name");
    if (raw === undefined) return mismatch(id, "the Mcp-Name header is missing", "(missing)", bodyValue);
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined) return mismatch(id, "the Mcp-Name header has an invalid base64 value", raw, bodyValue);
    if (decoded !== bodyValue)
      return mismatch(id, `Mcp-Name header '${decoded}' does not match body '${bodyValue}'`, decoded, bodyValue);
  }
  return undefined;
}

/**
 * Classifies a parsed POST body. `extraMethods` lets later layers (the task
 * engine) add methods to the modern surface.
 */
function claimsModern(message: unknown): boolean {
  if (!isRecord(message) || !isRecord(message.params)) return false;
  const meta = message.params._meta;
  return isRecord(meta) && META.protocolVersion in meta;
}

export function classifyPost(
  message: unknown,
  headers: HeaderLookup,
  extraMethods: ReadonlySet<string> = new Set(),
): Classification {
  // Batches are legacy session traffic, unless they smuggle a modern request: modern forbids batches.
  if (Array.isArray(message)) {
    return message.some(claimsModern) ? reject(null, batchNotAllowed(MODERN_VERSION)) : { era: "legacy" };
  }
  // JSON-RPC responses are legacy session traffic (answers to server→client requests).
  if (!isRecord(message) || typeof message.method !== "string") return { era: "legacy" };
  const method = message.method;
  const params = isRecord(message.params) ? message.params : {};
  const claims = claimsModern(message);
  const headerVersion = headerOf(headers, "mcp-protocol-version");
  if (!claims && !isModernVersion(headerVersion)) return { era: "legacy" };

  const validId = typeof message.id === "string" || typeof message.id === "number";
  if (message.jsonrpc !== "2.0" || ("id" in message && !validId)) {
    return reject(validId ? (message.id as string | number) : null, invalidRequest());
  }
  const hasId = validId;
  if (!hasId) {
    // Notification POSTs have no header requirements in this revision, but a present Mcp-Method must agree.
    const mcpMethod = headerOf(headers, "mcp-method");
    if (mcpMethod !== undefined && mcpMethod !== method) {
      return mismatch(null, `Mcp-Method header '${mcpMethod}' does not match body '${method}'`, mcpMethod, method);
    }
    return { era: "modern", message: { kind: "notification", method, params } };
  }
  const id = message.id as string | number;

  const envelope = parseEnvelope(id, params);
  if ("era" in envelope) return envelope;
  const headerProblem = checkHeaders(id, method, params, envelope, headers, headerVersion);
  if (headerProblem) return headerProblem;
  if (!SUPPORTED_MODERN_VERSIONS.includes(envelope.protocolVersion)) {
    return reject(id, unsupportedProtocolVersion(envelope.protocolVersion, SUPPORTED_MODERN_VERSIONS));
  }
  if (!MODERN_METHODS.has(method) && !extraMethods.has(method)) {
    return reject(id, methodNotFound(method));
  }
  return { era: "modern", message: { kind: "request", id, method, params, envelope } };
}
