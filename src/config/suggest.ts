// "did you mean jwksUrl?" for an unknown field: the known keys of the schema's object at the field's path, and the
// one closest to what was written. A hint only: the field stays an error, and no key is ever renamed for the user.
import type { z } from "zod";

/** The parts of a zod schema's definition this walk reads; zod's own def types differ per kind. */
interface LooseDef {
  type: string;
  shape?: Record<string, z.core.$ZodType>;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  element?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
  left?: z.core.$ZodType;
  right?: z.core.$ZodType;
  getter?: () => z.core.$ZodType;
}

function defOf(schema: z.core.$ZodType): LooseDef {
  return schema._zod.def;
}

/** The schemas a value of `schema` may be judged by, wrappers (optional, default, pipe…) taken off. */
function unwrap(schema: z.core.$ZodType, depth = 0): z.core.$ZodType[] {
  const def = defOf(schema);
  if (depth > 32) return [];
  const inner = def.innerType ?? def.in ?? def.getter?.();
  if (inner !== undefined && def.type !== "record" && def.type !== "array") return unwrap(inner, depth + 1);
  if (def.options) return def.options.flatMap((o) => unwrap(o, depth + 1));
  if (def.left && def.right) return [...unwrap(def.left, depth + 1), ...unwrap(def.right, depth + 1)];
  return [schema];
}

/** What a value at `key` under `schema` is judged by. */
function child(schema: z.core.$ZodType, key: PropertyKey): z.core.$ZodType[] {
  const def = defOf(schema);
  if (def.type === "object" && typeof key === "string" && def.shape && Object.hasOwn(def.shape, key)) {
    const next = def.shape[key];
    return next ? [next] : [];
  }
  if (def.type === "record" && def.valueType) return [def.valueType];
  if (def.type === "array" && def.element) return [def.element];
  return [];
}

/** The keys an object at `path` may have, per the schema; empty when the path leads to no object. */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let here = unwrap(schema);
  for (const key of path) here = here.flatMap((s) => child(s, key)).flatMap((s) => unwrap(s));
  const keys = here.flatMap((s) => {
    const def = defOf(s);
    return def.type === "object" && def.shape ? Object.keys(def.shape) : [];
  });
  return [...new Set(keys)];
}

/**
 * The optimal string alignment distance (Damerau–Levenshtein with each substring edited once): insertions,
 * deletions, substitutions and swaps of two adjacent characters cost 1 each, so `prot` is 1 from `port`.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] as number;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      d[i * cols + j] = best;
    }
  }
  return at(rows - 1, cols - 1);
}

/**
 * The known key closest to `written`, or undefined when none is close enough to be the one meant: case is
 * ignored (thresholdms is thresholdMs), and at most a third of the written name may be edited (at least 1, at
 * most 3), so `prot` finds `port` and `jwksUri` finds `jwksUrl` but `format` finds nothing among `level` and
 * `access`. On a tie the first key in the schema's order wins.
 */
export function closestKey(written: string, known: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(written.length / 3)));
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    if (key === written) continue;
    const distance = editDistance(written.toLowerCase(), key.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}
