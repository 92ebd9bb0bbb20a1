// Small JSON helpers shared by the wire modules.

export type JsonObject = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Deeper values are refused rather than recursed into: client input must not be able to exhaust the stack. */
export const MAX_CANONICAL_DEPTH = 200;

export class JsonTooDeepError extends Error {
  override readonly name = "JsonTooDeepError";
  constructor() {
    super(`JSON nested deeper than ${MAX_CANONICAL_DEPTH} levels`);
  }
}

/** JSON with object keys sorted, so equal values give equal strings (for digests and pool keys). */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_CANONICAL_DEPTH) throw new JsonTooDeepError();
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k], depth + 1)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
