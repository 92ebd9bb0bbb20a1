// Where a field is in a YAML config file: the schema's problems name a path (upstream.url), and this finds that
// path's node in the parsed document, so `--check` and a start can say "line 3, column 8" for a value the schema
// refused, as they do for a YAML syntax error. JSON files get no positions (JSON.parse keeps none).
import { isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from "yaml";

/** A path into the config, and whether it names a key (an unknown field) rather than a value. */
export interface ConfigLocation {
  readonly path: readonly PropertyKey[];
  /** The last element is a key the schema does not know: the key itself is what to point at. */
  readonly key: boolean;
}

export interface Position {
  line: number;
  col: number;
}

/** What the walk found: the deepest node on the path, its key node (when reached through a map), and how far. */
interface Found {
  node: Node | null;
  keyNode: Node | undefined;
  depth: number;
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return typeof key === "string" ? key : undefined;
}

function walk(doc: Document, path: readonly PropertyKey[]): Found {
  let node: Node | null = doc.contents;
  let keyNode: Node | undefined;
  let depth = 0;
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => keyText(p.key) === String(segment));
      if (pair === undefined) break;
      keyNode = isScalar(pair.key) ? pair.key : undefined;
      node = (pair.value as Node | null) ?? null;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment] as Node | undefined;
      if (item === undefined) break;
      keyNode = undefined;
      node = item;
    } else break;
    depth++;
  }
  return { node, keyNode, depth };
}

/** The start of `node` (or of its key), as 1-based line and column. */
function startOf(node: Node | null | undefined, lines: LineCounter): Position | undefined {
  const offset = node?.range?.[0];
  return offset === undefined ? undefined : lines.linePos(offset);
}

/**
 * Where `location` is in the document: the unknown key itself; a value's start (a scalar's), or its key's line for
 * a block (a mapping or list, whose own start is on the next line). `missing`: the value is absent from the
 * input (a required field): the deepest part of the path the file has is pointed at instead, when it has one.
 * Undefined when the file does not have the value (it came from the environment or a flag).
 */
export function positionIn(
  doc: Document,
  lines: LineCounter,
  location: ConfigLocation,
  missing: boolean,
): Position | undefined {
  const found = walk(doc, location.path);
  const complete = found.depth === location.path.length;
  if (!complete) return missing && found.depth > 0 ? startOf(found.keyNode ?? found.node, lines) : undefined;
  if (location.key) return startOf(found.keyNode, lines);
  return startOf(isScalar(found.node) ? found.node : (found.keyNode ?? found.node), lines);
}
