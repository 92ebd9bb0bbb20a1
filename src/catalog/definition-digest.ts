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
  try {
    return `sha256:${createHash("sha256")
      .update(canonicalJson(pinnedPart(definition, fields)))
      .digest("hex")}`;
  } catch {
    return undefined;
  }
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
  let canonical: string;
  try {
    canonical = canonicalJson(part);
  } catch {
    return undefined;
  }
  // One canonical text serves the digest and the size check (this runs for every tool of every list answer).
  const digest = `sha256:${createHash("sha256").update(canonical).digest("hex")}`;
  return { name: item.name, digest, definition: canonical.length <= MAX_KEPT_DEFINITION_BYTES ? part : undefined };
}

/** Each well-formed entry of a listed array as a SeenDefinition (the others left out). */
export function seenDefinitions(items: readonly unknown[], fields: readonly string[] = TOOL_FIELDS): SeenDefinition[] {
  return items.flatMap((item) => seenDefinition(item, fields) ?? []);
}
