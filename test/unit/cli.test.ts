import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXIT_OK, EXIT_USAGE, helpText, runCli, type CliIo, type CliResult } from "../../src/cli.js";
import { SETTINGS } from "../../src/config/load.js";
import { gatewayConfigSchema, parseConfig, startGateway, type RunningGateway } from "../../src/index.js";
import { getFreePort } from "../helpers/ports.js";

const LISTENING = /"msg":"mcp-task-gateway listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp → upstream /;

interface Captured extends CliIo {
  out: string[];
  err: string[];
}

function io(env: NodeJS.ProcessEnv = {}): Captured {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, env, stdout: (t) => out.push(t), stderr: (t) => err.push(t) };
}

const started: RunningGateway[] = [];

function gatewayOf(result: CliResult): RunningGateway {
  if (result.exitCode !== null) throw new Error(`expected the gateway to start, got exit code ${result.exitCode}`);
  started.push(result.gateway);
  return result.gateway;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close(0)));
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcp-gw-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("runCli: help and version", () => {
  it.each([["--help"], ["-h"]])("%s prints usage listing every flag and exits 0", async (flag) => {
    const cap = io();
    const result = await runCli([flag], cap);
    expect(result).toEqual({ exitCode: EXIT_OK });
    expect(EXIT_OK).toBe(0);
    const text = cap.out.join("");
    expect(text).toContain("Usage: mcp-task-gateway");
    for (const s of SETTINGS) {
      expect(text).toContain(`--${s.flag}`);
      expect(text).toContain(s.env);
    }
    for (const f of ["--config", "--watch-config", "--check", "--help", "--version"]) expect(text).toContain(f);
    expect(text).toContain("8642");
    expect(text).toBe(`${helpText()}\n`);
    expect(cap.err).toEqual([]);
  });

  it("shows --upstream and --upstream-command with and without NAME=, with an example of several upstreams", () => {
    const text = helpText();
    expect(text).toContain("--upstream [NAME=]URL");
    expect(text).toContain('--upstream-command [NAME=]"CMD ARG…"');
    expect(text).toContain("mcp-task-gateway --upstream NAME=URL [--upstream NAME=URL…] [options]");
    expect(text).toContain("--upstream github=https://");
    expect(text).toContain('--upstream-command files="npx');
    expect(text).toContain("serves /mcp, /mcp/github and /mcp/files");
    expect(text).toContain("env MCP_GATEWAY_UPSTREAM (one, without NAME=)");
  });

  it.each([["--version"], ["-v"]])("%s prints the package version and exits 0", async (flag) => {
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    const cap = io();
    const result = await runCli([flag], cap);
    expect(result).toEqual({ exitCode: 0 });
    expect(cap.out.join("")).toBe(`${pkg.version}\n`);
    expect(cap.err).toEqual([]);
  });

  it("--help wins even when other flags are bad", async () => {
    const cap = io();
    expect(await runCli(["--port", "nope", "--help"], cap)).toEqual({ exitCode: 0 });
  });
});

