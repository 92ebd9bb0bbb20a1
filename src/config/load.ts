// Assembles the configuration from its three sources. Precedence, lowest first:
// environment variables < config file (JSON or YAML, config-file.ts) < command-line flags.
// Each source yields a partial object; they are deep-merged and then validated once by the schema.
import { ConfigError, parseConfig } from "./validate.js";
import { ArgvSyntaxError, splitCommand } from "./argv.js";
import { readConfigFile } from "./config-file.js";
import type { GatewayConfig } from "./schema.js";

export type PartialConfig = { [key: string]: unknown };

/** One settable value: where it lives in the config, and its flag and env names. */
export interface SettingSpec {
  path: readonly [string, string];
  flag: string;
  env: string;
  /** argv: a command line split like a shell splits words (no shell runs). */
  kind: "string" | "integer" | "argv";
  help: string;
}

export const SETTINGS: readonly SettingSpec[] = [
  {
    path: ["upstream", "url"],
    flag: "upstream",
    env: "MCP_GATEWAY_UPSTREAM",
    kind: "string",
    help: "upstream MCP endpoint URL (required unless the config gives it)",
  },
  {
    path: ["upstream", "command"],
    flag: "upstream-command",
    env: "MCP_GATEWAY_UPSTREAM_COMMAND",
    kind: "argv",
    help: "a stdio MCP server to run instead of --upstream, one process per session (split like a shell, never run by one)",
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

function setPath(target: PartialConfig, [section, key]: readonly [string, string], value: unknown): void {
  const existing = target[section];
  const obj = typeof existing === "object" && existing !== null ? (existing as PartialConfig) : {};
  obj[key] = value;
  target[section] = obj;
}

function fromSource(read: (spec: SettingSpec) => string | undefined): PartialConfig {
  const out: PartialConfig = {};
  for (const spec of SETTINGS) {
    const raw = read(spec);
    if (raw === undefined || raw === "") continue;
    try {
      setPath(out, spec.path, coerce(raw, spec.kind));
    } catch (err) {
      if (err instanceof ArgvSyntaxError) throw new ConfigError([`${spec.path.join(".")}: ${err.message}`]);
      throw err;
    }
  }
  return out;
}

export function configFromEnv(env: NodeJS.ProcessEnv): PartialConfig {
  return fromSource((spec) => env[spec.env]);
}

export function configFromFlags(flags: Record<string, string | undefined>): PartialConfig {
  return fromSource((spec) => flags[spec.flag]);
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

export interface LoadInput {
  flags: Record<string, string | undefined>;
  env: NodeJS.ProcessEnv;
  /** From --config, else MCP_GATEWAY_CONFIG. */
  configFile?: string | undefined;
}

export async function loadConfig({ flags, env, configFile }: LoadInput): Promise<GatewayConfig> {
  const file = configFile ?? env[CONFIG_ENV];
  const fromFile = file ? await readConfigFile(file) : {};
  return parseConfig(mergeConfigs(configFromEnv(env), fromFile, configFromFlags(flags)));
}
