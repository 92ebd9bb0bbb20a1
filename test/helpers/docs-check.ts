// Checks that the docs (README.md and docs/*.md) say what the code does, in three ways:
//
// 1. Config snippets validate. Every fenced ```yaml / ```yml / ```json block that is a gateway config is loaded the
//    way the gateway loads a config file: written to a file with its extension and read by loadConfig (the YAML or
//    JSON reader, ${VAR} expansion, the zod schema), with every ${VAR} it names set in the environment.
//    - A block is a config when one of its top-level keys is a top-level config field (`upstream`, `tasks`, …).
//      Other blocks (a JSON-RPC message, a log line, a Kubernetes manifest, a /status.json answer) are not checked.
//    - A config without `upstream` or `upstreams` is a fragment of one (a `tasks:` block): it is checked with an
//      upstream given as by --upstream, so everything it does say is still checked.
//    - `<!-- not-a-config -->` on the line before the fence skips a block that looks like a config but is not one
//      (the answer of an endpoint that happens to have an `upstreams` field).
//    - JSON Lines (one object a line) are read line by line; a ```json block that is neither is a problem.
// 2. Flags exist. Every `--flag` given to the gateway is one its argument parser (src/cli.ts, with the settings of
//    src/config/load.ts) accepts. A flag is the gateway's when it follows the gateway's program in a command (in a
//    shell block or an inline code span: `mcp-task-gateway …`, `npx mcp-task-gateway …`, `npm start -- …`,
//    `node …/bin/mcp-task-gateway.js …`, `node --import tsx src/main.ts …`), or when an inline code span starts with
//    it (`--workers N`), unless the paragraph, list item or table row opens with a code span of another program's
//    command (npm, npx, node, podman, docker, kubectl, …: `npm run soak -- --minutes N`), or the page gives that flag
//    to another program's command somewhere (`podman build --format docker`, then `--format docker` alone): bare
//    flags there are the other program's. Elsewhere, write another program's flag after its program or after an
//    ellipsis (`… --password X`), and in a shell block quote a command line given as a value.
// 3. Links resolve. Every relative link ([text](path), [text](path#anchor), [text](#anchor)) outside code names a
//    file or folder that exists, and an anchor names a heading of the target page (GitHub's slugs).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { loadCli } from "../../src/cli.js";
import { loadConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/config/validate.js";
import { gatewayConfigSchema } from "../../src/config/schema.js";

export const NOT_A_CONFIG = "<!-- not-a-config -->";

/** The upstream a fragment is checked with, given as --upstream gives it. */
const FRAGMENT_UPSTREAM = "http://127.0.0.1:3001/mcp";

/** Top-level config fields, and the section the schema still reads under its former name. */
const CONFIG_KEYS: ReadonlySet<string> = new Set([...Object.keys(gatewayConfigSchema.shape), "modern"]);

export interface Block {
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
  notAConfig: boolean;
}

/** Fenced code blocks (``` or ~~~, indented as list items may be), with the fence's indentation removed. */
export function fencedBlocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = "", fence = "", lang = ""] = open;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !(lines[j] as string).trimStart().startsWith(fence)) {
      const text = lines[j] as string;
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text.trimStart());
      j++;
    }
    const before = i > 0 ? (lines[i - 1] as string).trim() : "";
    blocks.push({ lang: lang.toLowerCase(), body: body.join("\n"), line: i + 1, notAConfig: before === NOT_A_CONFIG });
    i = j;
  }
  return blocks;
}

/** The markdown with fenced blocks blanked (line numbers kept), so prose checks do not read code. */
function proseOnly(markdown: string): string {
  const lines = markdown.split("\n");
  let fence: string | undefined;
  return lines
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === undefined && marker !== undefined) {
        fence = marker;
        return "";
      }
      if (fence !== undefined) {
        if (line.trimStart().startsWith(fence)) fence = undefined;
        return "";
      }
      return line;
    })
    .join("\n");
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The documents a block holds: null when the block does not parse in its language. */
function documentsOf(block: Block): unknown[] | null {
  if (block.lang === "json") {
    try {
      return [JSON.parse(block.body)];
    } catch {
      // JSON Lines: one value a line.
      try {
        return block.body
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l) as unknown);
      } catch {
        return null;
      }
    }
  }
  const docs = parseAllDocuments(block.body);
  const list = Array.isArray(docs) ? docs : [docs];
  if (list.some((d) => d.errors.length > 0)) return null;
  return list.map((d) => d.toJS() as unknown);
}

function isConfigLike(doc: unknown): doc is Record<string, unknown> {
  return isRecord(doc) && Object.keys(doc).some((k) => CONFIG_KEYS.has(k));
}

