// Assembles the configuration from its three sources. Precedence, lowest first:
// environment variables < config file (JSON or YAML, config-file.ts) < command-line flags.
// Each source yields a partial object; they are deep-merged and then validated once by the schema.
// --upstream and --upstream-command repeat: each NAME=… value adds a named upstream (upstreams.NAME).
import { ConfigError, parseConfig } from "./validate.js";
import { ArgvSyntaxError, splitCommand } from "./argv.js";
import { readConfigSource, type ConfigFileContents } from "./config-file.js";
import { expandHeaderRefs } from "./env-refs.js";
import { UPSTREAM_NAME, type GatewayConfig } from "./schema.js";

export type PartialConfig = { [key: string]: unknown };

/** A flag's value as parsed: a repeatable flag (SettingSpec.named) may have been given several times. */
type FlagValue = string | readonly string[] | undefined;
export type Flags = Readonly<Record<string, FlagValue>>;

/** One settable value: where it lives in the config, and its flag and env names. */
export interface SettingSpec {
  path: readonly [string, string];
  flag: string;
  env: string;
  /** argv: a command line split like a shell splits words (no shell runs). */
  kind: "string" | "integer" | "argv";
  /** What --help shows after the flag; by default from the kind. */
  arg?: string;
  /**
   * The flag is repeatable, and a value NAME=… sets upstreams.NAME.<path[1]> (a named upstream) instead of path.
   * At most one value goes without a name. The environment variable stays one plain value.
   */
  named?: true;
  help: string;
}

export const SETTINGS: readonly SettingSpec[] = [
  {
    path: ["upstream", "url"],
    flag: "upstream",
    env: "MCP_GATEWAY_UPSTREAM",
    kind: "string",
    arg: "[NAME=]URL",
    named: true,
    help: "upstream MCP endpoint URL (required unless the config gives it); repeatable as NAME=URL, each\nadding a named upstream served at <path>/NAME",
  },
  {
    path: ["upstream", "command"],
    flag: "upstream-command",
    env: "MCP_GATEWAY_UPSTREAM_COMMAND",
    kind: "argv",
    arg: '[NAME=]"CMD ARG…"',
    named: true,
    help: 'a stdio MCP server to run instead of --upstream, one process per session (split like a shell, never run\nby one); repeatable as NAME="CMD ARG…", each adding a named upstream served at <path>/NAME',
  },
  {
    path: ["server", "host"],
    flag: "host",
    env: "MCP_GATEWAY_HOST",
    kind: "string",
    help: "interface to bind (default 127.0.0.1)",
  },
  {
    path: ["server", "port"],
    flag: "port",
    env: "MCP_GATEWAY_PORT",
    kind: "integer",
    help: "port to listen on (default 8642; 0 picks a free one)",
  },
  {
    path: ["server", "path"],
    flag: "path",
    env: "MCP_GATEWAY_PATH",
    kind: "string",
    help: "MCP endpoint path (default /mcp)",
  },
  {
    path: ["tasks", "store"],
    flag: "store",
    env: "MCP_GATEWAY_STORE",
    kind: "string",
    help: "task store: memory (default) or a redis:// / rediss:// URL shared by replicas",
  },
  {
    path: ["server", "workers"],
    flag: "workers",
    env: "MCP_GATEWAY_WORKERS",
    kind: "integer",
    help: "worker processes on this port (default 1; more need --store)",
  },
  {
    path: ["tasks", "thresholdMs"],
    flag: "threshold-ms",
    env: "MCP_GATEWAY_THRESHOLD_MS",
    kind: "integer",
    help: "default task promotion threshold in ms (default 5000)",
  },
  {
    path: ["log", "level"],
    flag: "log-level",
    env: "MCP_GATEWAY_LOG_LEVEL",
    kind: "string",
    help: "silent | error | warn | info | debug (default info)",
  },
  {
    path: ["metrics", "port"],
    flag: "metrics-port",
    env: "MCP_GATEWAY_METRICS_PORT",
    kind: "integer",
    help: "serve /metrics and /status on this port instead of the main one",
  },
  {
    path: ["metrics", "token"],
    flag: "metrics-token",
    env: "MCP_GATEWAY_METRICS_TOKEN",
    kind: "string",
    help: "bearer token /metrics requires (prefer the env variable: flags show in ps)",
  },
];

