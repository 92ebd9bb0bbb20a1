// What changed between an approved definition and the one an upstream lists now, for /status and
// `pins list`: which fields differ, a short text diff of the description, and the schema paths that
// differ (added, removed, changed), so a reviewer sees a one-character edit or a change deep in $defs.
import { canonicalJson, isRecord, type JsonObject } from "../protocol/json.js";

export interface DefinitionDiff {
  /** The pinned fields that differ (a field present on one side only counts). */
  fields: string[];
  /** The description's change, as `…before[-removed-][+added+]after…`, bounded. */
  description?: string | undefined;
  /** Schema paths that differ, as `+/path` (added), `-/path` (removed), `~/path` (changed); at most MAX_PATHS. */
  schema?: string[] | undefined;
}

const MAX_PATHS = 12;
const CONTEXT = 24;
const MAX_PART = 160;

function same(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

function clip(text: string): string {
  return text.length > MAX_PART ? `${text.slice(0, MAX_PART)}…` : text;
}

/** The one edited span between two texts: their common head and tail kept as context, the middle shown. */
export function textDiff(before: string, after: string): string {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  )
    tail++;
  const removed = before.slice(head, before.length - tail);
  const added = after.slice(head, after.length - tail);
  const lead = head > CONTEXT ? `…${before.slice(head - CONTEXT, head)}` : before.slice(0, head);
  const end = before.length - tail;
  const trail = tail > CONTEXT ? `${before.slice(end, end + CONTEXT)}…` : before.slice(end);
  return `${lead}${removed && `[-${clip(removed)}-]`}${added && `[+${clip(added)}+]`}${trail}`;
}

function pointer(path: string, key: string): string {
  return `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

/** The paths where two JSON values differ, depth first, at most MAX_PATHS (then one `…`). */
export function jsonPaths(before: unknown, after: unknown): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, path: string, depth: number): void => {
    if (out.length > MAX_PATHS) return;
    if (same(a, b)) return;
    if (depth < 32 && isRecord(a) && isRecord(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const p = pointer(path, key);
        if (!(key in b)) out.push(`-${p}`);
        else if (!(key in a)) out.push(`+${p}`);
        else walk(a[key], b[key], p, depth + 1);
        if (out.length > MAX_PATHS) return;
      }
      return;
    }
    if (depth < 32 && Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach((v, i) => walk(v, b[i], `${path}/${i}`, depth + 1));
      return;
    }
    out.push(`~${path || "/"}`);
  };
  walk(before, after, "", 0);
  return out.length > MAX_PATHS ? [...out.slice(0, MAX_PATHS), "…"] : out;
}

/** The change from `before` (undefined: a new tool) to `after` (undefined: not kept, too large to diff). */
export function definitionDiff(before: JsonObject | undefined, after: JsonObject | undefined): DefinitionDiff {
  if (!before || !after) return { fields: after ? Object.keys(after).filter((k) => k !== "name") : [] };
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter(
    (f) => !same(before[f], after[f]),
  );
  const diff: DefinitionDiff = { fields };
  if (fields.includes("description"))
    diff.description = textDiff(String(before.description ?? ""), String(after.description ?? ""));
  const schemaPaths = ["inputSchema", "outputSchema", "arguments"]
    .filter((f) => fields.includes(f))
    .flatMap((f) =>
      jsonPaths(before[f], after[f]).map((p) => `${p.slice(0, 1)}/${f}${p.slice(1) === "/" ? "" : p.slice(1)}`),
    );
  if (schemaPaths.length > 0) diff.schema = schemaPaths.slice(0, MAX_PATHS);
  return diff;
}
