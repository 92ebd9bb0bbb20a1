// Reads the config file: YAML for *.yaml and *.yml, JSON for every other name (config files were JSON only
// before YAML came, whatever their names, and such files keep working). The format is never guessed from the
// content: a file that happens to be valid in both would otherwise mean whatever the guess said. Either way the result is the
// same plain object, merged with the environment and flags and validated by the one zod schema (load.ts).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { LineCounter, parseDocument, type YAMLError } from "yaml";
import { ConfigError } from "./validate.js";
import { positionIn, type ConfigLocation, type Position } from "./positions.js";

type ConfigFileFormat = "json" | "yaml";

const YAML_EXTENSIONS: ReadonlySet<string> = new Set([".yaml", ".yml"]);

/** The format of a config file by its extension (any case): YAML for .yaml and .yml, JSON otherwise. */
function configFileFormat(file: string): ConfigFileFormat {
  return YAML_EXTENSIONS.has(path.extname(file).toLowerCase()) ? "yaml" : "json";
}

/**
 * The YAML options, each the package's default (yaml 2.x) except `prettyErrors`, spelled out so that what a
 * config file means does not depend on them:
 * - `version: "1.2"` with `schema: "core"`: YAML 1.2's core schema. Only true/false are booleans and only
 *   null/~ (or nothing) is null, so `no`, `on`, `yes` and `off` stay strings and `0755` is the integer 755,
 *   not an octal. An explicit `schema` also wins over a `%YAML 1.1` directive in the file, which would
 *   otherwise switch to the 1.1 schema where `no` is false.
 * - `uniqueKeys: true`: a key given twice in one mapping is an error. JSON.parse keeps the last one silently;
 *   in a config file that hides a mistake, and the YAML spec forbids it anyway.
 * - `merge` is left off (the core schema's default): `<<` is an ordinary key, which the schema then reports
 *   as an unknown field instead of merging anything silently. Anchors and aliases work as usual, and toJS
 *   expands at most 100 aliases (its default), so a "billion laughs" file is refused rather than expanded.
 * - `prettyErrors: false`: the error's source excerpt spans several lines; the position is reported here on
 *   the problem's one line instead (lineCounter).
 */
const YAML_OPTIONS = { version: "1.2", schema: "core", uniqueKeys: true, prettyErrors: false } as const;

function yamlProblem(file: string, problem: YAMLError, lines: LineCounter): string {
  const { line, col } = lines.linePos(problem.pos[0]);
  return `config file ${file}: is not valid YAML (line ${line}, column ${col}: ${problem.message})`;
}

/**
 * Parses YAML text with `parseDocument` rather than `parse`: the same parser, but its warnings come back here
 * instead of going to process.emitWarning (parse's way), and they are refused like errors. A warning is
 * mostly an unknown tag (`!env FOO`), which would leave the plain string "FOO" in the config: a user who
 * expected the tag to do something must hear that it does not. Only the first problem is reported, as JSON's
 * is: after a syntax error the parser's further complaints mostly follow from the first.
 */
function parseYaml(file: string, text: string): { parsed: unknown; locate: Locate } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { ...YAML_OPTIONS, lineCounter: lines });
  const first = doc.errors[0] ?? doc.warnings[0];
  if (first !== undefined) throw new ConfigError([yamlProblem(file, first, lines)]);
  try {
    return { parsed: doc.toJS(), locate: (location, missing) => positionIn(doc, lines, location, missing) };
  } catch (err) {
    // toJS refuses a document whose aliases expand past maxAliasCount.
    throw new ConfigError([`config file ${file}: is not valid YAML (${(err as Error).message})`]);
  }
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`config file ${file}: is not valid JSON (${(err as Error).message})`]);
  }
}

/** Where a field is in the file (config/positions.ts): `missing` when the input has no value there. */
type Locate = (location: ConfigLocation, missing: boolean) => Position | undefined;

/** A config file read: its settings, and for YAML a way to find where a field is written. */
export interface ConfigFileContents {
  settings: Record<string, unknown>;
  locate: Locate | undefined;
}

/** The file's settings as a plain object (not validated yet); ConfigError naming the file otherwise. */
export async function readConfigFile(file: string): Promise<Record<string, unknown>> {
  return (await readConfigSource(file)).settings;
}

/** readConfigFile, with the positions of a YAML file's fields. */
export async function readConfigSource(file: string): Promise<ConfigFileContents> {
  const format = configFileFormat(file);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ConfigError([
      `config file ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    ]);
  }
  const { parsed, locate } =
    format === "yaml" ? parseYaml(file, text) : { parsed: parseJson(file, text), locate: undefined };
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([
      format === "yaml"
        ? `config file ${file}: must contain a YAML mapping (key: value lines) at the top level`
        : `config file ${file}: must contain a JSON object`,
    ]);
  }
  return { settings: parsed as Record<string, unknown>, locate };
}