export const CONFIG_ENV = "MCP_GATEWAY_CONFIG";

function coerce(value: string, kind: SettingSpec["kind"]): unknown {
  if (kind === "integer" && /^-?\d+$/.test(value.trim())) return Number(value);
  if (kind === "argv") return splitCommand(value);
  // Left as a string: the schema then reports "expected number" for this field.
  return value;
}

function setPath(target: PartialConfig, path: readonly string[], value: unknown): void {
  const [key, ...rest] = path as [string, ...string[]];
  if (rest.length === 0) {
    target[key] = value;
    return;
  }
  const existing = target[key];
  const obj = isPlainObject(existing) ? existing : {};
  setPath(obj, rest, value);
  target[key] = obj;
}

/** Sets one raw value at its path, coerced by its kind; a command line that cannot be split names the field. */
function setValue(target: PartialConfig, path: readonly string[], raw: string, kind: SettingSpec["kind"]): void {
  try {
    setPath(target, path, coerce(raw, kind));
  } catch (err) {
    if (err instanceof ArgvSyntaxError) throw new ConfigError([`${path.join(".")}: ${err.message}`]);
    throw err;
  }
}

export function configFromEnv(env: NodeJS.ProcessEnv): PartialConfig {
  const out: PartialConfig = {};
  for (const spec of SETTINGS) {
    const raw = env[spec.env];
    if (raw !== undefined && raw !== "") setValue(out, spec.path, raw, spec.kind);
  }
  return out;
}

/**
 * `NAME=` at the start of a repeatable flag's value: the named upstream it adds. The names are UPSTREAM_NAME's, so
 * a URL (its scheme ends in ":") or a command never reads as named by accident. A name the schema would refuse
 * (Bad_Name=…) is not one: --upstream refuses it as a name (no URL starts so), --upstream-command reads a command.
 */
const NAMED_VALUE = new RegExp(`^(${UPSTREAM_NAME.source.slice(1, -1)})=`);

/** The values a flag was given, in order; empty ones count as not given, as for the environment. */
function valuesOf(value: FlagValue): readonly string[] {
  const all = value === undefined ? [] : typeof value === "string" ? [value] : value;
  return all.filter((v) => v !== "");
}

/** One repeatable flag's values: each NAME=… to its named upstream, at most one plain value to spec.path. */
function setNamedValues(out: PartialConfig, spec: SettingSpec, values: readonly string[]): void {
  const [section, key] = spec.path;
  const plain: string[] = [];
  const names = new Set<string>();
  for (const value of values) {
    const name = NAMED_VALUE.exec(value)?.[1];
    if (name === undefined) {
      // Never a URL (a scheme ends in ":" and has no "="): a name the schema refuses, said as such.
      const misnamed = spec.kind === "string" ? /^([\w-]+)=/.exec(value)?.[1] : undefined;
      if (misnamed !== undefined)
        throw new ConfigError([`upstreams.${misnamed}: the name must match ${UPSTREAM_NAME.source} (--${spec.flag})`]);
      plain.push(value);
      continue;
    }
    if (names.has(name))
      throw new ConfigError([`upstreams.${name}.${key}: --${spec.flag} ${name}=… is given more than once`]);
    names.add(name);
    setValue(out, ["upstreams", name, key], value.slice(name.length + 1), spec.kind);
  }
  if (plain.length > 1)
    throw new ConfigError([
      `${section}.${key}: --${spec.flag} is given ${plain.length} times without a name, but only one upstream is unnamed (served at server.path); name the others: --${spec.flag} NAME=${spec.kind === "argv" ? '"CMD ARG…"' : "URL"}`,
    ]);
  const [only] = plain;
  if (only !== undefined) setValue(out, spec.path, only, spec.kind);
}

