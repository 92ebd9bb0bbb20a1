// End-to-end vs hop-by-hop header rules (RFC 9110 §7.6.1). Everything end-to-end
// (Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Authorization,
// WWW-Authenticate, Accept, Content-Type, …) passes both ways untouched; headers
// that describe one connection are dropped, including any the peer names in its
// own Connection header.

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** The header a request forwarded between replicas carries its credential in (replicas/forward-token.ts). */
export const FORWARDED_HEADER = "mcp-gateway-forwarded";

/**
 * Request headers the gateway recomputes for its own upstream connection, and the replicas' own credential,
 * which never leaves the replicas (a forwarder adds a fresh one for its hop, bound to that request).
 */
const REQUEST_RECOMPUTED = new Set(["host", "content-length", "expect", "http2-settings", FORWARDED_HEADER]);

/** Dropped from every request on its way upstream: the connection's own and the recomputed, in one lookup. */
const REQUEST_DROPPED = new Set([...HOP_BY_HOP, ...REQUEST_RECOMPUTED]);

/**
 * Whether a Connection value names only headers dropped anyway (`keep-alive`, `upgrade`, …): the usual case,
 * answered without building the Set of its tokens (which cost ≈2 µs per request on the pass-through).
 */
function namesOnlyHopByHop(value: string | readonly string[]): boolean {
  if (typeof value !== "string") {
    for (const v of value) if (!namesOnlyHopByHop(v)) return false;
    return true;
  }
  let start = 0;
  while (start <= value.length) {
    let end = value.indexOf(",", start);
    if (end === -1) end = value.length;
    // A whole lowercase, untrimmed value ("keep-alive") comes back from slice/trim/toLowerCase as itself.
    const token = value.slice(start, end).trim().toLowerCase();
    if (token && !HOP_BY_HOP.has(token)) return false;
    start = end + 1;
  }
  return true;
}

/** The header names a Connection header lists (lowercase), or undefined when it lists none. */
function connectionTokens(value: string | undefined): Set<string> | undefined {
  if (!value) return undefined;
  let tokens: Set<string> | undefined;
  for (const token of value.split(",")) {
    const t = token.trim().toLowerCase();
    if (t) (tokens ??= new Set()).add(t);
  }
  return tokens;
}

export interface ForwardedFor {
  /** The client's address as the gateway saw it, if known. */
  clientIp?: string | undefined;
  /** `http` or `https`: how the client reached the gateway. */
  proto: string;
  /** The Host the client used. */
  host?: string | undefined;
}

/**
 * Builds the upstream request headers from Node's rawHeaders (name, value, name,
 * value, …), preserving repeated headers and their order. Returns the flat array
 * form undici accepts.
 */
export function upstreamRequestHeaders(rawHeaders: readonly string[], forwarded?: ForwardedFor): string[] {
  // One pass, each name lowercased once (the pass-through's hot path); the rare Connection header that names an
  // end-to-end header is applied afterwards.
  let connection: string | undefined;
  let priorXff: string | undefined;
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const value = rawHeaders[i + 1] as string;
    if (name === "connection") {
      connection = connection ? `${connection},${value}` : value;
      continue;
    }
    if (REQUEST_DROPPED.has(name)) continue;
    if (forwarded && name === "x-forwarded-for") {
      priorXff = priorXff ? `${priorXff}, ${value}` : value;
      continue;
    }
    if (forwarded && (name === "x-forwarded-proto" || name === "x-forwarded-host")) continue;
    out.push(name, value);
  }
  // Tokens that name hop-by-hop headers change nothing: those are gone already.
  const dropped = connection && !namesOnlyHopByHop(connection) ? connectionTokens(connection) : undefined;
  if (dropped) {
    for (let i = out.length - 2; i >= 0; i -= 2) if (dropped.has(out[i] as string)) out.splice(i, 2);
    // A Connection header naming X-Forwarded-For: the client's own chain is not passed on either.
    if (dropped.has("x-forwarded-for")) priorXff = undefined;
  }
  if (forwarded) {
    // `||`, not `??`: an empty X-Forwarded-For from the client must not stand in for the client's own address.
    const chain =
      priorXff && forwarded.clientIp ? `${priorXff}, ${forwarded.clientIp}` : priorXff || forwarded.clientIp;
    if (chain) out.push("x-forwarded-for", chain);
    out.push("x-forwarded-proto", forwarded.proto);
    if (forwarded.host) out.push("x-forwarded-host", forwarded.host);
  }
  return out;
}

export type ResponseHeaderValue = string | string[] | undefined;

/**
 * Filters the upstream's response headers for the client. `dropContentLength`
 * is set when the gateway will add bytes (SSE keep-alive comments).
 */
export function clientResponseHeaders(
  headers: Record<string, ResponseHeaderValue>,
  dropContentLength = false,
): Record<string, string | string[]> {
  // One for…in, no arrays per response (the pass-through's hot path). A Connection header that names anything
  // but hop-by-hop headers (rare: upstreams send `keep-alive`) goes to the general filter, which drops those too.
  const out: Record<string, string | string[]> = {};
  for (const rawName in headers) {
    const value = headers[rawName];
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    if (HOP_BY_HOP.has(name)) {
      if (name === "connection" && !namesOnlyHopByHop(value)) return withConnectionNamed(headers, dropContentLength);
      continue;
    }
    if (dropContentLength && name === "content-length") continue;
    out[name] = value;
  }
  return out;
}

/** clientResponseHeaders when the Connection header names end-to-end headers: those are dropped as well. */
function withConnectionNamed(
  headers: Record<string, ResponseHeaderValue>,
  dropContentLength: boolean,
): Record<string, string | string[]> {
  let dropped: Set<string> | undefined;
  for (const rawName in headers) {
    if (rawName.length !== 10 || rawName.toLowerCase() !== "connection") continue;
    const connection = headers[rawName];
    dropped = connectionTokens(Array.isArray(connection) ? connection.join(",") : connection);
    break;
  }
  const out: Record<string, string | string[]> = {};
  for (const rawName in headers) {
    const value = headers[rawName];
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    if (HOP_BY_HOP.has(name) || dropped?.has(name)) continue;
    if (dropContentLength && name === "content-length") continue;
    out[name] = value;
  }
  return out;
}

/** First value of a header in undici's response-header record. */
export function headerValue(headers: Record<string, ResponseHeaderValue>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function isEventStream(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.toLowerCase().startsWith("text/event-stream");
}
