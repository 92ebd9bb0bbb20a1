// The config file in JSON or YAML, chosen by extension: both read into the same object, validated by the same
// schema, with the same precedence (env < file < flags); YAML's own mistakes (syntax, duplicate keys, a top level
// that is not a mapping, unknown tags) are refused with the file, and the line and column, named.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readConfigFile } from "../../src/config/config-file.js";
import { loadConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/config/validate.js";
import { reloadConfig } from "../../src/cli.js";
import type { GatewayConfig } from "../../src/config/schema.js";
import type { Logger } from "../../src/log/logger.js";

const UPSTREAM = "http://127.0.0.1:3001/mcp";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-config-file-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

async function problemsOf(p: Promise<unknown>): Promise<readonly string[]> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

const GOOD_YAML = `# A gateway in front of one upstream.
upstream:
  url: ${UPSTREAM}
server:
  port: 0
  allowedOrigins: [https://app.example.com]
tasks:
  thresholdMs: 2500
  rules:
    - tool: "slow_*"
      mode: always
    - tool: quick
      mode: never
metrics:
  toolLabels: [no, on, yes, off] # YAML 1.2: strings, not booleans
`;

const GOOD_JSON = {
  upstream: { url: UPSTREAM },
  server: { port: 0, allowedOrigins: ["https://app.example.com"] },
  tasks: {
    thresholdMs: 2500,
    rules: [
      { tool: "slow_*", mode: "always" },
      { tool: "quick", mode: "never" },
    ],
  },
  metrics: { toolLabels: ["no", "on", "yes", "off"] },
};

describe("YAML config files", () => {
  it("reads a .yaml file into the same object as the equivalent .json file", async () => {
    const yaml = await write("good.yaml", GOOD_YAML);
    const json = await write("good.json", JSON.stringify(GOOD_JSON));
    expect(await readConfigFile(yaml)).toEqual(GOOD_JSON);
    const [fromYaml, fromJson] = await Promise.all([
      loadConfig({ flags: {}, env: {}, configFile: yaml }),
      loadConfig({ flags: {}, env: {}, configFile: json }),
    ]);
    expect(fromYaml).toEqual(fromJson);
    expect(fromYaml.tasks.rules).toEqual([
      { tool: "slow_*", mode: "always" },
      { tool: "quick", mode: "never" },
    ]);
  });

  it("takes .yml and any case of the extension", async () => {
    for (const name of ["good.yml", "GOOD.YAML", "good.Yml"]) {
      const file = await write(name, GOOD_YAML);
      expect((await loadConfig({ flags: {}, env: {}, configFile: file })).tasks.thresholdMs).toBe(2500);
    }
  });

  it("keeps YAML 1.2's core schema even under a %YAML 1.1 directive: no, on, yes stay strings", async () => {
    const file = await write(
      "directive.yaml",
      `%YAML 1.1\n---\nupstream: { url: "${UPSTREAM}" }\n${GOOD_YAML.slice(GOOD_YAML.indexOf("metrics:"))}`,
    );
    expect((await readConfigFile(file)).metrics).toEqual({ toolLabels: ["no", "on", "yes", "off"] });
  });

  it("judges only the merged result: a file value that a flag overrides is not checked", async () => {
    const bad = await write("overridden.yaml", `upstream: { url: "${UPSTREAM}" }\nserver: { port: 99999 }\n`);
    expect((await loadConfig({ flags: { port: "0" }, env: {}, configFile: bad })).server.port).toBe(0);
  });

  it("names the field of a bad value, as for JSON", async () => {
    const file = await write("bad-field.yaml", `upstream:\n  url: ${UPSTREAM}\nserver:\n  port: 99999\n  prot: 1\n`);
    const problems = await problemsOf(loadConfig({ flags: {}, env: {}, configFile: file }));
    expect(problems).toEqual(
      expect.arrayContaining([
        `server: unknown field(s) "prot" (did you mean "port"?) (${file} line 5, column 3)`,
        `server.port: Too big: expected number to be <=65535 (${file} line 4, column 9)`,
      ]),
    );
  });

  it("reports a syntax error with the file, line and column", async () => {
    const file = await write("syntax.yaml", `upstream:\n  url: ${UPSTREAM}\nserver:\n  port: [1, 2\n`);
    const problems = await problemsOf(readConfigFile(file));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^config file .*syntax\.yaml: is not valid YAML \(line \d+, column \d+: .+\)$/);
    expect(problems[0]).toContain(file);
    expect(problems[0]).not.toContain("\n");
  });

  it("refuses a key given twice, naming its line", async () => {
    const file = await write("duplicate.yaml", `upstream:\n  url: ${UPSTREAM}\nserver:\n  port: 1\n  port: 2\n`);
    const problems = await problemsOf(readConfigFile(file));
    expect(problems).toEqual([`config file ${file}: is not valid YAML (line 5, column 3: Map keys must be unique)`]);
  });

  it("refuses a top level that is not a mapping", async () => {
    for (const [name, text] of [
      ["list.yaml", "- upstream\n- server\n"],
      ["scalar.yaml", "8642\n"],
      ["empty.yaml", ""],
      ["comments-only.yml", "# nothing yet\n"],
    ] as const) {
      const file = await write(name, text);
      expect(await problemsOf(readConfigFile(file))).toEqual([
        `config file ${file}: must contain a YAML mapping (key: value lines) at the top level`,
      ]);
    }
  });

  it("refuses what YAML would only warn about: an unknown tag would leave its text as a plain string", async () => {
    const file = await write("tag.yaml", `upstream:\n  url: ${UPSTREAM}\nmetrics:\n  token: !env METRICS_TOKEN\n`);
    const problems = await problemsOf(readConfigFile(file));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(file);
    expect(problems[0]).toContain("line 4, column 10: Unresolved tag: !env");
  });

  it("does not merge << keys (the schema names them) and refuses an alias bomb", async () => {
    const merge = await write(
      "merge.yaml",
      `upstream: { url: "${UPSTREAM}" }\ndefaults: &d { mode: always }\ntasks:\n  rules:\n    - <<: *d\n      tool: x\n`,
    );
    const problems = await problemsOf(loadConfig({ flags: {}, env: {}, configFile: merge }));
    expect(problems).toEqual(
      expect.arrayContaining([
        `unknown field(s) "defaults" (${merge} line 2, column 1)`,
        `tasks.rules.0: unknown field(s) "<<" (${merge} line 5, column 7)`,
      ]),
    );

    const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (const [prev, name] of [
      ["a", "b"],
      ["b", "c"],
      ["c", "d"],
    ]) {
      levels.push(`${name}: &${name} [${Array.from({ length: 10 }, () => `*${prev}`).join(", ")}]`);
    }
    const bomb = await write("bomb.yaml", `${levels.join("\n")}\n`);
    const bombProblems = await problemsOf(readConfigFile(bomb));
    expect(bombProblems).toHaveLength(1);
    expect(bombProblems[0]).toContain(bomb);
    expect(bombProblems[0]).toContain("is not valid YAML");
  });
});