describe("runCli: usage errors exit 2", () => {
  it("an unknown flag", async () => {
    const cap = io();
    const result = await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--bogus-flag", "1"], cap);
    expect(result).toEqual({ exitCode: EXIT_USAGE });
    expect(EXIT_USAGE).toBe(2);
    expect(cap.err.join("")).toContain("--bogus-flag");
    expect(cap.out).toEqual([]);
  });

  it("a positional argument", async () => {
    const cap = io();
    expect(await runCli(["http://127.0.0.1:1/mcp"], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).not.toBe("");
  });

  it.each([["99999"], ["=-1"], ["abc"], ["80.5"], ["=65536"]])(
    "a bad --port %s names server.port and --port",
    async (port) => {
      const cap = io();
      const portArgs = port.startsWith("=") ? [`--port${port}`] : ["--port", port];
      const result = await runCli(["--upstream", "http://127.0.0.1:1/mcp", ...portArgs, "--log-level", "silent"], cap);
      expect(result).toEqual({ exitCode: 2 });
      const text = cap.err.join("");
      expect(text).toContain("server.port");
      expect(text).toContain("--port");
      expect(cap.out).toEqual([]);
    },
  );

  it("a dash-led --port value without '=' is refused by the argument parser, naming --port", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", "-1"], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).toContain("--port");
  });

  it("a bad value from the environment names the field and the env variable", async () => {
    const cap = io({ MCP_GATEWAY_UPSTREAM: "http://127.0.0.1:1/mcp", MCP_GATEWAY_PORT: "http" });
    expect(await runCli([], cap)).toEqual({ exitCode: 2 });
    const text = cap.err.join("");
    expect(text).toContain("server.port");
    expect(text).toContain("MCP_GATEWAY_PORT");
  });

  it("a bad --log-level names log.level", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--log-level", "chatty"], cap)).toEqual({
      exitCode: 2,
    });
    expect(cap.err.join("")).toContain("log.level");
    expect(cap.err.join("")).toContain("--log-level");
  });

  it("two --upstream values without a name: one line saying to name the others", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--upstream", "http://127.0.0.1:2/mcp"], cap)).toEqual(
      {
        exitCode: EXIT_USAGE,
      },
    );
    expect(cap.err.join("")).toBe(
      "mcp-task-gateway: invalid configuration\n  upstream.url: --upstream is given 2 times without a name, but only one upstream is unnamed (served at server.path); name the others: --upstream NAME=URL (--upstream)\nRun with --help for usage.\n",
    );
    expect(cap.out).toEqual([]);
  });

  it("a bad URL for a named upstream names upstreams.NAME.url", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--upstream", "github=ftp://x/mcp"], cap)).toEqual({
      exitCode: EXIT_USAGE,
    });
    expect(cap.err.join("")).toContain("upstreams.github.url: must be an absolute http:// or https:// URL");
  });

  it("a missing upstream", async () => {
    const cap = io();
    expect(await runCli(["--port", "0"], cap)).toEqual({ exitCode: 2 });
    const text = cap.err.join("");
    expect(text).toContain("upstream.url: is required");
    expect(text).toContain("--upstream");
  });

  it("a bad upstream URL", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "ftp://example.com/mcp"], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).toContain("upstream.url");
  });

  it("an unreadable config file, named in the message", async () => {
    const missing = join(dir, "missing.json");
    const cap = io();
    expect(await runCli(["--config", missing], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).toContain(missing);
  });

  it("a config file with invalid JSON, named in the message", async () => {
    const file = join(dir, "broken.json");
    await writeFile(file, "{ nope");
    const cap = io();
    expect(await runCli(["--config", file], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).toContain(file);
  });

  it("an upstream.caFile that cannot be read: the start exits 2 naming the field and the file", async () => {
    const missing = join(dir, "start-missing-ca.pem");
    const file = join(dir, "start-ca.json");
    await writeFile(file, JSON.stringify({ upstream: { url: "https://mcp.example.com/mcp", caFile: missing } }));
    const cap = io();
    expect(await runCli(["--config", file, "--port", "0", "--log-level", "silent"], cap)).toEqual({ exitCode: 2 });
    expect(cap.err.join("")).toContain(`upstream.caFile ${missing} cannot be read (ENOENT)`);
  });

  it("a port that is already taken", async () => {
    const first = gatewayOf(
      await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--log-level", "silent"], io()),
    );
    const port = new URL(first.url).port;
    const cap = io();
    expect(
      await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", port, "--log-level", "silent"], cap),
    ).toEqual({
      exitCode: 2,
    });
    expect(cap.err.join("")).toContain("cannot listen");
  });
});

