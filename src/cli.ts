// Command-line front end: argv → config → serve. Kept free of process-global
// side effects (exit, signals) so it can be tested; src/main.ts wires those up.
import { parseArgs } from "node:util";
import { CONFIG_ENV, loadConfig, SETTINGS, type Flags } from "./config/load.js";
import { ConfigError } from "./config/validate.js";
import { takeDeprecations } from "./config/deprecations.js";
import { closestKey } from "./config/suggest.js";
import { checkConfig } from "./check-config.js";
import { namedUpstreamPath, upstreamEntries } from "./config/upstream-set.js";
import { DEFAULT_PORT, type GatewayConfig, type UpstreamConfig } from "./config/schema.js";
import { startGateway, StoreStartError, type RunningGateway } from "./index.js";
import { parseStoreSpec } from "./store/store-url.js";
import { createLogger, redactUrl, type LogFields, type Logger } from "./log/logger.js";
import { packageInfo } from "./version.js";
import { commandLabel } from "./stdio/command.js";
import { EXIT_OK, EXIT_USAGE, type CommandIo, type Subcommand } from "./commands/subcommand.js";
import { initCommand } from "./commands/init.js";
import { PRINT_FORMATS, renderConfig, type PrintFormat } from "./commands/print-config.js";
import { pinsArgv, runPinsCommand } from "./pins-command.js";

export { EXIT_OK, EXIT_USAGE };

export type CliIo = CommandIo;

/**
 * The subcommands, by the name given as the first argument (`mcp-task-gateway init gateway.yaml`); without one,
 * the arguments are the gateway's options. Adding one: its module under src/commands/ and one line here.
 */
const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  init: initCommand,
};

export type CliResult = { exitCode: number } | { exitCode: null; gateway: RunningGateway };

function packageVersion(): string {
  return packageInfo().version;
}

const HELP_INDENT = " ".repeat(25);

export function helpText(): string {
  const rows = SETTINGS.map((s) => {
    const arg = s.arg ?? (s.kind === "integer" ? "N" : s.kind === "argv" ? '"CMD ARG…"' : "VALUE");
    const help = s.help.replaceAll("\n", `\n${HELP_INDENT}`);
    const env = s.named ? `env ${s.env} (one, without NAME=)` : `env ${s.env}`;
    const flag = `${s.flag} ${arg}`;
    // A flag too long for its column gets its help on the next line.
    const lead = flag.length <= 20 ? `  --${flag.padEnd(20)} ` : `  --${flag}\n${HELP_INDENT}`;
    return `${lead}${help}\n${HELP_INDENT}${env}`;
  });
  const commands = Object.entries(SUBCOMMANDS).map(([name, c]) => {
    const call = `${name} ${c.usage}`;
    return call.length <= 20 ? `  ${call.padEnd(22)} ${c.summary}` : `  ${call}\n${HELP_INDENT}${c.summary}`;
  });
  return [
    "Usage: mcp-task-gateway --upstream URL [options]",
    '       mcp-task-gateway --upstream-command "CMD ARG…" [options]',
    "       mcp-task-gateway --upstream NAME=URL [--upstream NAME=URL…] [options]",
    "       mcp-task-gateway --check [--config FILE] [options]",
    "       mcp-task-gateway COMMAND [ARG…]",
    "       mcp-task-gateway pins list|approve [--config FILE] [--upstream NAME] [TOOL…|--all] (docs/pinning.md)",
    "",
    "A reverse proxy that adds the MCP Tasks extension to any MCP server.",
    "",
    "Commands:",
    ...commands,
    "",
    "Options:",
    ...rows,
    `  --${"config FILE".padEnd(20)} config file, JSON (.json) or YAML (.yaml, .yml) by extension (see gateway.config.example.json)\n${" ".repeat(25)}env ${CONFIG_ENV}`,
    `  --${"watch-config".padEnd(20)} reload the policy when the config file changes (SIGHUP always does)`,
    `  --${"check".padEnd(20)} validate the configuration as a start would (file, env, flags, store URL, files,\n${" ".repeat(25)}the stdio program), then exit: 0 if it is OK, 2 naming each problem; starts nothing`,
    `  --${"print-config[=FORMAT]"}\n${HELP_INDENT}print the effective configuration (file, environment and flags merged, with every default)\n${HELP_INDENT}with its secrets shown as ***, as yaml (the default) or json, then exit; starts nothing`,
    `  --${"help".padEnd(20)} show this help`,
    `  --${"version".padEnd(20)} print the version`,
    "",
    'Several upstreams: each --upstream NAME=URL or --upstream-command NAME="CMD ARG…" adds one, served at',
    "<path>/NAME; the one without a name (at most one) is served at <path> itself. For example",
    "  mcp-task-gateway --upstream http://127.0.0.1:3001/mcp --upstream github=https://api.githubcopilot.com/mcp/ \\",
    '    --upstream-command files="npx -y @modelcontextprotocol/server-filesystem /srv/docs"',
    "serves /mcp, /mcp/github and /mcp/files. A named flag replaces the URL or command the config file gives that name.",
    "",
    "Flags override the config file, which overrides environment variables.",
    `Defaults: listen on 127.0.0.1:${DEFAULT_PORT}, MCP endpoint /mcp.`,
  ].join("\n");
}