describe("config file extensions", () => {
  it("reads any other extension as JSON, as before YAML came", async () => {
    for (const name of ["gateway.conf", "gateway", "gateway.json.bak"]) {
      const path = await write(name, JSON.stringify(GOOD_JSON));
      const config = await loadConfig({ flags: {}, env: {}, configFile: path });
      expect(config.upstream?.url).toBe(GOOD_JSON.upstream.url);
    }
    const yamlInConf = await write("gateway.conf", GOOD_YAML);
    expect((await problemsOf(readConfigFile(yamlInConf)))[0]).toContain(`config file ${yamlInConf}: is not valid JSON`);
  });

  it("a .json file is JSON only: YAML in it is not valid JSON", async () => {
    const path = await write("yaml-inside.json", GOOD_YAML);
    const problems = await problemsOf(readConfigFile(path));
    expect(problems[0]).toContain(`config file ${path}: is not valid JSON`);
  });
});

describe("a reload reads YAML as the start does", () => {
  function recorder(): { log: Logger; errors: unknown[] } {
    const errors: unknown[] = [];
    const ignore = (): void => undefined;
    return {
      errors,
      log: {
        level: "error",
        error: (msg, fields) => errors.push({ msg, ...fields }),
        warn: ignore,
        info: ignore,
        debug: ignore,
      },
    };
  }

  it("applies a YAML file, and keeps the old policy when the file turns invalid, naming the line", async () => {
    const path = await write("reload.yaml", GOOD_YAML);
    const applied: GatewayConfig[] = [];
    const failed: string[] = [];
    const gateway = {
      reload: (next: GatewayConfig) => {
        applied.push(next);
        return { live: [], restart: [] };
      },
      reloadFailed: (error: string) => void failed.push(error),
    };
    const sources = { flags: {}, env: {}, configFile: path, watch: false };
    const { log, errors } = recorder();

    expect(await reloadConfig(gateway, sources, log)).toBe(true);
    expect(applied.map((c) => c.tasks.thresholdMs)).toEqual([2500]);

    await writeFile(path, `${GOOD_YAML}tasks:\n  thresholdMs: 1\n`);
    expect(await reloadConfig(gateway, sources, log)).toBe(false);
    expect(applied).toHaveLength(1);
    // The gateway is told, for /status and the metrics.
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain("line 16, column 1");
    expect(errors).toEqual([
      {
        msg: "configuration reload failed; the old policy stays in force",
        problems: `config file ${path}: is not valid YAML (line 16, column 1: Map keys must be unique)`,
      },
    ]);
  });
});

