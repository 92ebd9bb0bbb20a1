// docs/config-reference.md is generated from the schema (npm run schema): it must be the committed file, list every
// field of the configuration with a type, a default when there is one, and a description.
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { configReferenceMarkdown } from "../../src/config/config-reference.js";
import { configJsonSchema } from "../../src/config/json-schema.js";
import { parseConfig } from "../../src/config/validate.js";

const ROOT = new URL("../../", import.meta.url);

interface Node {
  properties?: Record<string, Node>;
  additionalProperties?: Node | boolean;
  items?: Node;
  default?: unknown;
}

/** Every field path of the JSON Schema, as the reference spells it: a.b, a.<name>.b, a[].b. */
function fieldPaths(node: Node, prefix = ""): string[] {
  const out: string[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = prefix ? `${prefix}.${name}` : name;
    out.push(path, ...fieldPaths(child, path));
  }
  const extra = node.additionalProperties;
  if (node.properties === undefined && typeof extra === "object") out.push(...fieldPaths(extra, `${prefix}.<name>`));
  if (node.items) out.push(...fieldPaths(node.items, `${prefix}[]`));
  return out;
}

/** The reference's table rows: field → [type, default, description]. */
function tableRows(markdown: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of markdown.split("\n")) {
    const m = /^\| `([^`]+)` \| (.*) \|$/.exec(line);
    if (!m) continue;
    rows.set(m[1] as string, (m[2] as string).split(/ (?<!\\)\| /));
  }
  return rows;
}

describe("the configuration reference (docs/config-reference.md)", () => {
  const markdown = configReferenceMarkdown();
  const rows = tableRows(markdown);

  it("is the committed file", async () => {
    const onDisk = await readFile(new URL("docs/config-reference.md", ROOT), "utf8");
    expect(onDisk, "docs/config-reference.md is out of date: run `npm run schema` and commit the result").toBe(
      markdown,
    );
  });

  it("has a row for every field, or names it among the fields a named upstream shares with upstream", () => {
    const shared = /Each entry takes every field of \[`upstream`\]\(#upstream\)[^:]*: ([^.]+)\./.exec(markdown)?.[1];
    expect(shared).toBeDefined();
    const sharedNames = [...(shared ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
    expect(sharedNames).toEqual(expect.arrayContaining(["url", "command", "headers", "env"]));
    const missing = fieldPaths(configJsonSchema() as Node).filter((path) => {
      if (rows.has(path)) return false;
      // A section is its heading and paragraph; a named upstream's shared fields are named once.
      if (!path.includes(".") && markdown.includes(`## \`${path}\``)) return false;
      const named = /^upstreams\.<name>\.([^.[]+)/.exec(path)?.[1];
      return !(named !== undefined && sharedNames.includes(named));
    });
    expect(missing).toEqual([]);
  });

  it("gives every field a type and a description, and each default as the schema fills it in", () => {
    const defaults = parseConfig({ upstream: { url: "http://127.0.0.1:3001/mcp" } }) as unknown as Record<
      string,
      Record<string, unknown>
    >;
    for (const [field, [type, , description]] of rows) {
      expect(type, field).not.toBe("");
      expect(description, field).not.toBe("");
    }
    // Spot checks of the defaults against what parseConfig fills in.
    for (const [section, key] of [
      ["server", "port"],
      ["server", "path"],
      ["tasks", "thresholdMs"],
      ["federation", "listTimeoutMs"],
      ["metrics", "enabled"],
      ["limits", "onStoreDown"],
    ] as const) {
      const row = rows.get(`${section}.${key}`);
      expect(row?.[1], `${section}.${key}`).toBe(`\`${JSON.stringify(defaults[section]?.[key])}\``);
    }
  });

  it("reads well for maps, arrays and unions", () => {
    expect(rows.get("upstream.env")?.[0]).toBe("map of name to string");
    expect(rows.get("upstream.headers")?.[0]).toBe("map of name to string without control characters");
    expect(rows.get("tasks.rules")?.[0]).toBe("array of object");
    expect(rows.get("tasks.rules[].mode")?.[0]).toBe('one of `"auto"`, `"always"`, `"never"`, `"required"`');
    expect(rows.get("tasks.rules[].tool")?.[1]).toBe("required");
    expect(rows.get("access.rules[].tools")?.[0]).toBe("string or array of string (at least 1)");
    expect(rows.get("server.port")?.[0]).toBe("integer 0–65535");
    expect(rows.get("federated.<name>.upstreams")?.[1]).toBe("required");
    expect(markdown).toContain("Exactly one of `url` and `command` is given.");
  });
});
