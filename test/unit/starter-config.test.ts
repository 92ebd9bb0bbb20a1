// The starter config `init` writes: valid as written (the project's own loader and --check), each commented-out
// example valid once uncommented, and its $schema a path an editor resolves from where the file is.
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, EXIT_USAGE, runCli, type CliIo } from "../../src/cli.js";
import { loadConfig, mergeConfigs, type PartialConfig } from "../../src/config/load.js";
import { parseConfig } from "../../src/config/validate.js";
import { schemaReference } from "../../src/commands/init.js";
import {
  STARTER_EXAMPLES,
  STARTER_UPSTREAM,
  starterConfig,
  type StarterExample,
} from "../../src/commands/starter-config.js";

const REPO = resolve(new URL("../../", import.meta.url).pathname);
const PKG = { root: REPO, name: "mcp-task-gateway", version: "9.8.7" };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-starter-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function capture(env: NodeJS.ProcessEnv = {}): CliIo & { out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return { env, stdout: (t) => (out += t), stderr: (t) => (err += t), out: () => out, err: () => err };
}

/** `value` set at `path` in an otherwise empty partial config. */
function nested(path: readonly string[], value: PartialConfig): PartialConfig {
  return path.reduceRight<PartialConfig>((inner, key) => ({ [key]: inner }), value);
}

describe("the starter config", () => {
  const text = starterConfig("gateway.yaml", "./config/gateway.schema.json");

  it("loads with the project's own loader: one upstream, a task threshold, and its $schema accepted", async () => {
    const file = join(dir, "starter.yaml");
    await writeFile(file, text);
    const config = await loadConfig({ flags: {}, env: {}, configFile: file });
    expect(config.upstream?.url).toBe(STARTER_UPSTREAM);
    expect(config.tasks.thresholdMs).toBe(5000);
    expect(config.$schema).toBe("./config/gateway.schema.json");
    expect(Object.keys(config.upstreams)).toEqual([]);
    expect(config.auth).toBeUndefined();
    expect(config.limits.rules).toEqual([]);
    expect(config.tasks.store).toBe("memory");
  });

  it("passes --check", async () => {
    const file = join(dir, "starter-check.yaml");
    await writeFile(file, text);
    const io = capture();
    expect((await runCli(["--check", "--config", file], io)).exitCode).toBe(EXIT_OK);
    expect(io.out()).toBe(`mcp-task-gateway: configuration OK (${file}): default → /mcp\n`);
    expect(io.err()).toBe("");
  });

  it("names the schema for editors twice: the yaml-language-server modeline first, and the $schema key", () => {
    const lines = text.split("\n");
    expect(lines[0]).toBe("# yaml-language-server: $schema=./config/gateway.schema.json");
    expect(lines).toContain("$schema: ./config/gateway.schema.json");
  });

  it.each(Object.entries(STARTER_EXAMPLES))(
    "holds the %s example commented out, which is valid once uncommented",
    (_, example: StarterExample) => {
      const indent = "  ".repeat(example.under.length);
      for (const line of example.yaml.split("\n")) expect(text).toContain(`\n${indent}# ${line}\n`);
      const added = parse(example.yaml) as PartialConfig;
      const replaced = example.instead === undefined ? {} : nested(example.under, { [example.instead]: undefined });
      const config = parseConfig(mergeConfigs(parse(text) as PartialConfig, replaced, nested(example.under, added)));
      // What the example sets is in the config, as written.
      let block: unknown = config;
      for (const key of example.under) block = (block as PartialConfig)[key];
      expect(block).toMatchObject(added);
    },
  );

  it("is valid with every example uncommented at once", () => {
    const all = Object.values(STARTER_EXAMPLES).map((e) => nested(e.under, parse(e.yaml) as PartialConfig));
    // The stdio example replaces the url: an upstream is one or the other.
    const config = parseConfig(mergeConfigs(parse(text) as PartialConfig, ...all, { upstream: { url: undefined } }));
    expect(Object.keys(config.upstreams)).toEqual(["github"]);
    expect(config.auth?.jwt.jwksUrl).toBe("https://auth.example.com/.well-known/jwks.json");
    expect(config.tasks.store).toBe("redis://127.0.0.1:6379/0");
    expect(config.limits.rules[0]?.name).toBe("calls-per-caller");
  });
});

