// Turns zod's issues into one message per field, so a bad config or flag names
// exactly which field is wrong and why (the CLI exits 2 with this text).
import type { z } from "zod";
import { noteDeprecated } from "./deprecations.js";
import { closestKey, knownKeysAt } from "./suggest.js";
import type { ConfigLocation } from "./positions.js";
import { gatewayConfigSchema, NO_UPSTREAM, type GatewayConfig } from "./schema.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly code = "ERR_GATEWAY_CONFIG";
  /**
   * `locations[i]`, when known, is where problem i is in the input (the schema's problems have one), so a caller
   * that knows where the input came from can say where that is (config/positions.ts: a YAML file's line and column).
   */
  constructor(
    readonly problems: readonly string[],
    readonly locations: readonly (ConfigLocation | undefined)[] = [],
  ) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
  }
}

/** `"jwksUri" (did you mean "jwksUrl"?)`, or the key alone when no known key is close. */
function unknownKey(key: string, known: readonly string[]): string {
  const near = closestKey(key, known);
  return near === undefined ? `"${key}"` : `"${key}" (did you mean "${near}"?)`;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
  if (issue.code === "unrecognized_keys") {
    const known = knownKeysAt(gatewayConfigSchema, issue.path);
    return `${field === "(root)" ? "" : `${field}: `}unknown field(s) ${issue.keys.map((k) => unknownKey(k, known)).join(", ")}`;
  }
  if (issue.code === "invalid_key" && issue.issues.length > 0) {
    // A key its record's own check refused (a header name the gateway sets): that check's words, not "Invalid key".
    return `${field}: ${[...new Set(issue.issues.map((i) => i.message))].join("; ")}`;
  }
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) {
    return `${field}: is required`;
  }
  return `${field}: ${issue.message}`;
}

/** Sections that were renamed: the old name is still read, with a warning, unless the new one is given too. */
const RENAMED_SECTIONS = { modern: "eraBridge" } as const;

/** The input with each renamed section under its new name, and the names the input used (new → old). */
function renameSections(input: Record<string, unknown>): { out: Record<string, unknown>; used: Map<string, string> } {
  let out = input;
  const used = new Map<string, string>();
  for (const [old, current] of Object.entries(RENAMED_SECTIONS)) {
    if (!(old in out)) continue;
    if (current in out) throw new ConfigError([`${old}: renamed to ${current}; give only ${current}`]);
    const { [old]: section, ...rest } = out;
    out = { ...rest, [current]: section };
    used.set(current, old);
    noteDeprecated(`the config section "${old}" is now "${current}"; the old name will be removed in a later release`);
  }
  return { out, used };
}

/**
 * Where an issue is, as the input wrote it (a renamed section under its old name): its value's path, or for unknown
 * keys the first of them (where the reader should look).
 */
function issueLocation(issue: z.core.$ZodIssue, used: ReadonlyMap<string, string>): ConfigLocation {
  const [first] = issue.code === "unrecognized_keys" ? issue.keys : [];
  const path = first === undefined ? issue.path : [...issue.path, first];
  const [head, ...rest] = path;
  const old = typeof head === "string" ? used.get(head) : undefined;
  return { path: old === undefined ? path : [old, ...rest], key: first !== undefined };
}

/** A problem in a section the input gave under its old name names the field as the input wrote it. */
function asWritten(problem: string, used: ReadonlyMap<string, string>): string {
  for (const [current, old] of used) {
    if (problem.startsWith(`${current}.`) || problem.startsWith(`${current}:`))
      return old + problem.slice(current.length);
  }
  return problem;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

/** The configs parseConfig returned, so that one handed on (the CLI's to startGateway) is not parsed again. */
const VALIDATED = new WeakSet<object>();

/**
 * Validates raw input and fills defaults; throws ConfigError naming each bad field. A section given under its
 * former name is read as the new one, and noted for a warning (config/deprecations.ts).
 */
export function parseConfig(input: unknown): GatewayConfig {
  const record = typeof input === "object" && input !== null && !Array.isArray(input);
  const { out, used } = record
    ? renameSections(input as Record<string, unknown>)
    : { out: input, used: new Map<string, string>() };
  const result = gatewayConfigSchema.safeParse(out);
  if (result.success) {
    VALIDATED.add(result.data);
    return result.data;
  }
  const problems = result.error.issues.map((i) => asWritten(describeIssue(i), used));
  const locations = result.error.issues.map((i) => issueLocation(i, used));
  // With no upstream at all, the problem is the one required field, upstream.url. The schema says so only once every
  // field has its type (its whole-config checks run last), so it is said here when another field's type is wrong.
  const missing = `upstream.url: ${NO_UPSTREAM}`;
  const upstreams = record ? (input as { upstreams?: unknown }).upstreams : undefined;
  const none = record && !("upstream" in input) && (upstreams === undefined || isEmptyObject(upstreams));
  if (none && !problems.includes(missing)) problems.push(missing);
  throw new ConfigError(problems, locations);
}

/**
 * The config a start builds from: one that parseConfig returned is taken as it is (the CLI parses and validates the
 * config once per start, and startGateway and the gateway's settings take that result), anything else is parsed.
 * A config from parseConfig is not to be changed afterwards: it would not be validated again.
 */
export function validConfig(input: unknown): GatewayConfig {
  return typeof input === "object" && input !== null && VALIDATED.has(input)
    ? (input as GatewayConfig)
    : parseConfig(input);
}
