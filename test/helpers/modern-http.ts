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

export interface ModernReply {
  status: number;
  headers: Headers;
  /** The JSON-RPC answer to the request (the last message of an SSE body). */
  message: Record<string, unknown>;
}

let nextRpcId = 1;

/**
 * One hand-built modern request, answered as a parsed JSON-RPC message. Mcp-Name
 * follows params.name (tools/call) or params.taskId (tasks/*).
 */
export async function modernRpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: { capabilities?: Record<string, unknown>; headers?: Record<string, string | undefined> } = {},
): Promise<ModernReply> {
  const id = nextRpcId++;
  const name =
    typeof params.name === "string" ? params.name : typeof params.taskId === "string" ? params.taskId : undefined;
  const res = await fetch(url, {
    method: "POST",
    headers: modernHeaders(method, name, opts.headers),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method,
      params: { ...params, _meta: modernMeta({ capabilities: opts.capabilities ?? {} }) },
    }),
  });
  const text = await res.text();
  const messages = (res.headers.get("content-type") ?? "").includes("text/event-stream")
    ? text
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>)
    : [JSON.parse(text) as Record<string, unknown>];
  const message = messages.find((m) => m.id === id) ?? messages[messages.length - 1] ?? {};
  return { status: res.status, headers: res.headers, message };
}