/**
 * Adds the flag or env name to each problem so the user knows what to fix; not to one that already says where the
 * config file has it (a YAML file's line and column: the value is the file's).
 */
function explain(err: ConfigError, flags: Flags, configFile?: string): string {
  const lines = err.problems.map((problem) => {
    const spec = SETTINGS.find((s) => problem.startsWith(`${s.path.join(".")}:`));
    if (!spec || (configFile !== undefined && problem.includes(` (${configFile} line `))) return problem;
    const source = flags[spec.flag] !== undefined ? `--${spec.flag}` : `--${spec.flag} / ${spec.env} / config file`;
    return `${problem} (${source})`;
  });
  return `mcp-task-gateway: invalid configuration\n  ${lines.join("\n  ")}\nRun with --help for usage.\n`;
}

/**
 * The logger of the process's life: the start line (on stdout) and the signal and shutdown lines (on stderr).
 * They are JSON log lines like every other, but written whatever log.level is: a supervisor or a test learns the
 * address from the start line, and an operator why the process ended, even with logs turned down.
 */
export function lifecycleLog(write: (line: string) => void, base?: LogFields): Logger {
  return createLogger("info", write, undefined, base);
}

/** The task store as the start line names it: a Redis URL without its credentials, or undefined in memory. */
function storeLabel(store: string): string | undefined {
  const spec = store === "memory" ? undefined : parseStoreSpec(store);
  return spec && spec.kind === "redis" ? spec.display : undefined;
}

/** The one start line: where it listens, the upstreams and the task store, never a credential. */
function startLine(url: string, upstreams: string, store: string): string {
  const shown = storeLabel(store);
  return `mcp-task-gateway listening on ${url} → ${upstreams}${shown === undefined ? "" : `, tasks in ${shown}`}`;
}

/**
 * Writes the start line, as a JSON log line on stdout: `msg` says it in a sentence (as the plain line did), and
 * the fields say it for a machine: `url`, `upstreams` (their configured names), `store`, and with --workers N
 * `workers`.
 */
export function printStartLine(io: Pick<CliIo, "stdout">, url: string, config: GatewayConfig, workers?: number): void {
  const store = storeLabel(config.tasks.store);
  const sentence = startLine(url, upstreamsLabel(config), config.tasks.store);
  lifecycleLog(io.stdout).info(workers === undefined ? sentence : `${sentence} (${workers} workers)`, {
    url,
    upstreams: upstreamEntries(config)
      .map((e) => e.name)
      .join(","),
    store: store ?? "memory",
    ...(workers !== undefined && { workers }),
  });
}

/** One upstream as the start line names it: the URL (redacted), or "stdio: CMD ARG…" (redacted) for a stdio server. */
function upstreamLabel(upstream: UpstreamConfig): string {
  return upstream.url !== undefined ? redactUrl(upstream.url) : commandLabel(upstream.command ?? []);
}

/** "upstream URL" for the single upstream; "N upstreams: default → URL, github → URL" for several. */
function upstreamsLabel(config: GatewayConfig): string {
  const entries = upstreamEntries(config);
  const [only] = entries;
  if (entries.length === 1 && only && config.upstream) return `upstream ${upstreamLabel(only.upstream)}`;
  const list = entries.map((e) => `${e.name} → ${upstreamLabel(e.upstream)}`).join(", ");
  return `${entries.length} upstream${entries.length === 1 ? "" : "s"}: ${list}`;
}

