// Writes docs/config-reference.md from the configuration's JSON Schema (json-schema.ts, itself derived from the zod
// schema), so the reference lists every field with its type, default and description and cannot drift: a unit test
// regenerates it in memory and compares it with the committed file. It reads the JSON Schema rather than zod's
// internals because that is zod's stable, documented export, and it already says what a user writes ("input"):
// fields with defaults are optional there, and each carries its default and description.
import { configJsonSchema } from "./json-schema.js";

/** The part of a JSON Schema node this page reads. */
interface Node {
  type?: string | string[];
  description?: string;
  default?: unknown;
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: Node | boolean;
  items?: Node;
  anyOf?: Node[];
  oneOf?: Node[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  minLength?: number;
  pattern?: string;
}

interface Row {
  field: string;
  type: string;
  default: string;
  description: string;
}

/** Bounds zod writes for every integer (Number.MAX_SAFE_INTEGER and its negative) say nothing to a reader. */
const SAFE = Number.MAX_SAFE_INTEGER;

function isObject(node: Node): boolean {
  return node.type === "object" || node.properties !== undefined;
}

function isRecord(node: Node): node is Node & { additionalProperties: Node } {
  // An object with named fields that also allows others (a JWK, a key set) reads as an object, not a map.
  return isObject(node) && node.properties === undefined && typeof node.additionalProperties === "object";
}

function range(node: Node): string {
  const low =
    node.exclusiveMinimum !== undefined
      ? `> ${node.exclusiveMinimum}`
      : node.minimum !== undefined && node.minimum > -SAFE
        ? `≥ ${node.minimum}`
        : "";
  const high = node.maximum !== undefined && node.maximum < SAFE ? `≤ ${node.maximum}` : "";
  if (low.startsWith("≥") && high) return ` ${node.minimum}–${node.maximum}`;
  return [low, high]
    .filter(Boolean)
    .map((b) => ` ${b}`)
    .join(",");
}

/** An inline code span that holds any text: one with a backtick in it is fenced with two. */
function code(text: string): string {
  return text.includes("`") ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/** Patterns a sentence says better; any other is shown as it is. */
const PATTERN_WORDS: ReadonlyMap<string, string> = new Map([
  [String.raw`^\S+$`, "string without whitespace"],
  [String.raw`^[\t\x20-\x7e\x80-\xff]*$`, "string without control characters"],
]);

function stringPattern(pattern: string): string {
  return PATTERN_WORDS.get(pattern) ?? `string matching ${code(pattern)}`;
}

/** A node's type in words: `integer ≥ 1`, `"auto" \| "always"`, `string \| array of string`, `map of name to string`. */
function typeOf(node: Node): string {
  const variants = node.anyOf ?? (node.oneOf?.every((v) => v.type !== undefined) ? node.oneOf : undefined);
  if (variants) return variants.map(typeOf).join(" or ");
  if (node.enum) return `one of ${node.enum.map((v) => `\`${JSON.stringify(v)}\``).join(", ")}`;
  if (node.const !== undefined) return `\`${JSON.stringify(node.const)}\``;
  if (Array.isArray(node.type)) return node.type.join(" or ");
  if (node.type === "array")
    return `array of ${node.items ? typeOf(node.items) : "any"}${node.minItems ? ` (at least ${node.minItems})` : ""}`;
  if (isRecord(node))
    return `map of name to ${isObject(node.additionalProperties) && !isRecord(node.additionalProperties) ? "object" : typeOf(node.additionalProperties)}`;
  if (isObject(node)) return "object";
  if (node.type === "integer" || node.type === "number") return `${node.type}${range(node)}`;
  if (node.type === "string") return node.pattern ? stringPattern(node.pattern) : "string";
  return node.type ?? "any";
}

function defaultOf(node: Node, required: boolean): string {
  if (node.default !== undefined) return code(JSON.stringify(node.default));
  return required ? "required" : "";
}

/** Table cells are one line; a `|` would end the cell. */
function cell(text: string): string {
  return text.replaceAll("\n", " ").replaceAll("|", "\\|");
}

/** The rows for `node` at `field`, then its fields: `a.b`, a record's `a.<name>.b`, an array's `a[].b`. */
function rows(node: Node, field: string, required: boolean): Row[] {
  return [row(node, field, required), ...children(node, field)];
}

function row(node: Node, field: string, required: boolean): Row {
  return { field, type: typeOf(node), default: defaultOf(node, required), description: node.description ?? "" };
}

