// Pagination across upstreams. A federated list asks every member at once; the members that have more give
// their own cursors, and the endpoint's next cursor carries all of them (each a cursor.ts position), so the
// next page asks just those members for their next pages. Opaque to clients, refused whole when malformed.
import { decodeCursor, encodeCursor, type FederatedCursor } from "./cursor.js";

/** The most a cursor of cursors may be: a few members' positions. */
const MAX_PAGES_CHARS = 16_384;

export function encodePages(pending: readonly FederatedCursor[]): string {
  return Buffer.from(JSON.stringify(pending.map(encodeCursor)), "utf8").toString("base64url");
}

/** The members' positions, or undefined for anything this endpoint did not give. Never throws. */
export function decodePages(text: string): FederatedCursor[] | undefined {
  if (text.length === 0 || text.length > MAX_PAGES_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return undefined;
  const out: FederatedCursor[] = [];
  for (const item of parsed) {
    const position = typeof item === "string" ? decodeCursor(item) : undefined;
    if (!position) return undefined;
    out.push(position);
  }
  return out;
}
