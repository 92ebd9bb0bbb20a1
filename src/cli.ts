// Command-line front end: argv → config → serve. Kept free of process-global
// side effects (exit, signals) so it can be tested; src/main.ts wires those up.
import { parseArgs } from "node:util";
import { CONFIG_ENV, loadConfig, SETTINGS } from "./config/load.js";
import { ConfigError } from "./config/validate.js";
import { DEFAULT_PORT } from "./config/schema.js";
import { startGateway, type RunningGateway } from "./index.js";
import { redactUrl } from "./log/logger.js";
import { packageInfo } from "./version.js";

export const EXIT_OK = 0;
export const EXIT_USAGE = 2;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export type CliResult = { exitCode: number } | { exitCode: null; gateway: RunningGateway };

export function packageVersion(): string {
  return packageInfo().version;
}

export function helpText(): string {
  const rows = SETTINGS.map((s) => `  --${`${s.flag} ${s.kind === "integer" ? "N" : "VALUE"}`.padEnd(20)} ${s.help}\n${" ".repeat(25)}env ${s.env}`);
  return [
    "Usage: mcp-task-gateway --upstream URL [options]",
    "",
    "A reverse proxy that adds the MCP Tasks extension to any MCP server.",
    "",
    "Options:",
    ...rows,
    `  --${"config FILE".padEnd(20)} JSON config file (see gateway.config.example.json)\n${" ".repeat(25)}env ${CONFIG_ENV}`,
    `  --${"help".padEnd(20)} show this help`,
    `  --${"version".padEnd(20)} print the version`,
    "",
    "Flags override the config file, which overrides environment variables.",
    `Defaults: listen on 127.0.0.1:${DEFAULT_PORT}, MCP endpoint /mcp.`,
  ].join("\n");
}

/** Adds the flag or env name to each problem so the user knows what to fix. */
function explain(err: ConfigError, flags: Record<string, string | undefined>): string {
  const lines = err.problems.map((problem) => {
    const spec = SETTINGS.find((s) => problem.startsWith(`${s.path.join(".")}:`));
    if (!spec) return problem;
    const source = flags[spec.flag] !== undefined ? `--${spec.flag}` : `--${spec.flag} / ${spec.env} / config file`;
    return `${problem} (${source})`;
  });
  return `mcp-task-gateway: invalid configuration\n  ${lines.join("\n  ")}\nRun with --help for usage.\n`;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<CliResult> {
  const options = {
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "v" },
    ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: "string" }])),
  } as const;
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
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

  const flags: Record<string, string | undefined> = {};
  for (const s of SETTINGS) {
    const v = values[s.flag];
    if (typeof v === "string") flags[s.flag] = v;
  }
  const configFile = typeof values.config === "string" ? values.config : undefined;

  try {
    const config = await loadConfig({ flags, env: io.env, configFile });
    const gateway = await startGateway(config);
    io.stdout(`mcp-task-gateway listening on ${gateway.url} → upstream ${redactUrl(config.upstream.url)}\n`);
    return { exitCode: null, gateway };
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(explain(err, flags));
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
