// Why: a federated list (tools, prompts, resources) walks the members one after another, each with its own
// pagination, so the cursor the gateway hands out must say which member the next page comes from and that
// member's own cursor. It is opaque to clients (base64url of a small JSON object) and carries a version so its
// shape can change later: a cursor of another version decodes to undefined (the client restarts the list).
// Pure: no I/O. Decoding never throws and refuses anything over MAX_CURSOR_CHARS.
import { UPSTREAM_NAME } from "../config/schema.js";

/** The longest cursor text decodeCursor reads; encodeCursor refuses to make a longer one. */
export const MAX_CURSOR_CHARS = 4_096;
const VERSION = 1;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Where the next page comes from: a member by name, and its own cursor (undefined: from its first page). */
export interface FederatedCursor {
  readonly upstream: string;
  readonly cursor?: string | undefined;
}

/** On the wire, short keys: v version, u upstream, c the upstream's cursor (absent: its first page). */
interface Wire {
  v: number;
  u: string;
  c?: string;
}

/**
 * The opaque cursor for `position`. Throws RangeError when `upstream` is not an upstream name, or when the result
 * would be longer than MAX_CURSOR_CHARS (an upstream cursor of about 3 KiB): decodeCursor would refuse it.
 */
export function encodeCursor(position: FederatedCursor): string {
  if (!UPSTREAM_NAME.test(position.upstream)) {
    throw new RangeError(`not an upstream name: ${JSON.stringify(position.upstream)}`);
  }
  const wire: Wire = { v: VERSION, u: position.upstream };
  if (position.cursor !== undefined) wire.c = position.cursor;
  const text = Buffer.from(JSON.stringify(wire), "utf8").toString("base64url");
  if (text.length > MAX_CURSOR_CHARS) throw new RangeError("the upstream's cursor is too long to wrap");
  return text;
}

/**
 * The position a cursor made by encodeCursor stands for; undefined for anything else (too long, not canonical
 * base64url, not UTF-8 JSON, another version, missing or extra fields). Whether the upstream is still a member is
 * the caller's to check.
 */
export function decodeCursor(text: string): FederatedCursor | undefined {
  if (typeof text !== "string" || text.length > MAX_CURSOR_CHARS || !BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  if (bytes.toString("base64url") !== text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const { v, u, c, ...extra } = value as Record<string, unknown>;
  if (v !== VERSION || typeof u !== "string" || !UPSTREAM_NAME.test(u)) return undefined;
  if (Object.keys(extra).length > 0 || (c !== undefined && typeof c !== "string")) return undefined;
  return c === undefined ? { upstream: u } : { upstream: u, cursor: c };
}
