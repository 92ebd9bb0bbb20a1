// A schema problem's path → the line and column of its node in a YAML config file (config/positions.ts), and the
// problems a load reports with them: for what the file wrote, never for what a flag or the environment gave.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { positionIn, type ConfigLocation } from "../../src/config/positions.js";
import { loadConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/config/validate.js";

const TEXT = [
  "upstream:", // 1
  "  url: ftp://nowhere", // 2
  "server:", // 3
  "  port: 99999", // 4
  "  prot: 1", // 5
  "tasks:", // 6
  "  rules:", // 7
  "    - tool: a", // 8
  "      mode: sometimes", // 9
  "    - { tool: b, mode: never, extra: 1 }", // 10
  "auth:", // 11
  "  jwt:", // 12
  "    issuer: x", // 13
  "", //
].join("\n");

function at(location: ConfigLocation, missing = false): { line: number; col: number } | undefined {
  const lines = new LineCounter();
  const doc = parseDocument(TEXT, { lineCounter: lines });
  return positionIn(doc, lines, location, missing);
}

describe("positionIn", () => {
  it("a scalar value: where the value starts", () => {
    expect(at({ path: ["upstream", "url"], key: false })).toEqual({ line: 2, col: 8 });
    expect(at({ path: ["server", "port"], key: false })).toEqual({ line: 4, col: 9 });
  });

  it("an unknown key: the key itself", () => {
    expect(at({ path: ["server", "prot"], key: true })).toEqual({ line: 5, col: 3 });
    expect(at({ path: ["tasks", "rules", 1, "extra"], key: true })).toEqual({ line: 10, col: 31 });
  });

  it("into lists by index, in block and flow style", () => {
    expect(at({ path: ["tasks", "rules", 0, "mode"], key: false })).toEqual({ line: 9, col: 13 });
    expect(at({ path: ["tasks", "rules", 1, "mode"], key: false })).toEqual({ line: 10, col: 24 });
    // A list item that is a mapping: where the item starts.
    expect(at({ path: ["tasks", "rules", 0], key: false })).toEqual({ line: 8, col: 7 });
  });

  it("a block value (a mapping or a list): its key's line, not the next one", () => {
    expect(at({ path: ["server"], key: false })).toEqual({ line: 3, col: 1 });
    expect(at({ path: ["tasks", "rules"], key: false })).toEqual({ line: 7, col: 3 });
  });

  it("a missing required field: the deepest block the file has on its path", () => {
    expect(at({ path: ["auth", "jwt", "audience"], key: false }, true)).toEqual({ line: 12, col: 3 });
    // Without `missing`, a path the file does not have is not the file's: no position.
    expect(at({ path: ["auth", "jwt", "audience"], key: false })).toBeUndefined();
    // Nothing of the path in the file: no position, rather than the top of the file.
    expect(at({ path: ["limits", "rules"], key: false }, true)).toBeUndefined();
  });
});

describe("loadConfig: schema problems in a YAML file carry its line and column", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mcp-gw-positions-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function problems(name: string, text: string, flags: Record<string, string> = {}, env = {}) {
    const file = join(dir, name);
    await writeFile(file, text);
    try {
      await loadConfig({ flags, env, configFile: file });
    } catch (err) {
      if (err instanceof ConfigError) return { file, problems: err.problems };
      throw err;
    }
    throw new Error("expected a ConfigError");
  }

  it("names the line and column of each bad value and unknown key the file wrote", async () => {
    const { file, problems: found } = await problems("bad.yaml", TEXT);
    expect(found).toEqual(
      expect.arrayContaining([
        `upstream.url: must be an absolute http:// or https:// URL (${file} line 2, column 8)`,
        `server.port: Too big: expected number to be <=65535 (${file} line 4, column 9)`,
        `server: unknown field(s) "prot" (did you mean "port"?) (${file} line 5, column 3)`,
        `tasks.rules.1: unknown field(s) "extra" (${file} line 10, column 31)`,
        `auth.jwt.audience: Invalid input (${file} line 12, column 3)`,
      ]),
    );
  });

  it("gives no position for a value a flag or the environment set, which the file does not hold", async () => {
    const { problems: found } = await problems(
      "flags.yaml",
      "upstream:\n  url: http://127.0.0.1:1/mcp\nserver:\n  port: 1\n",
      { port: "99999" },
      { MCP_GATEWAY_LOG_LEVEL: "loud" },
    );
    expect(found).toEqual([
      "server.port: Too big: expected number to be <=65535",
      expect.stringMatching(/^log\.level: Invalid option: expected one of "silent".*"debug"$/),
    ]);
  });

  it("a JSON file's problems have no position (JSON.parse keeps none)", async () => {
    const { problems: found } = await problems("bad.json", '{"upstream":{"url":"http://127.0.0.1:1/mcp"},"sever":{}}');
    expect(found).toEqual(['unknown field(s) "sever" (did you mean "server"?)']);
  });
});
