// Mcp-Param-{Name} headers (SEP-2243, streamable-http §Custom Headers from Tool
// Parameters): a tool's inputSchema may mark properties with `x-mcp-header`, and
// a modern client mirrors those arguments into headers. A server that reads the
// body must check that every such header is well formed and says what the body
// says. Pure: the annotations come from a tools/list answer, the headers from a
// lookup.
import { isRecord } from "./json.js";
import { headerMismatch, type Fault } from "./errors.js";
import { decodeHeaderValue, trimOws, type HeaderLookup } from "./modern-request.js";

/** One annotated property: the header's name part and the chain of `properties` keys that reaches it. */
export interface ParamHeader {
  name: string;
  path: readonly string[];
}

/** RFC 9110 token (`1*tchar`). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A plain header value: visible ASCII, space and tab (RFC 9110 field values, SEP-2243 §Value Encoding). */
const PLAIN_VALUE = /^[\x20-\x7e\t]*$/;
/** A decimal integer as a header may carry it (compared numerically: `42.0` is 42). */
const NUMERIC = /^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const PRIMITIVE_TYPES: ReadonlySet<unknown> = new Set(["string", "integer", "boolean"]);
/** Nesting beyond this is not followed (a schema is the upstream's, not trusted to be small). */
const MAX_DEPTH = 16;

/**
 * The `x-mcp-header` annotations reachable from the schema root through
 * `properties` alone, or undefined when one of them breaks the spec's
 * constraints (not a token, a duplicate ignoring case, or on a property that is
 * not a string, integer or boolean): clients exclude such a tool, so the
 * gateway expects no headers for it.
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeader[] | undefined {
  const out: ParamHeader[] = [];
  const seen = new Set<string>();
  let valid = true;
  const walk = (schema: unknown, path: string[]): void => {
    if (!valid || !isRecord(schema) || path.length > MAX_DEPTH || !isRecord(schema.properties)) return;
    for (const [key, prop] of Object.entries(schema.properties)) {
      if (!isRecord(prop)) continue;
      const name = prop["x-mcp-header"];
      if (name !== undefined) {
        const lower = typeof name === "string" ? name.toLowerCase() : "";
        if (typeof name !== "string" || !TOKEN.test(name) || seen.has(lower) || !PRIMITIVE_TYPES.has(prop.type)) {
          valid = false;
          return;
        }
        seen.add(lower);
        out.push({ name, path: [...path, key] });
      }
      walk(prop, [...path, key]);
    }
  };
  walk(inputSchema, []);
  return valid ? out : undefined;
}

function valueAt(args: unknown, path: readonly string[]): unknown {
  let current = args;
  for (const key of path) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

function matches(decoded: string, value: unknown): boolean {
  if (typeof value === "string") return decoded === value;
  if (typeof value === "boolean") return decoded === String(value);
  if (typeof value === "number") return NUMERIC.test(decoded) && Number(decoded) === value;
  return false;
}

/**
 * Checks a tools/call's Mcp-Param-* headers against its arguments: a header
 * with characters a header value may not carry, a base64 sentinel that is not
 * canonical base64 of UTF-8, a value that differs from the argument, a header
 * missing for an argument that is present, or present for one that is absent
 * (or null). Any of these is 400 with -32020.
 */
export function checkParamHeaders(
  annotations: readonly ParamHeader[],
  args: unknown,
  headers: HeaderLookup,
): Fault | undefined {
  for (const { name, path } of annotations) {
    const header = `Mcp-Param-${name}`;
    const raw = headers(header.toLowerCase());
    const value = valueAt(args, path);
    const where = `arguments.${path.join(".")}`;
    if (value === undefined || value === null) {
      if (raw === undefined) continue;
      return headerMismatch(`the ${header} header is present but ${where} is absent`, raw, null);
    }
    if (raw === undefined)
      return headerMismatch(`the ${header} header is missing, but ${where} is set`, "(missing)", value);
    if (!PLAIN_VALUE.test(raw))
      return headerMismatch(
        `the ${header} header contains characters not allowed in a header value (encode it as =?base64?…?=)`,
        raw,
        value,
      );
    const decoded = decodeHeaderValue(trimOws(raw));
    if (decoded === undefined) return headerMismatch(`the ${header} header has an invalid base64 value`, raw, value);
    if (!matches(decoded, value))
      return headerMismatch(`${header} header '${decoded}' does not match ${where} '${String(value)}'`, decoded, value);
  }
  return undefined;
}
