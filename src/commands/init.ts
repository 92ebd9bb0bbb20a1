// `mcp-task-gateway init [PATH]`: writes the starter config (starter-config.ts) to PATH (./gateway.yaml by default),
// never over an existing file. Its $schema names the JSON schema the package ships (config/gateway.schema.json) by
// a path an editor can resolve wherever the file is opened, when there is one (schemaReference).
import { readFileSync, realpathSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { starterConfig } from "./starter-config.js";
import { EXIT_OK, EXIT_USAGE, type CommandIo, type Subcommand } from "./subcommand.js";

const DEFAULT_FILE = "gateway.yaml";
const SCHEMA_FILE = "config/gateway.schema.json";

/** This package's folder (src/commands/ or dist/commands/ is two levels under it), name and version. */
function thisPackage(): { root: string; name: string; version: string } {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { name: string; version: string };
  return { root: path.resolve(root), name: pkg.name, version: pkg.version };
}

function realpathOr(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Where the config at `file` finds the package's JSON schema. When Node would find this package from the file's
 * folder (the package is installed in node_modules of that folder or one above it) or the file is inside the
 * package's own folder (a checkout), a relative path: it is in the project, resolves offline, keeps working when
 * the project moves or is cloned elsewhere, and follows the installed version on upgrade. Otherwise (npx, a global
 * install: the package lives in a cache or a system folder that will not be where the file is used) the schema of
 * this very version from the npm registry's CDN, which any editor can fetch.
 */
export function schemaReference(file: string, pkg: { root: string; name: string; version: string }): string {
  const dir = path.dirname(path.resolve(file));
  const root = realpathOr(pkg.root) ?? pkg.root;
  for (let at = dir; ; at = path.dirname(at)) {
    const installed = path.join(at, "node_modules", pkg.name);
    const found = realpathOr(at) === root ? at : realpathOr(installed) === root ? installed : undefined;
    if (found !== undefined) {
      const relative = path.relative(dir, path.join(found, SCHEMA_FILE)).split(path.sep).join("/");
      return relative.startsWith(".") ? relative : `./${relative}`;
    }
    if (path.dirname(at) === at) break;
  }
  return `https://unpkg.com/${pkg.name}@${pkg.version}/${SCHEMA_FILE}`;
}

const USAGE = `Usage: mcp-task-gateway init [PATH]

Writes a commented starter config to PATH (default ./${DEFAULT_FILE}): one upstream, a task threshold, and
commented-out examples of a second upstream, auth, a Redis store and a rate limit. PATH must end in .yaml or .yml.
An existing file is never overwritten.
`;

function refuse(io: CommandIo, message: string): number {
  io.stderr(`mcp-task-gateway init: ${message}\n`);
  return EXIT_USAGE;
}

/** init's own arguments: --help, and at most one PATH. */
function parseInitArgs(args: readonly string[]): { help: boolean; paths: string[] } {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  return { help: values.help === true, paths: positionals };
}

async function runInit(args: readonly string[], io: CommandIo): Promise<number> {
  let parsed: { help: boolean; paths: string[] };
  try {
    parsed = parseInitArgs(args);
  } catch (err) {
    return refuse(io, `${(err as Error).message}\nRun mcp-task-gateway init --help for usage.`);
  }
  if (parsed.help) {
    io.stdout(USAGE);
    return EXIT_OK;
  }
  if (parsed.paths.length > 1) return refuse(io, "give at most one PATH");
  const file = parsed.paths[0] ?? DEFAULT_FILE;
  // The config loader reads every other extension as JSON, which has no comments.
  if (!/\.ya?ml$/i.test(file)) return refuse(io, `${file}: the starter config is YAML; name it .yaml or .yml`);
  const text = starterConfig(file, schemaReference(file, thisPackage()));
  try {
    // "wx": created only if absent, in one step, so a file that appears meanwhile is not overwritten either.
    await writeFile(file, text, { flag: "wx" });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST")
      return refuse(io, `${file} already exists and was left as it is; remove it or name another file`);
    if (code === "ENOENT") return refuse(io, `${file}: its folder does not exist`);
    return refuse(io, `${file} cannot be written (${code ?? (err as Error).message})`);
  }
  io.stdout(
    `mcp-task-gateway: wrote ${file}\nSet upstream.url in it, then: mcp-task-gateway --check --config ${file}\n`,
  );
  return EXIT_OK;
}

export const initCommand: Subcommand = {
  usage: "[PATH]",
  summary: `write a commented starter config to PATH (default ./${DEFAULT_FILE}); never overwrites a file`,
  run: runInit,
};
