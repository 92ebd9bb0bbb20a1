// Argument validation (issue 36 item 2): a tools/call's arguments against the tool's inputSchema as listed after
// overrides, JSON Schema 2020-12 (Ajv's 2020 dialect; MCP 2026-07-28 lets inputSchema use any 2020-12 keyword,
// SEP-2106). Compiled validators are cached by a digest of the schema (bounded LRU), so a tool listed again with
// the same definition costs one hash.
//
// Bounds (SEP-2106: a schema comes from an upstream, and must not cost the gateway more than the call is worth):
// - `$ref` resolves within the schema only: no remote schema is ever fetched (Ajv without loadSchema).
// - Before compiling, the schema is measured: its size, depth and node count, and an estimate of the work one
//   instance value costs (composition keywords and $ref followed, with their fan-out multiplied). A $ref cycle
//   that never descends into the instance (it would recurse forever) or an estimate past the bound make the
//   schema unusable: the gateway does not validate that tool (logged once per schema) and the upstream judges
//   the call, as it does without the gateway.
// - A `pattern` (or patternProperties key) with a quantified group that is itself quantified (`(a+)+`, `(a|b*)*`),
//   the classic catastrophic backtracking, makes the schema unusable: the upstream writes the pattern, the agent
//   the string, and the gateway's event loop would run the match.
// - The root `$schema` is dropped: every schema is read as 2020-12 (the SDK 1.x servers declare draft-07, whose
//   common subset 2020-12 reads the same). The root `$id` gives way to the schema's digest, under which it is
//   registered (so `$ref: "#"` resolves) and removed again when the cache evicts it.
import { createHash } from "node:crypto";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { LRUCache } from "lru-cache";
import { isRecord, type JsonObject } from "../protocol/json.js";

export const SCHEMA_BOUNDS = {
  /** Serialized schema, in characters. */
  maxChars: 512 * 1024,
  maxDepth: 64,
  maxNodes: 20_000,
  /** Estimated subschema evaluations per instance value (composition fan-out through $ref multiplied). */
  maxWork: 50_000,
};

/** One validation failure, as the client is told it. */
export interface ArgumentError {
  /** JSON Pointer into the arguments ("" for the arguments object itself). */
  path: string;
  message: string;
}

export type Verdict = { ok: true } | { ok: false; errors: ArgumentError[] } | { ok: "unusable"; why: string };

/** Keywords whose subschemas apply to the same instance (so a $ref cycle through them alone never ends). */
const SAME_INSTANCE_ARRAYS = ["allOf", "anyOf", "oneOf"];
const SAME_INSTANCE_ONE = ["not", "if", "then", "else", "$ref", "$dynamicRef"];
const SAME_INSTANCE_MAPS = ["dependentSchemas"];
/** Keywords whose subschemas apply to parts of the instance. */
const CHILD_ONE = [
  "items",
  "additionalProperties",
  "propertyNames",
  "contains",
  "unevaluatedItems",
  "unevaluatedProperties",
];
const CHILD_ARRAYS = ["prefixItems", "items"];
const CHILD_MAPS = ["properties", "patternProperties", "$defs", "definitions"];

/** A group holding a quantifier, itself quantified: (x+)+, (x*)*, (x|y+){2,}, (?:x+)*. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,)/;

function pointer(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isRecord(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** Why a schema is too costly to validate with, or undefined when it is within the bounds. */
function schemaOverBounds(schema: unknown, text: string): string | undefined {
  if (text.length > SCHEMA_BOUNDS.maxChars) return `schema of ${text.length} characters`;
  let nodes = 0;
  const shape = (node: unknown, depth: number): string | undefined => {
    if (depth > SCHEMA_BOUNDS.maxDepth) return `schema deeper than ${SCHEMA_BOUNDS.maxDepth}`;
    if (Array.isArray(node)) {
      for (const n of node) {
        const why = shape(n, depth + 1);
        if (why) return why;
      }
      return undefined;
    }
    if (!isRecord(node)) return undefined;
    if (++nodes > SCHEMA_BOUNDS.maxNodes) return `schema of more than ${SCHEMA_BOUNDS.maxNodes} nodes`;
    if (typeof node.pattern === "string" && NESTED_QUANTIFIER.test(node.pattern))
      return `pattern ${JSON.stringify(node.pattern)} may backtrack catastrophically`;
    if (isRecord(node.patternProperties))
      for (const key of Object.keys(node.patternProperties))
        if (NESTED_QUANTIFIER.test(key)) return `pattern ${JSON.stringify(key)} may backtrack catastrophically`;
    for (const v of Object.values(node)) {
      const why = shape(v, depth + 1);
      if (why) return why;
    }
    return undefined;
  };
  const why = shape(schema, 0);
  if (why) return why;
  // The work one instance value costs, $refs followed (memoized): same-instance keywords add their subschemas'
  // work; a cycle through them alone is infinite. Child keywords start a new instance value: counted once.
  const memo = new Map<unknown, number>();
  // `path`: the same-instance chain being followed; `open`: every node whose work is being counted. A node met
  // again on its own chain recurses forever; met again past a child keyword, it is recursive data: counted once.
  const open = new Set<unknown>();
  const work = (node: unknown, path: Set<unknown>): number => {
    if (!isRecord(node)) return 1;
    const known = memo.get(node);
    if (known !== undefined) return known;
    if (path.has(node)) return Infinity;
    if (open.has(node)) return 1;
    open.add(node);
    path.add(node);
    let total = 1;
    const add = (sub: unknown): void => {
      total += work(sub, path);
    };
    for (const k of SAME_INSTANCE_ARRAYS) if (Array.isArray(node[k])) (node[k] as unknown[]).forEach(add);
    for (const k of SAME_INSTANCE_ONE) {
      const v = node[k];
      if (k === "$ref" || k === "$dynamicRef") {
        if (typeof v === "string") add(pointer(schema, v));
      } else if (isRecord(v)) add(v);
    }
    for (const k of SAME_INSTANCE_MAPS) if (isRecord(node[k])) Object.values(node[k]).forEach(add);
    path.delete(node);
    const child = (sub: unknown): void => {
      total += work(sub, new Set());
    };
    for (const k of CHILD_ONE) if (isRecord(node[k])) child(node[k]);
    for (const k of CHILD_ARRAYS) if (Array.isArray(node[k])) (node[k] as unknown[]).forEach(child);
    for (const k of CHILD_MAPS) if (isRecord(node[k])) Object.values(node[k]).forEach(child);
    open.delete(node);
    memo.set(node, total);
    return total;
  };
  let estimate: number;
  try {
    estimate = work(schema, new Set());
  } catch {
    return "schema too deeply referenced";
  }
  if (!Number.isFinite(estimate)) return "a $ref cycle that never reaches the arguments";
  if (estimate > SCHEMA_BOUNDS.maxWork) return `schema costing about ${estimate} evaluations per value`;
  return undefined;
}

