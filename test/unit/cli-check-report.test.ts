// What `--check` says (issue 37): the OK line lists federated endpoints beside the upstreams, and a refused config
// names the closest known field and, for a YAML file, the line and column of each problem.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, EXIT_USAGE } from "../../src/cli.js";
import { runCliCaptured, type CliRun } from "../helpers/cli-run.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-check-report-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const check = (argv: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> =>
  runCliCaptured(["--check", ...argv], env);

async function yamlFile(name: string, lines: string[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, `${lines.join("\n")}\n`);
  return file;
}

describe("--check's OK line", () => {
  it("lists each federated endpoint with its route and members after the upstreams", async () => {
    const file = await yamlFile("federated.yaml", [
      "upstream:",
      "  url: http://127.0.0.1:1/mcp",
      "upstreams:",
      "  github:",
      "    url: http://127.0.0.1:2/mcp",
      "  files:",
      "    url: http://127.0.0.1:3/mcp",
      "federated:",
      "  all:",
      "    upstreams: [github, files]",
      "  code:",
      "    upstreams: [github]",
    ]);
    const r = await check(["--config", file, "--path", "/gw/"]);
    expect(r).toEqual({
      code: EXIT_OK,
      out: `mcp-task-gateway: configuration OK (${file}): default → /gw/, github → /gw/github, files → /gw/files; federated: all → /gw/all (github + files), code → /gw/code (github)\n`,
      err: "",
    });
  });

  it("without federated endpoints, is unchanged", async () => {
    const r = await check(["--upstream", "http://127.0.0.1:1/mcp"]);
    expect(r.out).toBe("mcp-task-gateway: configuration OK (no config file: environment and flags): default → /mcp\n");
  });
});

describe("--check refusing a YAML file", () => {
  it("names the closest known field and the line and column of each problem, and the flag of a flag's", async () => {
    const file = await yamlFile("typos.yaml", [
      "upstream:",
      "  url: http://127.0.0.1:1/mcp",
      "auth:",
      "  jwt:",
      "    jwksUri: https://auth.example.com/jwks.json",
      "    issuer: https://auth.example.com/",
      "    audience: https://gateway.example.com/mcp",
      "tasks:",
      "  thresholdMs: -5",
    ]);
    const r = await check(["--config", file, "--port", "99999"]);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.out).toBe("");
    const lines = r.err.split("\n");
    expect(lines).toEqual(
      expect.arrayContaining([
        `  auth.jwt: unknown field(s) "jwksUri" (did you mean "jwksUrl"?) (${file} line 5, column 5)`,
        // Its line in the file says where it was set: no list of the other places it could have been.
        `  tasks.thresholdMs: Too small: expected number to be >=0 (${file} line 9, column 16)`,
        // From the flag: no line of the file, and the flag named.
        expect.stringMatching(/^ {2}server\.port: Too big: .*<=65535 \(--port\)$/),
      ]),
    );
  });
});
