// Pure translations between a modern (2026-07-28) client and a legacy
// (≤ 2025-11-25) upstream: request params going up, results and errors coming
// down, capabilities, and server/discover built from the upstream's initialize.
import { isRecord, type JsonObject } from "./json.js";
import type { JsonRpcErrorObject } from "./jsonrpc.js";
import { LEGACY_RESOURCE_NOT_FOUND, recodeResourceNotFound, UNSUPPORTED_PROTOCOL_VERSION } from "./errors.js";
import { TASKS_EXTENSION } from "./tasks-extension.js";
import { LOG_LEVELS, META, MODERN_VERSION, SUPPORTED_MODERN_VERSIONS, type LogLevelName } from "./modern-request.js";

export const LEGACY_VERSION = "2025-11-25";

export interface CacheHints {
  ttlMs: number;
  cacheScope: "public" | "private";
}

/** Results a modern client caches; they must carry ttlMs and cacheScope. */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
  "server/discover",
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
]);

/** Requests that may answer `input_required` (MRTR §Supported Requests). */
export const MRTR_METHODS: ReadonlySet<string> = new Set(["tools/call", "prompts/get", "resources/read"]);

const ENVELOPE_KEYS = [META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel];

/**
 * Params for the legacy upstream: the modern envelope, MRTR fields and the
 * legacy `task` parameter (meaningless on the modern surface) are removed, and
 * the progress token is replaced by one the gateway chose.
 */
export function legacyParams(params: JsonObject, upstreamProgressToken: string | undefined): JsonObject {
  const { _meta, inputResponses: _ir, requestState: _rs, task: _task, ...rest } = params;
  const meta: JsonObject = {};
  if (isRecord(_meta)) {
    for (const [k, v] of Object.entries(_meta)) {
      if (!ENVELOPE_KEYS.includes(k as (typeof ENVELOPE_KEYS)[number]) && k !== "progressToken") meta[k] = v;
    }
  }
  if (upstreamProgressToken !== undefined) meta.progressToken = upstreamProgressToken;
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/** Modern client capabilities → the legacy initialize form. The gateway owns tasks, so no tasks capability goes up. */
export function legacyCapabilities(modern: JsonObject): JsonObject {
  const out: JsonObject = {};
  if (isRecord(modern.experimental)) out.experimental = modern.experimental;
  if (isRecord(modern.sampling)) out.sampling = modern.sampling;
  if (isRecord(modern.elicitation)) {
    // `{}` meant form-only in 2025-11-25 as well; pass the declaration as it is.
    out.elicitation = modern.elicitation;
  }
  if (isRecord(modern.roots)) out.roots = {};
  if (isRecord(modern.extensions)) {
    const { [TASKS_EXTENSION]: _tasks, ...others } = modern.extensions;
    if (Object.keys(others).length > 0) out.extensions = others;
  }
  return out;
}

/** Stamps `resultType`, cache hints where required, and the upstream's identity. */
export function modernResult(
  method: string,
  result: unknown,
  hints: CacheHints,
  serverInfo: JsonObject | undefined,
): JsonObject {
  const base: JsonObject = isRecord(result) ? { ...result } : {};
  // Legacy-only fields that mean something else (or nothing) on the modern surface.
  delete base.task;
  if (method === "tools/list" && Array.isArray(base.tools)) {
    base.tools = base.tools.map((t: unknown) => {
      if (!isRecord(t) || !isRecord(t.execution)) return t;
      const { taskSupport: _ts, ...execution } = t.execution;
      return { ...t, execution };
    });
  }
  if (CACHEABLE_METHODS.has(method)) {
    if (!(typeof base.ttlMs === "number" && Number.isInteger(base.ttlMs) && base.ttlMs >= 0)) base.ttlMs = hints.ttlMs;
    if (base.cacheScope !== "public" && base.cacheScope !== "private") base.cacheScope = hints.cacheScope;
  }
  if (serverInfo) {
    const meta = isRecord(base._meta) ? { ...base._meta } : {};
    meta[META.serverInfo] ??= serverInfo;
    base._meta = meta;
  }
  base.resultType = "complete";
  return base;
}

/** Legacy error codes a modern client must not see: -32002 (resource not found) became -32602. */
export function modernError(error: JsonRpcErrorObject): JsonRpcErrorObject {
  if (error.code === LEGACY_RESOURCE_NOT_FOUND) return recodeResourceNotFound(error);
  return error;
}

export interface InitializeResult {
  protocolVersion: string;
  capabilities: JsonObject;
  serverInfo: JsonObject;
  instructions?: string | undefined;
}

export function parseInitializeResult(result: unknown): InitializeResult | undefined {
  if (!isRecord(result) || typeof result.protocolVersion !== "string") return undefined;
  return {
    protocolVersion: result.protocolVersion,
    capabilities: isRecord(result.capabilities) ? result.capabilities : {},
    serverInfo: isRecord(result.serverInfo) ? result.serverInfo : { name: "upstream", version: "unknown" },
    instructions: typeof result.instructions === "string" ? result.instructions : undefined,
  };
}

/** server/discover synthesized from a legacy upstream's initialize result. */
export function discoverFromInitialize(init: InitializeResult, hints: CacheHints, advertiseTasks: boolean): JsonObject {
  const { tasks: _legacyTasks, extensions, ...capabilities } = init.capabilities;
  const ext: JsonObject = isRecord(extensions) ? { ...extensions } : {};
  // Only the gateway decides whether tasks are served here.
  delete ext[TASKS_EXTENSION];
  if (advertiseTasks) ext[TASKS_EXTENSION] = {};
  const caps: JsonObject = { ...capabilities };
  if (Object.keys(ext).length > 0) caps.extensions = ext;
  return {
    resultType: "complete",
    supportedVersions: [...SUPPORTED_MODERN_VERSIONS],
    capabilities: caps,
    ...(init.instructions !== undefined && { instructions: init.instructions }),
    _meta: { [META.serverInfo]: init.serverInfo },
    ttlMs: hints.ttlMs,
    cacheScope: hints.cacheScope,
  };
}

/** True when a log message at `level` passes the request's opted-in threshold. */
export function logPasses(level: unknown, threshold: LogLevelName | undefined): boolean {
  if (threshold === undefined || typeof level !== "string") return false;
  const at = (LOG_LEVELS as readonly string[]).indexOf(level);
  return at >= 0 && at >= LOG_LEVELS.indexOf(threshold);
}

/**
 * The versions a modern-only upstream named when it refused a legacy initialize
 * (-32022 with data.supported listing no legacy version), else undefined.
 */
export function modernOnlySupported(body: unknown): string[] | undefined {
  if (!isRecord(body) || !isRecord(body.error) || body.error.code !== UNSUPPORTED_PROTOCOL_VERSION) return undefined;
  const data = body.error.data;
  const supported =
    isRecord(data) && Array.isArray(data.supported)
      ? data.supported.filter((v): v is string => typeof v === "string")
      : [];
  if (supported.length === 0 || supported.some((v) => v < MODERN_VERSION)) return undefined;
  return supported;
}