describe("a __proto__ key in a config file", () => {
  it("is refused as an unknown field, in JSON and in YAML, never merged into a prototype", async () => {
    const json = await write("proto.json", '{"upstream":{"url":"http://127.0.0.1:1/mcp"},"__proto__":{"polluted":1}}');
    expect(await problemsOf(loadConfig({ flags: {}, env: {}, configFile: json }))).toEqual([
      'unknown field(s) "__proto__"',
    ]);
    const yaml = await write("proto.yaml", "upstream:\n  url: http://127.0.0.1:1/mcp\n  __proto__:\n    polluted: 1\n");
    expect(await problemsOf(loadConfig({ flags: {}, env: {}, configFile: yaml }))).toEqual([
      `upstream: unknown field(s) "__proto__" (${yaml} line 3, column 3)`,
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("${VAR} in the config file's header values", () => {
  const GITHUB = "https://api.example.com/mcp";
  const TOKEN = "ghp-TOKEN-VALUE-1234";

  function yamlWithHeaders(headers: Record<string, string>): string {
    const lines = Object.entries(headers).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}\n`);
    return `upstream:\n  url: ${UPSTREAM}\n  headers:\n    x-single: "\${SINGLE}"\nupstreams:\n  github:\n    url: ${GITHUB}\n    headers:\n${lines.join("")}`;
  }

  it("are expanded from the environment the load is given, in YAML and JSON, in the single and named upstreams", async () => {
    const env = { GITHUB_TOKEN: TOKEN, SINGLE: "one", A: "a", B: "" };
    const yaml = await write(
      "refs.yaml",
      yamlWithHeaders({ authorization: "Bearer ${GITHUB_TOKEN}", "x-pair": "${A}-${B}-${A}" }),
    );
    const config = await loadConfig({ flags: {}, env, configFile: yaml });
    expect(config.upstream?.headers).toEqual({ "x-single": "one" });
    // A variable set to "" is set: it expands to nothing.
    expect(config.upstreams.github?.headers).toEqual({ authorization: `Bearer ${TOKEN}`, "x-pair": "a--a" });

    const json = await write(
      "refs.json",
      JSON.stringify({ upstreams: { github: { url: GITHUB, headers: { authorization: "Bearer ${GITHUB_TOKEN}" } } } }),
    );
    expect((await loadConfig({ flags: {}, env, configFile: json })).upstreams.github?.headers).toEqual({
      authorization: `Bearer ${TOKEN}`,
    });
  });

  it("take the environment passed in, not the process's: PATH is not set in an empty one", async () => {
    expect(process.env.PATH).toBeDefined();
    const file = await write("path.yaml", yamlWithHeaders({ "x-path": "${PATH}" }));
    expect(await problemsOf(loadConfig({ flags: {}, env: { SINGLE: "s" }, configFile: file }))).toEqual([
      "upstreams.github.headers.x-path: names ${PATH}, which is not set",
    ]);
  });

  it("$${ writes a literal ${, and a $ elsewhere is plain text", async () => {
    const file = await write("escape.yaml", yamlWithHeaders({ "x-literal": "$${NOT_SET} costs $5 $$ $x ${A}" }));
    const config = await loadConfig({ flags: {}, env: { SINGLE: "s", A: "a" }, configFile: file });
    expect(config.upstreams.github?.headers["x-literal"]).toBe("${NOT_SET} costs $5 $$ $x a");
  });

  it("an unset variable names the field and the variable, never the header's other text or any value", async () => {
    const file = await write(
      "unset.yaml",
      yamlWithHeaders({ authorization: "Bearer ${GITHUB_TOKEN}", "x-both": "literal-SECRET ${A} ${MISSING}" }),
    );
    const err = await loadConfig({ flags: {}, env: { SINGLE: "s", A: "a-VALUE" }, configFile: file }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      "upstreams.github.headers.authorization: names ${GITHUB_TOKEN}, which is not set",
      "upstreams.github.headers.x-both: names ${MISSING}, which is not set",
    ]);
    for (const text of ["Bearer", "literal-SECRET", "a-VALUE"])
      expect((err as ConfigError).message).not.toContain(text);
  });

  it.each([["${}"], ["${1ABC}"], ["${A-B}"], ["${A"], ["x ${ y}"], ["${A:-default}"]])(
    "a malformed reference %j is a config error naming the field, not the text",
    async (value) => {
      const file = await write("malformed.yaml", yamlWithHeaders({ "x-bad": `tok-SECRET ${value}` }));
      const problems = await problemsOf(loadConfig({ flags: {}, env: { SINGLE: "s", A: "a" }, configFile: file }));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(
        /^upstreams\.github\.headers\.x-bad: has a \$\{ at character \d+ that is not \$\{NAME\}/,
      );
      expect(problems[0]).not.toContain("tok-SECRET");
    },
  );

  it("a value from the environment is validated like a written one, and still never shown", async () => {
    const file = await write("crlf.yaml", yamlWithHeaders({ authorization: "Bearer ${GITHUB_TOKEN}" }));
    const problems = await problemsOf(
      loadConfig({ flags: {}, env: { SINGLE: "s", GITHUB_TOKEN: "tok-SECRET\r\nx-injected: 1" }, configFile: file }),
    );
    expect(problems).toEqual([
      `upstreams.github.headers.authorization: must not contain control characters (CR, LF) (${file} line 9, column 22)`,
    ]);
    expect(problems.join("\n")).not.toContain("tok-SECRET");
  });

  it("only header values are expanded: ${ elsewhere in the file is ordinary text", async () => {
    const file = await write(
      "elsewhere.yaml",
      `upstreams:\n  files:\n    command: [node, "\${SCRIPT}"]\n    env:\n      TOKEN: "\${GITHUB_TOKEN}"\ntasks:\n  identityHeader: "x-\${WHO}"\n`,
    );
    const config = await loadConfig({ flags: {}, env: { GITHUB_TOKEN: TOKEN }, configFile: file });
    expect(config.upstreams.files).toMatchObject({ command: ["node", "${SCRIPT}"], env: { TOKEN: "${GITHUB_TOKEN}" } });
    expect(config.tasks.identityHeader).toBe("x-${WHO}");
  });

  it("a reload expands them again from its environment, and keeps the old config when one is unset", async () => {
    const path = await write("reload-refs.yaml", yamlWithHeaders({ authorization: "Bearer ${GITHUB_TOKEN}" }));
    const applied: GatewayConfig[] = [];
    const failed: string[] = [];
    const gateway = {
      reload: (next: GatewayConfig) => {
        applied.push(next);
        return { live: [], restart: [] };
      },
      reloadFailed: (error: string) => void failed.push(error),
    };
    const errors: unknown[] = [];
    const ignore = (): void => undefined;
    const log: Logger = {
      level: "error",
      error: (msg, fields) => errors.push({ msg, ...fields }),
      warn: ignore,
      info: ignore,
      debug: ignore,
    };
    const sources = { flags: {}, env: { SINGLE: "s", GITHUB_TOKEN: TOKEN }, configFile: path, watch: false };
    expect(await reloadConfig(gateway, sources, log)).toBe(true);
    expect(applied.map((c) => c.upstreams.github?.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);

    expect(await reloadConfig(gateway, { ...sources, env: { SINGLE: "s" } }, log)).toBe(false);
    expect(applied).toHaveLength(1);
    expect(errors).toEqual([
      {
        msg: "configuration reload failed; the old policy stays in force",
        problems: "upstreams.github.headers.authorization: names ${GITHUB_TOKEN}, which is not set",
      },
    ]);
  });
});
