// Pagination across upstreams. A federated list asks every member at once; the members that have more give
// their own cursors, and the endpoint's next cursor carries all of them (each a cursor.ts position), so the
// next page asks just those members for their next pages. Opaque to clients, refused whole when malformed.
import { decodeCursor, encodeCursor, MAX_CURSOR_CHARS, type FederatedCursor } from "./cursor.js";

/** The most members a cursor of cursors names: more than a federated endpoint has. */
const MAX_PAGES = 256;
/**
 * The longest cursor of cursors: MAX_PAGES positions, each as long as encodeCursor makes one, as encodePages writes
 * them (a JSON array of strings, in base64url). It was 16 KiB, which four members' long cursors (or a dozen of 1 KB)
 * passed: encodePages made a cursor decodePages refused, and the list could not go on.
 */
const MAX_PAGES_CHARS = Math.ceil(((MAX_PAGES * (MAX_CURSOR_CHARS + 3) + 2) * 4) / 3);

/** The cursor for the members' positions; throws RangeError for more than MAX_PAGES of them or a position encodeCursor refuses. */
export function encodePages(pending: readonly FederatedCursor[]): string {
  if (pending.length > MAX_PAGES) throw new RangeError(`a cursor names at most ${MAX_PAGES} members`);
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
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed.length > MAX_PAGES) return undefined;
  const out: FederatedCursor[] = [];
  for (const item of parsed) {
    const position = typeof item === "string" ? decodeCursor(item) : undefined;
    if (!position) return undefined;
    out.push(position);
  }
  return out;
}
