// The digest a pin holds: the part of a tool's (or prompt's) definition an agent reads and acts on, as canonical
// JSON, hashed with SHA-256. `_meta`, `icons` and `execution` are left out: they do not change what the agent is
// told or what it sends (and the gateway itself edits execution.taskSupport for 2025-11-25 clients).
import { createHash } from "node:crypto";
import { canonicalJson, isRecord, type JsonObject } from "../protocol/json.js";

/** The fields of a tool definition a pin covers. */
const TOOL_FIELDS = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"] as const;

/** Largest definition kept whole (for a diff on /status); a larger one is kept as its digest alone. */
const MAX_KEPT_DEFINITION_BYTES = 32 * 1024;

/** The pinned part of a definition: only the covered fields, as they came. */
function pinnedPart(definition: JsonObject, fields: readonly string[] = TOOL_FIELDS): JsonObject {
  const out: JsonObject = {};
  for (const f of fields) if (definition[f] !== undefined) out[f] = definition[f];
  return out;
}

/** `sha256:<hex>` of the pinned part's canonical JSON; undefined when it cannot be read (too deep). */
export function definitionDigest(definition: JsonObject, fields: readonly string[] = TOOL_FIELDS): string | undefined {
  return canonicalDigest(pinnedPart(definition, fields))?.digest;
}

/** A pinned part's digest and the length of its canonical text (the size check uses it). */
interface CanonicalDigest {
  digest: string;
  length: number;
}

// Every checked tools/list canonicalizes and hashes every definition on the page, and an upstream sends the same
// definitions list after list: the canonical form (a recursive walk with sorted keys) was three quarters of a
// pinned list's cost (bench/RESULTS.md, issue 38). So the digest is remembered under the part's plain
// JSON.stringify text, which V8 writes natively in a fraction of that time. The key is the exact text, so a hit is
// the same definition (key order included) and can only give its own digest; two orders of one definition are two
// keys with one digest. Bounded in entries and in key characters, so an upstream listing ever-new definitions
// costs a bounded amount of memory and evicts the oldest.
const MEMO_MAX_ENTRIES = 4096;
const MEMO_MAX_KEY_CHARS = 4 * 1024 * 1024;
const memo = new Map<string, CanonicalDigest>();
let memoKeyChars = 0;

function canonicalDigest(part: JsonObject): CanonicalDigest | undefined {
  let key: string;
  try {
    key = JSON.stringify(part);
  } catch {
    return undefined; // deeper than the stack allows: the canonical walk would refuse it too
  }
  const known = memo.get(key);
  if (known !== undefined) return known;
  let canonical: string;
  try {
    canonical = canonicalJson(part);
  } catch {
    return undefined;
  }
  const found = { digest: `sha256:${createHash("sha256").update(canonical).digest("hex")}`, length: canonical.length };
  if (key.length <= MEMO_MAX_KEY_CHARS / 16) remember(key, found);
  return found;
}

/** Adds an entry, evicting the oldest until both bounds hold. */
function remember(key: string, value: CanonicalDigest): void {
  memo.set(key, value);
  memoKeyChars += key.length;
  for (const oldest of memo.keys()) {
    if (memo.size <= MEMO_MAX_ENTRIES && memoKeyChars <= MEMO_MAX_KEY_CHARS) break;
    memo.delete(oldest);
    memoKeyChars -= oldest.length;
  }
}

/** How many digests are remembered and their keys' characters (for the tests of its bounds). */
export function digestMemoSize(): { entries: number; keyChars: number } {
  return { entries: memo.size, keyChars: memoKeyChars };
}

/** A definition as it is listed: its name and digest, and its pinned part when it is small enough to keep. */
export interface SeenDefinition {
  name: string;
  digest: string;
  /** The pinned part, undefined when over MAX_KEPT_DEFINITION_BYTES. */
  definition: JsonObject | undefined;
}

/** A listed entry (a tool or a prompt) as a SeenDefinition; undefined without a string name, or too deep to digest. */
export function seenDefinition(item: unknown, fields: readonly string[] = TOOL_FIELDS): SeenDefinition | undefined {
  if (!isRecord(item) || typeof item.name !== "string") return undefined;
  const part = pinnedPart(item, fields);
  const canonical = canonicalDigest(part);
  if (canonical === undefined) return undefined;
  return {
    name: item.name,
    digest: canonical.digest,
    definition: canonical.length <= MAX_KEPT_DEFINITION_BYTES ? part : undefined,
  };
}

/** Each well-formed entry of a listed array as a SeenDefinition (the others left out). */
export function seenDefinitions(items: readonly unknown[], fields: readonly string[] = TOOL_FIELDS): SeenDefinition[] {
  return items.flatMap((item) => seenDefinition(item, fields) ?? []);
}
