// Origin validation against DNS rebinding (MCP Streamable HTTP transport: servers
// MUST validate Origin). Clients that are not browsers send no Origin and pass.
import { isLoopbackHost } from "../address/loopback.js";

export interface OriginPolicy {
  allowedOrigins: readonly string[];
  allowLoopbackOrigins: boolean;
}

export function normalizeOrigin(origin: string): string | undefined {
  try {
    const u = new URL(origin);
    if (u.origin === "null") return undefined;
    return u.origin;
  } catch {
    return undefined;
  }
}

export function isOriginAllowed(origin: string | undefined, policy: OriginPolicy): boolean {
  if (origin === undefined) return true;
  const normalized = normalizeOrigin(origin);
  if (normalized === undefined) return policy.allowedOrigins.includes(origin);
  if (policy.allowedOrigins.some((o) => o === "*" || normalizeOrigin(o) === normalized)) return true;
  return policy.allowLoopbackOrigins && isLoopbackHost(new URL(normalized).hostname);
}
