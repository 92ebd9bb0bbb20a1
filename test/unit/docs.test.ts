// The docs say what the code does: config snippets validate, flags exist, links resolve (test/helpers/docs-check.ts
// says how each is decided, and how to mark a block that is not a config). The first part holds the checker itself
// to what it must catch.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  brokenLinks,
  configBlockProblems,
  fencedBlocks,
  gatewayFlags,
  headingAnchors,
  isGatewayFlag,
  NOT_A_CONFIG,
} from "../helpers/docs-check.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCS = join(ROOT, "docs");
const FILES = [
  join(ROOT, "README.md"),
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => join(DOCS, f)),
];

function page(file: string): string {
  return readFileSync(file, "utf8");
}

function name(file: string): string {
  return file.slice(ROOT.length);
}

async function problemsOf(markdown: string): Promise<string[]> {
  const all: string[] = [];
  for (const block of fencedBlocks(markdown)) all.push(...(await configBlockProblems(block)));
  return all;
}

describe("the docs checker", () => {
  it("catches a misnamed field in a config, as --check would (jwksUri for jwksUrl)", async () => {
    const markdown = [
      "```yaml",
      "upstream: { url: https://mcp.example.com/mcp }",
      "auth:",
      "  jwt:",
      "    issuer: https://id.example.com",
      "    audience: mcp-gateway",
      "    jwksUri: https://id.example.com/.well-known/jwks.json",
      "```",
    ].join("\n");
    expect(await problemsOf(markdown)).toEqual([
      expect.stringContaining('auth.jwt: unknown field(s) "jwksUri"'),
      expect.stringContaining("auth.jwt.jwksUrl"),
    ]);
    expect(await problemsOf(markdown.replace("jwksUri", "jwksUrl"))).toEqual([]);
  });

  it("checks a fragment (no upstream) with an upstream added, JSON as JSON, and ${VAR} as set", async () => {
    expect(await problemsOf('```json\n{ "tasks": { "thresholdMs": -1 } }\n```')).toEqual([
      expect.stringContaining("tasks.thresholdMs"),
    ]);
    expect(await problemsOf('```json\n{ "tasks": { "thresholdMs": 2000 } }\n```')).toEqual([]);
    const headers =
      "```yaml\nupstreams:\n  gh: { url: https://x.example/mcp, headers: { authorization: 'Bearer ${GH_TOKEN}' } }\n```";
    expect(await problemsOf(headers)).toEqual([]);
  });

  it("leaves alone what is not a config, and what is marked so", async () => {
    const notConfigs = [
      '```json\n{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n```',
      '```json\n{"level":"info","msg":"a"}\n{"level":"info","msg":"b"}\n```',
      "```yaml\napiVersion: v1\nkind: ConfigMap\n---\napiVersion: apps/v1\nkind: Deployment\n```",
      `${NOT_A_CONFIG}\n\`\`\`json\n{ "upstreams": [{ "name": "default", "status": "up" }] }\n\`\`\``,
    ];
    for (const markdown of notConfigs) expect(await problemsOf(markdown), markdown).toEqual([]);
    expect(await problemsOf('```json\n{ "upstreams": [{ "name": "default" }] }\n```')).not.toEqual([]);
    expect(await problemsOf("```json\n{ not json\n```")).toEqual(["is not valid JSON"]);
  });

  it("finds the gateway's flags in commands and code spans, not other programs' flags", () => {
    const markdown = [
      "```sh",
      "mcp-task-gateway --upstream http://127.0.0.1:3001/mcp \\",
      "  --watch-confg --config gateway.yaml",
      "npm run demo -- --port 0",
      "node --import tsx src/main.ts --workers 2 | jq .",
      "podman run --init --rm image",
      'mcp-task-gateway --upstream-command "docker run -i --rm image"',
      "podman build --format docker -t mcp-task-gateway .",
      "podman run --init --rm registry.example.com/mcp-task-gateway:1 --port 8642 --bogus",
      "```",
      "",
      "Use `--threshold-ms N`, `npm start -- --log-level debug`, or `node --cpu-prof x.js`; `… --password X` is not.",
      "",
      "| `npm run soak -- --minutes N` | at a rate (`--rate`) |",
      "",
      "`upstream.url: is required`: give `--upstrem URL`.",
      "- `tasks.store` (`--store`)",
      "",
      "`--format docker` keeps the health check, and `--init` reaps orphans.",
    ].join("\n");
    expect(gatewayFlags(markdown).map((u) => u.flag)).toEqual([
      "upstream",
      "watch-confg",
      "config",
      "workers",
      "upstream-command",
      "port",
      "bogus",
      "threshold-ms",
      "log-level",
      "upstrem",
      "store",
    ]);
  });

  it("asks the gateway's own parser whether a flag exists", async () => {
    expect(await isGatewayFlag("watch-config")).toBe(true);
    expect(await isGatewayFlag("upstream-command")).toBe(true);
    expect(await isGatewayFlag("check")).toBe(true);
    expect(await isGatewayFlag("watch-confg")).toBe(false);
  });

  it("finds links to missing files and anchors no heading has", () => {
    const file = join(DOCS, "example.md");
    const markdown = [
      "# Title",
      "## Client era × upstream era",
      "## `--check` and `/status`",
      "See [a](#client-era--upstream-era), [b](#check-and-status), [c](#nowhere), [d](architecture.md),",
      "[e](missing.md), [f](https://example.com/x.md), `[g](not-a-link.md)`.",
      "```",
      "[h](inside-code.md)",
      "```",
    ].join("\n");
    expect(headingAnchors(markdown)).toEqual(new Set(["title", "client-era--upstream-era", "--check-and-status"]));
    expect(brokenLinks(file, markdown).map((p) => p.target)).toEqual(["#check-and-status", "#nowhere", "missing.md"]);
  });
});

describe.each(FILES.map((f) => [name(f), f]))("%s", (_name, file) => {
  const markdown = page(file);

  it("has config snippets that validate against the schema", async () => {
    const problems: string[] = [];
    for (const block of fencedBlocks(markdown)) {
      for (const problem of await configBlockProblems(block)) problems.push(`line ${block.line}: ${problem}`);
    }
    expect(problems).toEqual([]);
  });

  it("names only flags the gateway has", async () => {
    const unknown: string[] = [];
    for (const use of gatewayFlags(markdown)) {
      if (!(await isGatewayFlag(use.flag))) unknown.push(`line ${use.line}: --${use.flag}`);
    }
    expect(unknown).toEqual([]);
  });

  it("has internal links that resolve", () => {
    expect(brokenLinks(file, markdown).map((p) => `line ${p.line}: ${p.target}: ${p.problem}`)).toEqual([]);
  });
});
