// A legacy (≤ 2025-11-25) session served by the gateway in front of a
// modern-only (2026-07-28) upstream: the wire translation, pure.
//   legacy request → stateless modern request: the `_meta` envelope (version,
//     clientInfo, the capabilities declared at initialize, the log level set
//     with logging/setLevel) and the headers (MCP-Protocol-Version, Mcp-Method,
//     Mcp-Name);
//   modern result → legacy result: resultType, cache hints and the serverInfo
//     stamp taken off;
//   server/discover → the initialize result.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { LEGACY_VERSION } from "../protocol/era-translate.js";
import { encodeHeaderValue, META, MODERN_VERSION, type LogLevelName } from "../protocol/modern-request.js";

/** Legacy versions a session may negotiate; anything else gets the newest. */
const LEGACY_VERSIONS = new Set(["2024-11-05", "2025-03-26", "2025-06-18", LEGACY_VERSION]);

export function negotiatedVersion(requested: unknown): string {
  return typeof requested === "string" && LEGACY_VERSIONS.has(requested) ? requested : LEGACY_VERSION;
}

/** Legacy client capabilities → the modern declaration (2025-11-25 tasks are not offered upstream). */
export function modernCapabilities(legacy: unknown): JsonObject {
  if (!isRecord(legacy)) return {};
  const out: JsonObject = {};
  for (const key of ["elicitation", "sampling", "roots", "experimental", "extensions"]) {
    if (isRecord(legacy[key])) out[key] = legacy[key];
  }
  return out;
}

export interface Envelope {
  clientInfo: JsonObject;
  capabilities: JsonObject;
  logLevel: LogLevelName | undefined;
}

/** The params of a modern request: the client's own, with the envelope in `_meta`. */
export function modernParams(params: JsonObject, envelope: Envelope, extra: JsonObject = {}): JsonObject {
  const meta: JsonObject = isRecord(params._meta) ? { ...params._meta } : {};
  meta[META.protocolVersion] = MODERN_VERSION;
  meta[META.clientInfo] = envelope.clientInfo;
  meta[META.clientCapabilities] = envelope.capabilities;
  if (envelope.logLevel !== undefined) meta[META.logLevel] = envelope.logLevel;
  return { ...params, ...extra, _meta: meta };
}

/** Which param names the request in Mcp-Name (2026-07-28 streamable HTTP). */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  "tools/call": "name",
  "prompts/get": "name",
  "resources/read": "uri",
};

/** The modern request headers for `method` (flat name/value list), after the credential headers. */
export function modernHeaders(method: string, params: JsonObject, credentialHeaders: readonly string[]): string[] {
  const out = [...credentialHeaders, "mcp-protocol-version", MODERN_VERSION, "mcp-method", method];
  const source = NAME_SOURCE[method];
  const name = source === undefined ? undefined : params[source];
  if (typeof name === "string") out.push("mcp-name", encodeHeaderValue(name));
  return out;
}

/** A modern result as a legacy client expects it. */
export function legacyResult(result: unknown): JsonObject {
  const base: JsonObject = isRecord(result) ? { ...result } : {};
  delete base.resultType;
  delete base.ttlMs;
  delete base.cacheScope;
  if (isRecord(base._meta)) {
    const { [META.serverInfo]: _info, ...meta } = base._meta;
    if (Object.keys(meta).length > 0) base._meta = meta;
    else delete base._meta;
  }
  return base;
}

/** The initialize result for a legacy session, from the upstream's server/discover result. */
export function initializeFromDiscover(discover: JsonObject, protocolVersion: string): JsonObject {
  const meta = isRecord(discover._meta) ? discover._meta : {};
  const serverInfo = isRecord(meta[META.serverInfo])
    ? meta[META.serverInfo]
    : isRecord(discover.serverInfo)
      ? discover.serverInfo
      : { name: "upstream", version: "unknown" };
  const { extensions: _ext, ...capabilities } = isRecord(discover.capabilities) ? discover.capabilities : {};
  return {
    protocolVersion,
    capabilities,
    serverInfo,
    ...(typeof discover.instructions === "string" && { instructions: discover.instructions }),
  };
}

/** The subscriptions/listen filter a legacy GET stream stands for: every list change the upstream offers, and the subscribed URIs. */
export function listenFilter(serverCapabilities: JsonObject, subscriptions: Iterable<string>): JsonObject {
  const has = (name: string, flag: string): boolean =>
    isRecord(serverCapabilities[name]) && serverCapabilities[name][flag] === true;
  const uris = [...subscriptions];
  return {
    ...(has("tools", "listChanged") && { toolsListChanged: true }),
    ...(has("prompts", "listChanged") && { promptsListChanged: true }),
    ...(has("resources", "listChanged") && { resourcesListChanged: true }),
    ...(uris.length > 0 && { resourceSubscriptions: uris }),
  };
}

/** A notification from a listen stream, for the legacy GET stream: the subscription id taken off. */
export function legacyNotification(message: JsonObject): JsonObject {
  if (!isRecord(message.params) || !isRecord(message.params._meta)) return message;
  const { [META.subscriptionId]: _sid, ...meta } = message.params._meta;
  const params: JsonObject = { ...message.params };
  if (Object.keys(meta).length > 0) params._meta = meta;
  else delete params._meta;
  return { ...message, params };
}