/** What a reload reads again: the same flags, environment and config file as the start. */
export interface ConfigSources {
  flags: Flags;
  env: NodeJS.ProcessEnv;
  configFile: string | undefined;
  /** --watch-config: reload when the config file changes. */
  watch: boolean;
}

export type LoadedCli = { exitCode: number } | { config: GatewayConfig; flags: Flags; sources: ConfigSources };

/**
 * `--print-config` takes an optional format (`--print-config=json`), which parseArgs cannot express: it is taken
 * out of the arguments here. The format, or an error message for one it does not know.
 */
function takePrintConfig(argv: readonly string[]): { rest: string[]; format?: PrintFormat; error?: string } {
  const rest: string[] = [];
  let format: PrintFormat | undefined;
  for (const arg of argv) {
    if (arg !== "--print-config" && !arg.startsWith("--print-config=")) {
      rest.push(arg);
      continue;
    }
    const given = arg.slice("--print-config=".length) || "yaml";
    if (!(PRINT_FORMATS as readonly string[]).includes(given))
      return { rest, error: `--print-config=${given}: the format must be ${PRINT_FORMATS.join(" or ")}` };
    format = given as PrintFormat;
  }
  return format === undefined ? { rest } : { rest, format };
}

/**
 * argv → a validated config, or the exit code (a subcommand, help, version, usage errors, --check, --print-config)
 * with its message written.
 */
export async function loadCli(argv: readonly string[], io: CliIo): Promise<LoadedCli> {
  // A subcommand of its own (pins-command.ts): it reads the config's store, then exits.
  const pins = pinsArgv(argv);
  if (pins) return { exitCode: await runPinsCommand(pins, io) };
  const [name, ...args] = argv;
  const subcommand = name !== undefined && Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  if (subcommand) return { exitCode: await subcommand.run(args, io) };
  if (name !== undefined && /^[a-z][a-z-]*$/.test(name)) {
    // Not an option, and not a command: say which command was meant, before the option parser calls it unexpected.
    const near = closestKey(name, Object.keys(SUBCOMMANDS));
    io.stderr(
      `mcp-task-gateway: unknown command "${name}"${near === undefined ? "" : ` (did you mean "${near}"?)`}\nRun with --help for usage.\n`,
    );
    return { exitCode: EXIT_USAGE };
  }
  const print = takePrintConfig(argv);
  if (print.error !== undefined) {
    io.stderr(`mcp-task-gateway: ${print.error}\nRun with --help for usage.\n`);
    return { exitCode: EXIT_USAGE };
  }
  const options = {
    config: { type: "string" },
    "watch-config": { type: "boolean" },
    check: { type: "boolean" },
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "v" },
    // A named setting's flag is repeatable (--upstream NAME=URL, once per upstream); configFromFlags sorts its values.
    ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: "string", multiple: s.named === true }])),
  } as const;
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({ args: print.rest, options, strict: true, allowPositionals: false }));
  } catch (err) {
    io.stderr(`mcp-task-gateway: ${(err as Error).message}\nRun with --help for usage.\n`);
    return { exitCode: EXIT_USAGE };
  }
  if (values.help) {
    io.stdout(`${helpText()}\n`);
    return { exitCode: EXIT_OK };
  }
  if (values.version) {
    io.stdout(`${packageVersion()}\n`);
    return { exitCode: EXIT_OK };
  }
  const flags: Record<string, string | readonly string[]> = {};
  for (const s of SETTINGS) {
    const v = values[s.flag];
    if (typeof v === "string" || Array.isArray(v)) flags[s.flag] = v;
  }
  const configFile = typeof values.config === "string" ? values.config : io.env[CONFIG_ENV] || undefined;
  const watch = values["watch-config"] === true;
  if (watch && configFile === undefined) {
    io.stderr(`mcp-task-gateway: --watch-config needs a config file (--config FILE or ${CONFIG_ENV})\n`);
    return { exitCode: EXIT_USAGE };
  }
  let config: GatewayConfig;
  try {
    config = await loadConfig({ flags, env: io.env, configFile });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(explain(err, flags, configFile));
      return { exitCode: EXIT_USAGE };
    }
    throw err;
  }
  if (values.check === true) {
    // With --print-config, only the config goes to stdout (it stays parseable): the OK line is left out.
    const code = await reportCheck(config, configFile, flags, io, print.format === undefined);
    if (code !== EXIT_OK || print.format === undefined) return { exitCode: code };
  }
  if (print.format !== undefined) {
    io.stdout(renderConfig(config, print.format, configFile));
    return { exitCode: EXIT_OK };
  }
  return { config, flags, sources: { flags, env: io.env, configFile, watch } };
}

