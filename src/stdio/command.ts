// What the gateway knows about the configured stdio command before running it:
// how to name it (redacted), the environment it gets, and whether it can be
// started at all (for /readyz, which spawns nothing).
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import path from "node:path";
import type { UpstreamConfig } from "../config/schema.js";

const SECRET_NAME =
  /(token|secret|password|passwd|pwd|api[-_]?key|apikey|auth|credential|private[-_]?key|access[-_]?key)/i;

/** A URL's userinfo and query vanish (where credentials hide); anything else is kept. */
function redactUrlsIn(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, "$1***@")
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#]*)\?[^\s#]*/gi, "$1?***");
}

/** One argument of the command, redacted: NAME=value and --secret-ish=value keep their name only. */
function redactArg(arg: string, previous: string | undefined): string {
  if (previous !== undefined && previous.startsWith("-") && !previous.includes("=") && SECRET_NAME.test(previous))
    return "***";
  const eq = arg.indexOf("=");
  if (eq > 0 && SECRET_NAME.test(arg.slice(0, eq))) return `${arg.slice(0, eq)}=***`;
  // "Authorization: Bearer …" (mcp-remote's --header), a bare token, a JWT: as a stderr line is.
  return redactLine(arg);
}

/**
 * How the stdio upstream is named to clients and in logs: "stdio: CMD ARG…", with values of
 * secret-looking flags and variables, URL credentials and query strings replaced by ***.
 */
export function commandLabel(argv: readonly string[]): string {
  const shown = argv.map((arg, i) => redactArg(arg, argv[i - 1]));
  const text = shown.map((a) => (a === "" || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(" ");
  return `stdio: ${text.length > 200 ? `${text.slice(0, 199)}…` : text}`;
}

/** A stderr line made safe for the log and for error messages. */
export function redactLine(line: string): string {
  const clipped = line.length > 1_000 ? `${line.slice(0, 999)}…` : line;
  return redactUrlsIn(clipped)
    .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi, "$1 ***")
    .replace(
      /\b([A-Za-z0-9_-]*(?:token|secret|password|passwd|api[-_]?key|apikey|authorization|credential)[A-Za-z0-9_-]*)(["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi,
      "$1$2***",
    )
    .replace(/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, "***")
    .replace(/\b(sk|pk|rk|ghp|gho|ghs|ghu|github_pat|xox[abpr]|glpat)[-_][A-Za-z0-9_-]{10,}/g, "***");
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