describe("runCli: start", () => {
  it("parses and validates the configuration once per start, and startGateway once for what an embedder gives it", async () => {
    const parses = vi.spyOn(gatewayConfigSchema, "safeParse");
    try {
      gatewayOf(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--log-level", "silent"], io()));
      expect(parses).toHaveBeenCalledTimes(1);
      parses.mockClear();
      started.push(
        await startGateway({
          upstream: { url: "http://127.0.0.1:1/mcp" },
          server: { port: 0 },
          log: { level: "silent" },
        }),
      );
      expect(parses).toHaveBeenCalledTimes(1);
      // A copy is not the config parseConfig returned: it is validated again.
      parses.mockClear();
      const parsed = parseConfig({
        upstream: { url: "http://127.0.0.1:1/mcp" },
        server: { port: 0 },
        log: { level: "silent" },
      });
      started.push(await startGateway(structuredClone(parsed)));
      expect(parses).toHaveBeenCalledTimes(2);
    } finally {
      parses.mockRestore();
    }
  });

  it("prints exactly one line saying where it listens and which upstream it serves", async () => {
    const cap = io();
    const result = await runCli(
      ["--upstream", "http://127.0.0.1:3001/mcp", "--port", "0", "--log-level", "silent"],
      cap,
    );
    const gateway = gatewayOf(result);
    expect(cap.out).toHaveLength(1);
    const text = cap.out[0] ?? "";
    expect(text.endsWith("\n")).toBe(true);
    expect(text.split("\n")).toHaveLength(2);
    const match = LISTENING.exec(text);
    expect(match).not.toBeNull();
    expect(Number(match?.[1])).toBeGreaterThan(0);
    // A JSON log line, like every other: the sentence in msg, the same facts as fields.
    expect(JSON.parse(text)).toEqual({
      level: "info",
      time: expect.any(String),
      msg: `mcp-task-gateway listening on ${gateway.url} → upstream http://127.0.0.1:3001/mcp`,
      url: gateway.url,
      upstreams: "default",
      store: "memory",
    });
    expect(cap.err).toEqual([]);
  });

  it("never prints credentials from the upstream URL", async () => {
    const cap = io();
    const upstream = "https://alice:hunter2@mcp.example.com:8443/mcp?token=tok-SECRET&other=1";
    gatewayOf(await runCli(["--upstream", upstream, "--port", "0", "--log-level", "silent"], cap));
    expect(cap.out).toHaveLength(1);
    const text = cap.out[0] ?? "";
    expect(text).toMatch(LISTENING);
    expect(text).toContain('→ upstream https://mcp.example.com:8443/mcp"');
    for (const secret of ["alice", "hunter2", "tok-SECRET", "token", "?", "@"]) expect(text).not.toContain(secret);
  });

  it("the served gateway answers /healthz on the printed address", async () => {
    const cap = io();
    const gateway = gatewayOf(
      await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--log-level", "silent"], cap),
    );
    const res = await fetch(`${gateway.origin}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("accepts --threshold-ms now and carries it into the config", async () => {
    const cap = io();
    const gateway = gatewayOf(
      await runCli(
        ["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--threshold-ms", "250", "--log-level", "silent"],
        cap,
      ),
    );
    expect(gateway.config.tasks.thresholdMs).toBe(250);
    expect(gateway.config.log.level).toBe("silent");
  });

  it("serves on the --path given", async () => {
    const cap = io();
    const gateway = gatewayOf(
      await runCli(
        ["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--path", "/gw/mcp", "--log-level", "silent"],
        cap,
      ),
    );
    expect(cap.out.join("")).toMatch(
      /"msg":"mcp-task-gateway listening on http:\/\/127\.0\.0\.1:\d+\/gw\/mcp → upstream /,
    );
    expect(gateway.url.endsWith("/gw/mcp")).toBe(true);
  });

  it("port precedence: flag > config file > MCP_GATEWAY_PORT", async () => {
    const [envPort, filePort, flagPort] = [await getFreePort(), await getFreePort(), await getFreePort()];
    const file = join(dir, "ports.json");
    await writeFile(file, JSON.stringify({ server: { port: filePort }, log: { level: "silent" } }));
    const env: NodeJS.ProcessEnv = {
      MCP_GATEWAY_UPSTREAM: "http://127.0.0.1:1/mcp",
      MCP_GATEWAY_PORT: String(envPort),
      MCP_GATEWAY_LOG_LEVEL: "silent",
    };

    const portOf = async (argv: string[]): Promise<number> => {
      const cap = io(env);
      const gateway = gatewayOf(await runCli(argv, cap));
      const match = LISTENING.exec(cap.out.join(""));
      expect(match, cap.err.join("")).not.toBeNull();
      await gateway.close(0);
      return Number(match?.[1]);
    };

    expect(await portOf([])).toBe(envPort);
    expect(await portOf(["--config", file])).toBe(filePort);
    expect(await portOf(["--config", file, "--port", String(flagPort)])).toBe(flagPort);
    // The config file may also come from MCP_GATEWAY_CONFIG.
    const cap = io({ ...env, MCP_GATEWAY_CONFIG: file });
    gatewayOf(await runCli([], cap));
    expect(Number(LISTENING.exec(cap.out.join(""))?.[1])).toBe(filePort);
  });
});

describe("runCli --check: validates as a start would, starts nothing", () => {
  const OK = /^mcp-task-gateway: configuration OK \((.+)\): (.+)\n$/;
  /** The child's PATH for a bare program name: an empty directory finds nothing. */
  let emptyPath: string;
  beforeAll(async () => {
    emptyPath = join(dir, "empty-bin");
    await mkdir(emptyPath, { recursive: true });
  });

  async function check(
    argv: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{ code: number | null; out: string; err: string }> {
    const cap = io(env);
    const result = await runCli(["--check", ...argv], cap);
    // Never a running gateway: --check returns an exit code or fails the test here.
    expect(result.exitCode).not.toBeNull();
    return { code: result.exitCode, out: cap.out.join(""), err: cap.err.join("") };
  }

  it("a good YAML config: exit 0, one line on stdout naming the file", async () => {
    const file = join(dir, "check-good.yaml");
    await writeFile(
      file,
      "upstream:\n  url: https://mcp.example.com/mcp\ntasks:\n  rules:\n    - tool: 'report_*'\n      mode: always\naccess:\n  rules:\n    - tools: ['admin_*', 'drop_?']\n      effect: deny\n",
    );
    const r = await check(["--config", file]);
    expect(r).toEqual({
      code: EXIT_OK,
      out: `mcp-task-gateway: configuration OK (${file}): default → /mcp\n`,
      err: "",
    });
  });

  it("without a config file, names where the configuration came from", async () => {
    const r = await check([], { MCP_GATEWAY_UPSTREAM: "http://127.0.0.1:1/mcp" });
    expect(r.code).toBe(EXIT_OK);
    expect(OK.exec(r.out)?.[1]).toBe("no config file: environment and flags");
  });

  it("a bad field: exit 2 with the start's message, naming the field and its flag, nothing on stdout", async () => {
    const r = await check(["--upstream", "http://127.0.0.1:1/mcp", "--port", "99999"]);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.out).toBe("");
    expect(r.err).toMatch(/^mcp-task-gateway: invalid configuration\n {2}server\.port: .*\(--port\)\n/);
  });

  it("a bad config file is reported as a start reports it", async () => {
    const file = join(dir, "check-dup.yaml");
    await writeFile(file, "upstream:\n  url: http://127.0.0.1:1/mcp\n  url: http://127.0.0.1:2/mcp\n");
    const r = await check(["--config", file]);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err).toContain(`config file ${file}: is not valid YAML (line 3, column 3: Map keys must be unique)`);
  });

  it("a missing or certificate-less upstream.caFile: exit 2 naming the field and the file", async () => {
    const missing = join(dir, "missing-ca.pem");
    const r = await check(["--upstream", "https://mcp.example.com/mcp"], {
      MCP_GATEWAY_CONFIG: await writeJson("check-ca.json", { upstream: { caFile: missing } }),
    });
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err).toContain(`upstream.caFile ${missing} cannot be read (ENOENT)`);

    const notPem = join(dir, "not-a-cert.pem");
    await writeFile(notPem, "hello\n");
    const file = await writeJson("check-ca-bad.json", {
      upstream: { url: "https://mcp.example.com/mcp", caFile: notPem },
    });
    const bad = await check(["--config", file]);
    expect(bad.code).toBe(EXIT_USAGE);
    expect(bad.err).toContain(`upstream.caFile ${notPem} holds no PEM certificate`);

    const pem = join(dir, "ca.pem");
    await writeFile(pem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    const good = await writeJson("check-ca-good.json", {
      upstream: { url: "https://mcp.example.com/mcp", caFile: pem },
    });
    expect((await check(["--config", good])).code).toBe(EXIT_OK);
  });

  it("a store URL the start could not use: exit 2 naming tasks.store and --store, never the password", async () => {
    for (const store of [
      "redis://",
      "redis://alice:hunter2@127.0.0.1/not-a-db",
      "rediss://127.0.0.1:0",
      "redis://h?db=1",
      "redis-sentinel://alice:hunter2@10.0.0.1:26379",
      "redis-cluster://alice:hunter2@n1:7000/3",
      "rediss-cluster://n1:7000,:7001",
    ]) {
      const r = await check(["--upstream", "http://127.0.0.1:1/mcp", "--store", store]);
      expect(r.code, store).toBe(EXIT_USAGE);
      expect(r.err, store).toMatch(/^ {2}tasks\.store: task store .*\(--store\)$/m);
      expect(r.err).not.toContain("hunter2");
    }
  });

  it("a stdio program that cannot be found, or a missing upstream.cwd: exit 2 naming upstream.command", async () => {
    const r = await check(["--upstream-command", "no-such-mcp-server --stdio"], { PATH: emptyPath });
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err).toContain(
      "upstream.command: cannot be started (no-such-mcp-server was not found on the PATH the stdio server gets) (--upstream-command)",
    );

    const relative = await check(["--upstream-command", "./no-such-server.js"], { PATH: emptyPath });
    expect(relative.err).toContain(
      "upstream.command: cannot be started (./no-such-server.js is not an executable file)",
    );

    const noCwd = join(dir, "no-such-dir");
    const file = await writeJson("check-cwd.json", {
      upstream: { command: [process.execPath, "server.js"], cwd: noCwd },
    });
    const cwd = await check(["--config", file]);
    expect(cwd.code).toBe(EXIT_USAGE);
    expect(cwd.err).toContain(`upstream.command: cannot be started (upstream.cwd ${noCwd} does not exist)`);
  });

  it("a stdio program found on the child's PATH, or by its path: exit 0, and it is never run", async () => {
    // A program that would leave a mark if anything ran it.
    const bin = join(dir, "bin");
    await mkdir(bin, { recursive: true });
    const marker = join(dir, "ran");
    const program = join(bin, "mark-server");
    await writeFile(program, `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    expect((await check(["--upstream-command", "mark-server"], { PATH: bin })).code).toBe(EXIT_OK);
    expect((await check(["--upstream-command", program], { PATH: emptyPath })).code).toBe(EXIT_OK);
    await expect(readFile(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("connects to nothing and listens on nothing: a Redis nobody serves and a port already taken still exit 0", async () => {
    const busy = createServer();
    busy.listen(0, "127.0.0.1");
    await once(busy, "listening");
    try {
      const { port } = busy.address() as { port: number };
      const r = await check([
        "--upstream",
        "http://127.0.0.1:1/mcp",
        "--store",
        "redis://127.0.0.1:1",
        "--workers",
        "2",
        "--port",
        String(port),
      ]);
      expect(r).toEqual({
        code: EXIT_OK,
        out: "mcp-task-gateway: configuration OK (no config file: environment and flags): default → /mcp\n",
        err: "",
      });
    } finally {
      busy.close();
    }
  });

  describe("three upstreams: the single one and two named ones", () => {
    const good = (files: string): string =>
      [
        "upstream:",
        "  url: https://mcp.example.com/mcp",
        "upstreams:",
        "  github:",
        "    url: https://api.example.com/mcp",
        "    headers:",
        "      authorization: Bearer ${GITHUB_TOKEN}",
        "    auth:",
        "      upstreamCredentials: drop",
        "    tasks:",
        "      thresholdMs: 1000",
        "      rules:",
        "        - tool: 'create_*'",
        "          mode: always",
        "    access:",
        "      default: deny",
        "      rules:",
        "        - tools: ['get_*', 'list_*']",
        "          effect: allow",
        "  files:",
        `    command: [${JSON.stringify(files)}, server.js]`,
        "tasks:",
        "  rules:",
        "    - tool: '*'",
        "      upstream: 'git*'",
        "      mode: auto",
        "access:",
        "  rules:",
        "    - tools: 'delete_*'",
        "      upstream: files",
        "      effect: deny",
        "",
      ].join("\n");

    it("a good YAML config: exit 0, one line listing each upstream with its route", async () => {
      const file = join(dir, "check-three.yaml");
      await writeFile(file, good(process.execPath));
      const r = await check(["--config", file], { GITHUB_TOKEN: "tok-SECRET" });
      expect(r).toEqual({
        code: EXIT_OK,
        out: `mcp-task-gateway: configuration OK (${file}): default → /mcp, github → /mcp/github, files → /mcp/files\n`,
        err: "",
      });
      const moved = await check(["--config", file, "--path", "/gw"], { GITHUB_TOKEN: "tok-SECRET" });
      expect(OK.exec(moved.out)?.[2]).toBe("default → /gw, github → /gw/github, files → /gw/files");
    });

    it("named upstreams from flags are checked and listed the same way", async () => {
      const r = await check([
        "--upstream",
        "http://127.0.0.1:1/mcp",
        "--upstream",
        "github=https://api.example.com/mcp",
        "--upstream-command",
        `files="${process.execPath}" server.js`,
      ]);
      expect(r.code).toBe(EXIT_OK);
      expect(OK.exec(r.out)?.[2]).toBe("default → /mcp, github → /mcp/github, files → /mcp/files");
    });

    it("an unset ${VAR} in a header: exit 2 naming the field and the variable, never the header's text", async () => {
      const file = join(dir, "check-three-unset.yaml");
      await writeFile(file, good(process.execPath));
      const r = await check(["--config", file]);
      expect(r).toEqual({
        code: EXIT_USAGE,
        out: "",
        err: "mcp-task-gateway: invalid configuration\n  upstreams.github.headers.authorization: names ${GITHUB_TOKEN}, which is not set\nRun with --help for usage.\n",
      });
    });

    it("bad names, a clash with default and a rule glob that matches no upstream: exit 2 naming each field", async () => {
      const file = join(dir, "check-three-bad.yaml");
      await writeFile(
        file,
        [
          "upstream:",
          "  url: https://mcp.example.com/mcp",
          "upstreams:",
          "  default:",
          "    url: https://api.example.com/mcp",
          "  Bad_Name:",
          "    url: https://other.example.com/mcp",
          "tasks:",
          "  rules:",
          "    - tool: '*'",
          "      upstream: 'gh*'",
          "      mode: always",
          "",
        ].join("\n"),
      );
      const r = await check(["--config", file]);
      expect(r.code).toBe(EXIT_USAGE);
      expect(r.out).toBe("");
      expect(r.err).toMatch(/^ {2}upstreams\.default: clashes with the single upstream, which is called default/m);
      expect(r.err).toMatch(/^ {2}upstreams\.Bad_Name: the name must match /m);
      expect(r.err).toMatch(/^ {2}tasks\.rules\.0\.upstream: matches no configured upstream /m);
      expect(r.err.match(/^ {2}\S/gm)).toHaveLength(3);
    });

    it("a named upstream's unreadable caFile and unfound program: exit 2 naming upstreams.NAME", async () => {
      const missing = join(dir, "three-missing-ca.pem");
      const file = join(dir, "check-three-offline.yaml");
      await writeFile(
        file,
        `${good("no-such-mcp-server")}`.replace(
          "    url: https://api.example.com/mcp\n",
          `    url: https://api.example.com/mcp\n    caFile: ${JSON.stringify(missing)}\n`,
        ),
      );
      const r = await check(["--config", file], { GITHUB_TOKEN: "t", PATH: emptyPath });
      expect(r.code).toBe(EXIT_USAGE);
      expect(r.err).toContain(`  upstreams.github.caFile ${missing} cannot be read (ENOENT)\n`);
      expect(r.err).toContain(
        "  upstreams.files.command: cannot be started (no-such-mcp-server was not found on the PATH the stdio server gets)\n",
      );
    });
  });

  it("warns about a deprecated section name, as a start would, and still exits 0", async () => {
    const file = await writeJson("check-modern.json", { upstream: { url: "http://127.0.0.1:1/mcp" }, modern: {} });
    const r = await check(["--config", file]);
    expect(r.code).toBe(EXIT_OK);
    expect(r.err).toContain('mcp-task-gateway: warning: the config section "modern" is now "eraBridge"');
    expect(r.out).toMatch(OK);
  });

  it("a start without --check is unchanged: it listens", async () => {
    const cap = io();
    gatewayOf(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--port", "0", "--log-level", "silent"], cap));
    expect(cap.out.join("")).toMatch(LISTENING);
  });
});

async function writeJson(name: string, value: unknown): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(value));
  return file;
}