/** The flags' settings; a flag that does not repeat but is given twice keeps its last value, as parseArgs does. */
export function configFromFlags(flags: Flags): PartialConfig {
  const out: PartialConfig = {};
  for (const spec of SETTINGS) {
    const values = valuesOf(flags[spec.flag]);
    if (spec.named) setNamedValues(out, spec, values);
    else if (values.length > 0) setValue(out, spec.path, values[values.length - 1] as string, spec.kind);
  }
  return out;
}

function isPlainObject(v: unknown): v is PartialConfig {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Later sources win; nested objects merge, arrays and scalars replace. */
export function mergeConfigs(...sources: PartialConfig[]): PartialConfig {
  const out: PartialConfig = {};
  for (const source of sources) {
    for (const [key, value] of Object.entries(source)) {
      const prev = Object.hasOwn(out, key) ? out[key] : undefined;
      // Defined, not assigned: a "__proto__" key from a file becomes a field the schema refuses as unknown,
      // instead of setting the prototype of the merged object and vanishing.
      Object.defineProperty(out, key, {
        value: isPlainObject(prev) && isPlainObject(value) ? mergeConfigs(prev, value) : value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return out;
}

/**
 * The file's settings without the url and command of each named upstream the flags name: --upstream NAME=URL (or
 * --upstream-command NAME=…) says what that upstream is, replacing the file's command (or URL) instead of being
 * refused beside it as "not both". The rest of the file's block (headers, timeouts, policy) still applies.
 */
function withoutFlaggedTargets(fromFile: PartialConfig, fromFlags: PartialConfig): PartialConfig {
  const { upstreams: flagged } = fromFlags;
  const { upstreams: filed } = fromFile;
  if (!isPlainObject(flagged) || !isPlainObject(filed)) return fromFile;
  const upstreams = Object.fromEntries(
    Object.entries(filed).map(([name, block]) =>
      Object.hasOwn(flagged, name) && isPlainObject(block)
        ? [name, Object.fromEntries(Object.entries(block).filter(([k]) => k !== "url" && k !== "command"))]
        : [name, block],
    ),
  );
  return { ...fromFile, upstreams };
}

export interface LoadInput {
  flags: Flags;
  env: NodeJS.ProcessEnv;
  /** From --config, else MCP_GATEWAY_CONFIG. */
  configFile?: string | undefined;
}

/** The value at `path` in a partial config, or undefined. */
function valueAt(config: unknown, path: readonly PropertyKey[]): unknown {
  let here = config;
  for (const key of path) {
    if (typeof here !== "object" || here === null || !Object.hasOwn(here, key)) return undefined;
    here = (here as Record<PropertyKey, unknown>)[key];
  }
  return here;
}

/**
 * The schema's problems with the line and column of each one the YAML file wrote: a value the file gave and no
 * flag replaced, an unknown key in it, or the block of the file a required field is missing from.
 */
function locatedIn(
  err: ConfigError,
  file: string,
  locate: NonNullable<ConfigFileContents["locate"]>,
  merged: PartialConfig,
  fromFlags: PartialConfig,
): ConfigError {
  const problems = err.problems.map((problem, i) => {
    const location = err.locations[i];
    if (location === undefined || valueAt(fromFlags, location.path) !== undefined) return problem;
    const missing = !location.key && valueAt(merged, location.path) === undefined;
    const at = locate(location, missing);
    return at === undefined ? problem : `${problem} (${file} line ${at.line}, column ${at.col})`;
  });
  return new ConfigError(problems, err.locations);
}

export async function loadConfig({ flags, env, configFile }: LoadInput): Promise<GatewayConfig> {
  const file = configFile ?? env[CONFIG_ENV];
  const source = file ? await readConfigSource(file) : undefined;
  // ${VAR} in the file's header values comes from the same environment as the MCP_GATEWAY_* settings.
  const fromFile = source ? expandHeaderRefs(source.settings, env) : {};
  const fromFlags = configFromFlags(flags);
  const merged = mergeConfigs(configFromEnv(env), withoutFlaggedTargets(fromFile, fromFlags), fromFlags);
  try {
    return parseConfig(merged);
  } catch (err) {
    if (err instanceof ConfigError && file !== undefined && source?.locate !== undefined)
      throw locatedIn(err, file, source.locate, merged, fromFlags);
    throw err;
  }
}