describe("schemaReference: the $schema an editor resolves from the file's folder", () => {
  it("inside the package's own folder (a checkout): a relative path to its config/", () => {
    expect(schemaReference(join(REPO, "gateway.yaml"), PKG)).toBe("./config/gateway.schema.json");
    expect(schemaReference(join(REPO, "deploy", "gateway.yaml"), PKG)).toBe("../config/gateway.schema.json");
  });

  it("in a project that installed the package: the path into node_modules, from the file or a folder under it", async () => {
    const project = join(dir, "project");
    const installed = join(project, "node_modules", "mcp-task-gateway");
    await mkdir(installed, { recursive: true });
    const pkg = { ...PKG, root: installed };
    expect(schemaReference(join(project, "gateway.yaml"), pkg)).toBe(
      "./node_modules/mcp-task-gateway/config/gateway.schema.json",
    );
    expect(schemaReference(join(project, "ops", "gateway.yaml"), pkg)).toBe(
      "../node_modules/mcp-task-gateway/config/gateway.schema.json",
    );
  });

  it("an installed package that is a link (npm link, workspaces): the link's path, as Node finds it", async () => {
    const project = join(dir, "linked");
    await mkdir(join(project, "node_modules"), { recursive: true });
    await symlink(REPO, join(project, "node_modules", "mcp-task-gateway"));
    expect(schemaReference(join(project, "gateway.yaml"), PKG)).toBe(
      "./node_modules/mcp-task-gateway/config/gateway.schema.json",
    );
  });

  it("anywhere else (npx, a global install): this version's schema from the registry's CDN", () => {
    expect(schemaReference(join(dir, "elsewhere", "gateway.yaml"), PKG)).toBe(
      "https://unpkg.com/mcp-task-gateway@9.8.7/config/gateway.schema.json",
    );
  });
});

describe("init", () => {
  it("writes the starter to the path given, and refuses to overwrite it: exit 2, the file unchanged", async () => {
    const file = join(dir, "init.yaml");
    const first = capture();
    expect((await runCli(["init", file], first)).exitCode).toBe(EXIT_OK);
    expect(first.out()).toContain(`wrote ${file}`);
    const written = await readFile(file, "utf8");
    expect(written).toContain(`#   mcp-task-gateway --check --config ${file}`);

    await writeFile(file, "# mine\n");
    const again = capture();
    expect((await runCli(["init", file], again)).exitCode).toBe(EXIT_USAGE);
    expect(again.err()).toBe(
      `mcp-task-gateway init: ${file} already exists and was left as it is; remove it or name another file\n`,
    );
    expect(again.out()).toBe("");
    expect(await readFile(file, "utf8")).toBe("# mine\n");
  });

  it("refuses a name the loader would read as JSON, a missing folder, and a second path", async () => {
    const cases: [string[], RegExp][] = [
      [["init", join(dir, "gateway.json")], /gateway\.json: the starter config is YAML; name it \.yaml or \.yml\n$/],
      [["init", join(dir, "no", "such", "gateway.yaml")], /gateway\.yaml: its folder does not exist\n$/],
      [["init", "a.yaml", "b.yaml"], /give at most one PATH\n$/],
      [["init", "--force"], /Unknown option '--force'/],
    ];
    for (const [argv, message] of cases) {
      const io = capture();
      expect((await runCli(argv, io)).exitCode).toBe(EXIT_USAGE);
      expect(io.err()).toMatch(message);
    }
  });

  it("--help shows its usage; the gateway's --help lists it", async () => {
    const io = capture();
    expect((await runCli(["init", "--help"], io)).exitCode).toBe(EXIT_OK);
    expect(io.out()).toMatch(/^Usage: mcp-task-gateway init \[PATH\]\n/);
    const help = capture();
    await runCli(["--help"], help);
    expect(help.out()).toMatch(/\nCommands:\n {2}init \[PATH\] +write a commented starter config/);
  });

  it("a word that is no command is refused with the closest command", async () => {
    const io = capture();
    expect((await runCli(["int"], io)).exitCode).toBe(EXIT_USAGE);
    expect(io.err()).toBe(
      'mcp-task-gateway: unknown command "int" (did you mean "init"?)\nRun with --help for usage.\n',
    );
  });
});