/** The rows of `node`'s fields; `omit` names fields of its own (not of deeper objects) to leave out. */
function children(node: Node, field: string, omit: readonly string[] = []): Row[] {
  const out: Row[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    if (!omit.includes(name)) out.push(...rows(child, `${field}.${name}`, node.required?.includes(name) ?? false));
  }
  if (isRecord(node) && isObject(node.additionalProperties))
    out.push(...children(node.additionalProperties, `${field}.<name>`));
  if (node.items && isObject(node.items)) out.push(...children(node.items, `${field}[]`));
  return out;
}

function table(list: readonly Row[]): string {
  const lines = ["| field | type | default | description |", "|---|---|---|---|"];
  for (const r of list)
    lines.push(`| \`${r.field}\` | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.description)} |`);
  return lines.join("\n");
}

/** The `required` lists of a oneOf, in words: "Exactly one of `url` and `command`." */
function exactlyOne(node: Node): string {
  const names = (node.oneOf ?? []).flatMap((v) => v.required ?? []);
  return names.length > 1 ? ` Exactly one of ${names.map((n) => `\`${n}\``).join(" and ")} is given.` : "";
}

function sameSchema(a: Node | undefined, b: Node): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}

/** The section of a named upstream: the fields it shares with `upstream` are named once, not repeated. */
function upstreamsSection(node: Node, single: Node | undefined): string[] {
  const entry = isRecord(node) ? node.additionalProperties : undefined;
  const shared = Object.entries(entry?.properties ?? {})
    .filter(([name, child]) => sameSchema(single?.properties?.[name], child))
    .map(([name]) => name);
  const lead =
    shared.length > 0
      ? [
          `Each entry takes every field of [\`upstream\`](#upstream), with the same type, default and meaning: ${shared.map((n) => `\`${n}\``).join(", ")}.${entry ? exactlyOne(entry) : ""} The fields below are those it adds or that differ.`,
          "",
        ]
      : [];
  return [...lead, table(entry ? children(entry, "upstreams.<name>", shared) : [])];
}

/** The page that explains each section, linked under its heading (a section without one gets no link). */
const GUIDES: Readonly<Record<string, readonly [title: string, href: string]>> = {
  upstream: ["Getting started: your own upstream", "getting-started.md#your-own-upstream"],
  upstreams: ["Many upstreams and federation", "federation.md"],
  federated: ["Federation", "federation.md#federation-one-endpoint-over-several-upstreams"],
  federation: ["Federation", "federation.md#federation-one-endpoint-over-several-upstreams"],
  server: ["Configuration", "configuration.md"],
  eraBridge: ["Client era × upstream era", "eras.md"],
  tasks: ["Tasks", "tasks.md"],
  log: ["Logs", "operations.md#logs"],
  telemetry: ["Tracing", "operations.md#tracing"],
  metrics: ["Metrics", "operations.md#metrics"],
  access: ["Tool access", "identity-and-policy.md#tool-access-access"],
  limits: ["Rate limits", "identity-and-policy.md#rate-limits-limits"],
  auth: ["Identity and policy", "identity-and-policy.md"],
};

const INTRO = `# Configuration reference

Every field of the configuration, with its type, its default and what it does. The same fields are set in a config
file (YAML or JSON), and some by flags and environment variables: see [Configuration](configuration.md) for how they
combine, and [\`config/gateway.schema.json\`](../config/gateway.schema.json) for editor completion.

This page is generated from the zod schema (\`src/config/schema.ts\`) by \`npm run schema\`; do not edit it by hand.
A test fails when it is out of date.

How to read the fields: \`a.b\` is field \`b\` of object \`a\`; \`a.<name>.b\` is field \`b\` of each entry of the map
\`a\` (its keys are names you choose); \`a[].b\` is field \`b\` of each element of the array \`a\`. A default of
"required" marks a field that must be given when its object is; an empty default means the field is optional and
unset by default.`;

/** docs/config-reference.md, from the schema. */
export function configReferenceMarkdown(): string {
  const schema = configJsonSchema() as Node;
  const props = schema.properties ?? {};
  const sections = Object.keys(props);
  const out = [
    INTRO,
    "",
    `Sections: ${sections.map((s) => `[\`${s}\`](#${s.replace(/[^\w-]/g, "").toLowerCase()})`).join(" · ")}`,
  ];
  for (const [name, node] of Object.entries(props)) {
    out.push("", `## \`${name}\``, "");
    if (node.description) out.push(`${node.description}${name === "upstream" ? exactlyOne(node) : ""}`, "");
    const guide = GUIDES[name];
    if (guide !== undefined) out.push(`Guide: [${guide[0]}](${guide[1]}).`, "");
    // A section's own row would repeat the paragraph above it: the table holds its fields (or the field itself).
    const fields = children(node, name);
    if (name === "upstreams") out.push(upstreamsSection(node, props.upstream).join("\n"));
    else out.push(table(fields.length > 0 ? fields : rows(node, name, false)));
  }
  return `${out.join("\n")}\n`;
}
