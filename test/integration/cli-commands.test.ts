// The CLI's operator commands as an operator runs them: a real process (src/main.ts, as `npm start` runs it) in a
// folder of its own. init writes a starter that --check accepts and never overwrites it; --print-config shows the
// merged config without its secrets; --check names the closest field, the line and column, and federated routes.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
// By URL, so the process finds tsx from a folder outside the repository.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

async function gateway(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  const child = spawn(process.execPath, ["--import", TSX, MAIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, out, err };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-cli-commands-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("mcp-task-gateway init", () => {
  it("writes ./gateway.yaml, which --check accepts; a second init exits 2 and leaves it as it is", async () => {
    const first = await gateway(["init"], dir);
    expect(first).toEqual({
      code: 0,
      out: "mcp-task-gateway: wrote gateway.yaml\nSet upstream.url in it, then: mcp-task-gateway --check --config gateway.yaml\n",
      err: "",
    });
    const written = await readFile(join(dir, "gateway.yaml"), "utf8");
    // Outside any project that installed the package: the schema of this version, by URL.
    expect(written).toMatch(
      /^# yaml-language-server: \$schema=https:\/\/unpkg\.com\/mcp-task-gateway@[^/]+\/config\/gateway\.schema\.json\n/,
    );

    const check = await gateway(["--check", "--config", "gateway.yaml"], dir);
    expect(check).toEqual({
      code: 0,
      out: "mcp-task-gateway: configuration OK (gateway.yaml): default → /mcp\n",
      err: "",
    });

    const again = await gateway(["init"], dir);
    expect(again.code).toBe(2);
    expect(again.out).toBe("");
    expect(again.err).toBe(
      "mcp-task-gateway init: gateway.yaml already exists and was left as it is; remove it or name another file\n",
    );
    expect(await readFile(join(dir, "gateway.yaml"), "utf8")).toBe(written);
  });
});

describe("mcp-task-gateway --print-config", () => {
  it("prints file, environment and flags merged, as YAML, without a secret from any of them", async () => {
    await writeFile(
      join(dir, "secrets.yaml"),
      [
        "upstream:",
        "  url: https://mcp.example.com/mcp",
        "  headers:",
        "    authorization: Bearer ${UPSTREAM_TOKEN}",
        "server:",
        "  port: 9000",
        "",
      ].join("\n"),
    );
    const r = await gateway(
      ["--print-config", "--config", "secrets.yaml", "--port", "9100", "--metrics-token", "S3cr3t-metrics-token-flag"],
      dir,
      { UPSTREAM_TOKEN: "S3cr3t-upstream-token", MCP_GATEWAY_STORE: "redis://:S3cr3t-redis@127.0.0.1:6379/0" },
    );
    expect(r.code).toBe(0);
    expect(r.err).toBe("");
    expect(r.out).not.toContain("S3cr3t");
    const shown = parse(r.out) as {
      upstream: { headers: Record<string, string> };
      server: { port: number };
      tasks: { store: string };
      metrics: { token: string };
    };
    expect(shown.upstream.headers).toEqual({ authorization: "***" });
    expect(shown.server.port).toBe(9100);
    expect(shown.tasks.store).toBe("redis://:***@127.0.0.1:6379/0");
    expect(shown.metrics.token).toBe("***");
  });
});

describe("mcp-task-gateway --check", () => {
  it("names the closest field and the line and column of a YAML file's problem", async () => {
    await writeFile(
      join(dir, "typo.yaml"),
      [
        "upstream:",
        "  url: http://127.0.0.1:9/mcp",
        "auth:",
        "  jwt:",
        "    jwksUri: https://a.example.com/jwks",
        "",
      ].join("\n"),
    );
    const r = await gateway(["--check", "--config", "typo.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toContain(
      '  auth.jwt: unknown field(s) "jwksUri" (did you mean "jwksUrl"?) (typo.yaml line 5, column 5)\n',
    );
  });

  it("lists federated endpoints on its OK line", async () => {
    await writeFile(
      join(dir, "federated.yaml"),
      [
        "upstreams:",
        "  a:",
        "    url: http://127.0.0.1:9/mcp",
        "  b:",
        "    url: http://127.0.0.1:10/mcp",
        "federated:",
        "  both:",
        "    upstreams: [a, b]",
        "",
      ].join("\n"),
    );
    const r = await gateway(["--check", "--config", "federated.yaml"], dir);
    expect(r).toEqual({
      code: 0,
      out: "mcp-task-gateway: configuration OK (federated.yaml): a → /mcp/a, b → /mcp/b; federated: both → /mcp/both (a + b)\n",
      err: "",
    });
  });
});
