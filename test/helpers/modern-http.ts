// Hand-built MCP 2026-07-28 ("modern") requests for raw-HTTP tests: the
// per-request `_meta` envelope and the headers that must mirror it.
import { MCP_ACCEPT } from "./http.js";

export const MODERN_VERSION = "2026-07-28";

/** The `_meta` keys of the per-request envelope. */
export const META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
} as const;

/** A full per-request envelope (protocol version, client capabilities, client info). */
export function modernMeta(
  opts: { version?: string; capabilities?: Record<string, unknown>; clientInfo?: Record<string, unknown> } = {},
): Record<string, unknown> {
  return {
    [META.protocolVersion]: opts.version ?? MODERN_VERSION,
    [META.clientCapabilities]: opts.capabilities ?? {},
    [META.clientInfo]: opts.clientInfo ?? { name: "t", version: "1" },
  };
}

/**
 * The headers of a modern POST: JSON body, MCP Accept, MCP-Protocol-Version,
 * Mcp-Method and (when given) Mcp-Name, then `overrides` (an undefined value
 * removes that header).
 */
export function modernHeaders(
  method: string,
  name?: string,
  overrides: Record<string, string | undefined> = {},
): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: MCP_ACCEPT,
    "mcp-protocol-version": MODERN_VERSION,
    "mcp-method": method,
  };
  if (name !== undefined) headers["mcp-name"] = name;
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete headers[k];
    else headers[k] = v;
  }
  return headers;
}