/**
 * Where each upstream would be served, as a start would route them, then each federated endpoint with its members:
 * "default → /mcp, github → /mcp/github; federated: all → /mcp/all (default + github)".
 */
function routesLabel(config: GatewayConfig): string {
  const routes = upstreamEntries(config).map((e) => `${e.name} → ${e.path}`);
  const federated = Object.entries(config.federated).map(
    ([name, { upstreams }]) => `${name} → ${namedUpstreamPath(config.server.path, name)} (${upstreams.join(" + ")})`,
  );
  return federated.length === 0 ? routes.join(", ") : `${routes.join(", ")}; federated: ${federated.join(", ")}`;
}

/**
 * --check, after the schema accepted the config: the offline checks (check-config.ts), reported like the
 * schema's problems, or one line on stdout naming each upstream and its route. Deprecated names are warned about
 * here, as a start would.
 */
async function reportCheck(
  config: GatewayConfig,
  configFile: string | undefined,
  flags: Flags,
  io: CliIo,
  announce: boolean,
): Promise<number> {
  const problems = await checkConfig(config, io.env);
  for (const message of takeDeprecations()) io.stderr(`mcp-task-gateway: warning: ${message}\n`);
  if (problems.length > 0) {
    io.stderr(explain(new ConfigError(problems), flags));
    return EXIT_USAGE;
  }
  if (announce)
    io.stdout(
      `mcp-task-gateway: configuration OK (${configFile ?? "no config file: environment and flags"}): ${routesLabel(config)}\n`,
    );
  return EXIT_OK;
}

/** `quiet`: a cluster worker, whose start the primary announces once for all. */
export async function runCli(argv: readonly string[], io: CliIo, quiet = false): Promise<CliResult> {
  const loaded = await loadCli(argv, io);
  if ("exitCode" in loaded) return loaded;
  return startCli(loaded.config, io, quiet);
}

/** Starts the gateway of a loaded config; startup failures an operator can fix exit 2. */
export async function startCli(
  config: GatewayConfig,
  io: CliIo,
  quiet = false,
  log: Logger = createLogger(config.log.level),
): Promise<CliResult> {
  try {
    const gateway = await startGateway(config, { logger: log });
    if (!quiet) printStartLine(io, gateway.url, config);
    return { exitCode: null, gateway };
  } catch (err) {
    // What only a start finds out about the configuration (an unreadable upstream.caFile) is a usage error too.
    if (err instanceof ConfigError) {
      io.stderr(explain(err, {}));
      return { exitCode: EXIT_USAGE };
    }
    if (err instanceof StoreStartError) {
      io.stderr(`mcp-task-gateway: ${err.message} (--store / MCP_GATEWAY_STORE / tasks.store)\n`);
      return { exitCode: EXIT_USAGE };
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
      io.stderr(`mcp-task-gateway: cannot listen: ${(err as Error).message}\n`);
      return { exitCode: EXIT_USAGE };
    }
    throw err;
  }
}

/**
 * Reads the config sources again and applies the new policy. An invalid file
 * changes nothing: one error line names the fields, and the old policy stays.
 */
export async function reloadConfig(
  gateway: Pick<RunningGateway, "reload" | "reloadFailed">,
  sources: ConfigSources,
  log: Logger,
  /** What the process changed in the config it started with (a worker's socket directory), applied again. */
  adjust: (config: GatewayConfig) => GatewayConfig = (config) => config,
): Promise<boolean> {
  let next: GatewayConfig;
  try {
    next = adjust(await loadConfig(sources));
  } catch (err) {
    const problems = err instanceof ConfigError ? err.problems.join("; ") : (err as Error).message;
    log.error("configuration reload failed; the old policy stays in force", { problems });
    gateway.reloadFailed(problems);
    return false;
  }
  try {
    gateway.reload(next);
  } catch (err) {
    // Nothing was swapped (the policy is built before anything changes); the next SIGHUP may try again.
    log.error("configuration reload failed; the old policy stays in force", { problems: (err as Error).message });
    return false;
  }
  return true;
}