/** A value valid wherever a `${VAR}` may stand: a header value, an OAuth client secret, a vault key (32 bytes). */
const PLACEHOLDER = Buffer.alloc(32, 7).toString("base64");

/** `${NAME}` references, each set to a placeholder, as the environment a start would need. */
function envFor(text: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const m of text.matchAll(/(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) env[m[1] as string] = PLACEHOLDER;
  return env;
}

/** What is wrong with a config block, as the gateway would say it: [] for a block that is fine or not a config. */
export async function configBlockProblems(block: Block): Promise<string[]> {
  if (block.notAConfig || !["yaml", "yml", "json"].includes(block.lang)) return [];
  const docs = documentsOf(block);
  if (docs === null) return [`is not valid ${block.lang === "json" ? "JSON" : "YAML"}`];
  // One document that is a config: checked from a file, as the gateway reads it.
  const [only] = docs;
  if (docs.length !== 1 || !isConfigLike(only)) return [];
  const dir = await mkdtemp(join(tmpdir(), "docs-config-"));
  try {
    const file = join(dir, block.lang === "json" ? "gateway.json" : "gateway.yaml");
    await writeFile(file, block.body);
    const fragment = !("upstream" in only) && !("upstreams" in only);
    await loadConfig({
      flags: fragment ? { upstream: FRAGMENT_UPSTREAM } : {},
      env: envFor(block.body),
      configFile: file,
    });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => p.replaceAll(dir, "<tmp>"));
    throw err;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function flagsIn(text: string): string[] {
  return [...text.matchAll(/(?:^|\s)--([a-z][a-z0-9-]*)/g)].map((m) => m[1] as string);
}

/** The gateway's program: its bin (installed or linked), or its entry point in a clone (src/main.ts, dist/main.js). */
const GATEWAY_FILE = /(?:^|\/)(?:mcp-task-gateway(?:\.js)?|src\/main\.ts|dist\/main\.js)$/;
/** The gateway's image in a container runtime's run command: mcp-task-gateway, with a registry or a tag. */
const GATEWAY_IMAGE = /(?:^|\/)mcp-task-gateway(?::[\w.-]+)?$/;

/** One command split where the gateway's arguments start: `before` is the rest, another program's words. */
interface Split {
  before: string;
  /** The gateway's arguments; undefined when the command does not run the gateway. */
  args: string | undefined;
}

/**
 * Where a command's words become the gateway's arguments: after its program run directly (`exec`, `sudo` and
 * VAR=value first are fine), by `npx`, by `node` (after node's own flags), after `npm start --`, or after the image
 * in `podman run` / `docker run`. A quoted word is one value (the command line of --upstream-command): its flags
 * are another program's, so quotes are emptied first.
 */
function splitCommand(command: string): Split {
  const words = command
    .replace(/"[^"]*"|'[^']*'/g, '""')
    .trim()
    .split(/\s+/);
  let i = 0;
  while (/^(?:[A-Z_][A-Z0-9_]*=\S*|exec|sudo)$/.test(words[i] ?? "")) i++;
  const program = words[i] ?? "";
  const at = (from: number): Split => ({ before: words.slice(0, from).join(" "), args: words.slice(from).join(" ") });
  const after = (test: RegExp, from: number): Split => {
    const j = words.findIndex((w, k) => k >= from && test.test(w));
    return j === -1 ? { before: command, args: undefined } : at(j + 1);
  };
  if (GATEWAY_FILE.test(program)) return at(i + 1);
  if (program === "npx" || program === "node") return after(GATEWAY_FILE, i + 1);
  if (program === "npm" && words[i + 1] === "start") return after(/^--$/, i + 2);
  if ((program === "podman" || program === "docker") && words[i + 1] === "run") return after(GATEWAY_IMAGE, i + 2);
  return { before: command, args: undefined };
}

/** The parts of a line that are commands of their own: split at pipes, list operators and comments. */
function commandsOf(line: string): string[] {
  return line.split(/\s(?:\||&&|\|\||;)\s|\s#/);
}

/** The gateway's subcommands (src/cli.ts): their options are their own, checked by their own tests. */
const SUBCOMMAND = /(?:^|\s)(?:pins|init)(?:\s|$)/;

/** The gateway's flags a command names: [] when it is another program's command, or a subcommand's. */
function gatewayFlagsOfCommand(command: string): string[] {
  return commandsOf(command).flatMap((part) => {
    const args = splitCommand(part).args ?? "";
    return SUBCOMMAND.test(args) ? [] : flagsIn(args);
  });
}

export interface FlagUse {
  flag: string;
  line: number;
}

/** A command of another program (`npm run soak -- --minutes N`, `node --cpu-prof x.js`, `podman run …`). */
const OTHER_COMMAND =
  /^(?:npm|npx|node|tsx|podman|docker|kubectl|helm|systemctl|systemd-analyze|curl|redis-server|redis-cli)\s/;

const SHELL = new Set(["sh", "bash", "shell", "console", "", "text"]);

/** Code spans of one line of prose (a span fenced with two backticks is left out). */
function spansOf(line: string): string[] {
  return [...line.replace(/``[^`]*``/g, "").matchAll(/`([^`\n]+)`/g)].map((m) => (m[1] as string).trim());
}

/** The commands of a page's shell blocks, continuation lines joined, each with its block's line. */
function shellCommands(markdown: string): { command: string; line: number }[] {
  return fencedBlocks(markdown)
    .filter((block) => SHELL.has(block.lang))
    .flatMap((block) =>
      block.body
        .replace(/\\\n/g, " ")
        .split("\n")
        .map((command) => ({ command: command.replace(/^\$ /, ""), line: block.line })),
    );
}

/** Flags the page gives other programs (`podman build --format docker`): a bare `--format` there is theirs. */
function otherProgramsFlags(markdown: string): Set<string> {
  const flags = new Set<string>();
  const commands = [
    ...shellCommands(markdown).map((c) => c.command),
    ...proseOnly(markdown).split("\n").flatMap(spansOf),
  ];
  for (const command of commands) {
    for (const part of commandsOf(command)) {
      if (/^\s*--/.test(part)) continue;
      for (const flag of flagsIn(splitCommand(part).before)) flags.add(flag);
    }
  }
  return flags;
}

/** Every flag the markdown gives the gateway, with its line. */
export function gatewayFlags(markdown: string): FlagUse[] {
  const uses: FlagUse[] = [];
  for (const { command, line } of shellCommands(markdown)) {
    for (const flag of gatewayFlagsOfCommand(command)) uses.push({ flag, line });
  }
  const others = otherProgramsFlags(markdown);
  const prose = proseOnly(markdown).split("\n");
  // A paragraph, a list item or a table row is a unit; when its first code span is another program's command, the
  // unit's bare flags are that program's.
  let first = true;
  let otherCommand = false;
  for (let i = 0; i < prose.length; i++) {
    const line = prose[i] as string;
    if (line.trim() === "" || /^\s*(?:\||#|[-*] |\d+\. )/.test(line)) first = true;
    for (const text of spansOf(line)) {
      if (first) otherCommand = OTHER_COMMAND.test(text) && splitCommand(text).args === undefined;
      first = false;
      if (!/^--[a-z]/.test(text)) {
        for (const flag of gatewayFlagsOfCommand(text)) uses.push({ flag, line: i + 1 });
      } else if (!otherCommand) {
        for (const flag of flagsIn(text)) if (!others.has(flag)) uses.push({ flag, line: i + 1 });
      }
    }
  }
  return uses;
}

const known = new Map<string, boolean>();

/** Whether the gateway's own argument parser accepts --flag: asked with --help after it, which starts nothing. */
export async function isGatewayFlag(flag: string): Promise<boolean> {
  const cached = known.get(flag);
  if (cached !== undefined) return cached;
  let stderr = "";
  await loadCli([`--${flag}=x`, "--help"], {
    stdout: () => {},
    stderr: (t) => {
      stderr += t;
    },
    env: {},
  });
  const exists = !stderr.includes(`Unknown option '--${flag}'`);
  known.set(flag, exists);
  return exists;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered -1, -2, … */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseOnly(markdown).split("\n")) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = (m[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  return anchors;
}

export interface LinkProblem {
  line: number;
  target: string;
  problem: string;
}

/** Relative links of a markdown file that do not resolve: a missing file, or an anchor no heading has. */
export function brokenLinks(
  file: string,
  markdown: string,
  read = (f: string) => readFileSync(f, "utf8"),
): LinkProblem[] {
  const problems: LinkProblem[] = [];
  const lines = proseOnly(markdown).split("\n");
  lines.forEach((raw, i) => {
    const line = raw.replace(/``[^`]*``|`[^`\n]*`/g, "");
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [path = "", anchor] = target.split("#", 2);
      const resolved = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
      if (path !== "" && !existsSync(resolved)) {
        problems.push({ line: i + 1, target, problem: `${relative(process.cwd(), resolved)} does not exist` });
        continue;
      }
      if (anchor === undefined || anchor === "" || !resolved.endsWith(".md")) continue;
      const text = resolved === file ? markdown : read(resolved);
      if (!headingAnchors(text).has(decodeURIComponent(anchor)))
        problems.push({ line: i + 1, target, problem: `no heading has the anchor #${anchor}` });
    }
  });
  return problems;
}
