// What the gateway knows about the configured stdio command before running it:
// how to name it (redacted), the environment it gets, and whether it can be
// started at all (for /readyz, which spawns nothing).
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import path from "node:path";
import type { UpstreamConfig } from "../config/schema.js";
import { redactArgs } from "../log/redact.js";

/**
 * How the stdio upstream is named to clients and in logs: "stdio: CMD ARG…", with values of
 * secret-looking flags and variables, URL credentials and query strings replaced by ***
 * (log/redact.ts says which).
 */
export function commandLabel(argv: readonly string[]): string {
  const shown = redactArgs(argv);
  const text = shown.map((a) => (a === "" || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(" ");
  return `stdio: ${text.length > 200 ? `${text.slice(0, 199)}…` : text}`;
}

type StdioConfig = Pick<UpstreamConfig, "env" | "inheritEnv" | "cwd">;

/** The child's environment: only the inherited names (PATH and HOME by default), then upstream.env. */
export function childEnv(config: StdioConfig, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of config.inheritEnv) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...config.env };
}

export interface CommandCheck {
  ok: boolean;
  /** Why it cannot be started (no secrets: the program name and the directory only). */
  cause?: string;
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the program can be started, as spawn would find it: a path is checked as it is
 * (relative to upstream.cwd), a bare name is looked up on the child's PATH. Spawns nothing.
 */
export async function checkCommand(
  argv: readonly string[],
  config: StdioConfig,
  parent: NodeJS.ProcessEnv = process.env,
): Promise<CommandCheck> {
  const program = argv[0];
  if (program === undefined) return { ok: false, cause: "upstream.command is empty" };
  const cwd = config.cwd ?? process.cwd();
  try {
    if (!(await stat(cwd)).isDirectory()) return { ok: false, cause: `upstream.cwd ${cwd} is not a directory` };
  } catch {
    return { ok: false, cause: `upstream.cwd ${cwd} does not exist` };
  }
  if (program.includes("/") || (path.sep === "\\" && program.includes("\\"))) {
    const file = path.resolve(cwd, program);
    return (await isExecutableFile(file)) ? { ok: true } : { ok: false, cause: `${program} is not an executable file` };
  }
  const searchPath = childEnv(config, parent).PATH ?? "";
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === "") continue;
    if (await isExecutableFile(path.resolve(cwd, dir, program))) return { ok: true };
  }
  return { ok: false, cause: `${program} was not found on the PATH the stdio server gets` };
}
