// Origin validation against DNS rebinding (MCP Streamable HTTP transport: servers
// MUST validate Origin). Clients that are not browsers send no Origin and pass.

export interface OriginPolicy {
  allowedOrigins: readonly string[];
  allowLoopbackOrigins: boolean;
}

function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost") || h === "[::1]") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
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