function errorsOf(errors: ErrorObject[] | null | undefined): ArgumentError[] {
  return (errors ?? []).slice(0, 5).map((e) => ({
    path: e.instancePath,
    message:
      e.keyword === "additionalProperties" && isRecord(e.params) && typeof e.params.additionalProperty === "string"
        ? `must NOT have additional property ${JSON.stringify(e.params.additionalProperty)}`
        : (e.message ?? "is invalid"),
  }));
}

type Compiled = ValidateFunction | { unusable: string };

/** Compiled validators by schema digest, shared by every tool of every upstream (the same schema compiles once). */
export class ValidatorCache {
  private readonly ajv = new Ajv2020({
    strict: false,
    allErrors: false,
    validateFormats: false,
  });
  private readonly cache: LRUCache<string, { compiled: Compiled }>;

  constructor(maxEntries = 1000) {
    // Each schema is registered under its digest (so `$ref: "#"` resolves); evicted, it leaves Ajv too.
    this.cache = new LRUCache({
      max: maxEntries,
      dispose: (_v, digest) => {
        this.ajv.removeSchema(`urn:mcp-task-gateway:schema:${digest}`);
      },
    });
  }

  /** Compiled schemas held (for tests and the bench). */
  get size(): number {
    return this.cache.size;
  }

  /** The same schema object again (a listed definition kept per caller and tool) skips the digest. */
  private readonly byObject = new WeakMap<object, Compiled>();

  private compiled(schema: unknown): Compiled {
    const known = isRecord(schema) ? this.byObject.get(schema) : undefined;
    if (known) return known;
    const compiled = this.compiledByDigest(schema);
    if (isRecord(schema)) this.byObject.set(schema, compiled);
    return compiled;
  }

  private compiledByDigest(schema: unknown): Compiled {
    let text: string;
    try {
      text = JSON.stringify(schema) ?? "null";
    } catch {
      return { unusable: "schema is not JSON" };
    }
    const digest = createHash("sha256").update(text).digest("base64url");
    const hit = this.cache.get(digest);
    if (hit) return hit.compiled;
    let compiled: Compiled;
    const over = schemaOverBounds(schema, text);
    if (over) compiled = { unusable: over };
    else {
      // The root's own $id gives way to the digest: two tools may share an $id with different schemas.
      const root: JsonObject = isRecord(schema) ? { ...schema } : { type: "object" };
      delete root.$schema;
      root.$id = `urn:mcp-task-gateway:schema:${digest}`;
      try {
        compiled = this.ajv.compile(root);
      } catch (err) {
        compiled = { unusable: `schema does not compile: ${(err as Error).message}` };
      }
    }
    this.cache.set(digest, { compiled });
    return compiled;
  }

  /** The arguments against `schema` (a tool's listed inputSchema). */
  validate(schema: unknown, args: unknown): Verdict {
    const v = this.compiled(schema);
    if (!(typeof v === "function")) return { ok: "unusable", why: v.unusable };
    try {
      return v(args) ? { ok: true } : { ok: false, errors: errorsOf(v.errors) };
    } catch (err) {
      // A recursion the estimate missed ends on the stack's limit: the schema is not one to validate with.
      return { ok: "unusable", why: `validation failed: ${(err as Error).message}` };
    }
  }
}
