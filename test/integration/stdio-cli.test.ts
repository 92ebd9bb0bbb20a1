// `--upstream-command`: the flag, its exclusion of --upstream, and the done-when check of the issue:
// legacy and modern clients served over HTTP by a gateway started from the CLI in front of a stdio server.
import { afterEach, describe, expect, it } from "vitest";
import { EXIT_USAGE, runCli, type CliIo, type CliResult } from "../../src/cli.js";
import type { RunningGateway } from "../../src/index.js";
import { connectModernClient, textOf } from "../helpers/modern-client.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { everythingCommand, openRawSession } from "../helpers/stdio-servers.js";

function io(env: NodeJS.ProcessEnv = {}): CliIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, env, stdout: (t) => out.push(t), stderr: (t) => err.push(t) };
}

const started: RunningGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close(0)));
});
function gatewayOf(result: CliResult): RunningGateway {
  if (result.exitCode !== null) throw new Error(`expected the gateway to start, got exit code ${result.exitCode}`);
  started.push(result.gateway);
  return result.gateway;
}

/** argv quoted for the flag (the node binary's path may hold spaces). */
const commandLine = (argv: string[]): string => argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");

describe("--upstream-command", () => {
  it("with --upstream exits 2 naming both", async () => {
    const cap = io();
    expect(await runCli(["--upstream", "http://127.0.0.1:1/mcp", "--upstream-command", "node server.js"], cap)).toEqual(
      { exitCode: EXIT_USAGE },
    );
    expect(cap.err.join("")).toContain(
      "upstream.command: set upstream.url (--upstream) or upstream.command (--upstream-command), not both",
    );
  });

  it("with neither exits 2", async () => {
    const cap = io();
    expect(await runCli(["--port", "0"], cap)).toEqual({ exitCode: EXIT_USAGE });
    expect(cap.err.join("")).toContain("upstream.url: is required (or upstream.command, or upstreams)");
  });

  it("with an unclosed quote exits 2 naming the flag", async () => {
    const cap = io();
    expect(await runCli(["--upstream-command", "node 'server.js"], cap)).toEqual({ exitCode: EXIT_USAGE });
    expect(cap.err.join("")).toContain("upstream.command: unclosed single quote");
    expect(cap.err.join("")).toContain("--upstream-command");
  });

  it("serves legacy and modern clients over HTTP in front of server-everything over stdio", async () => {
    const cap = io({ PATH: process.env.PATH, HOME: process.env.HOME });
    const gateway = gatewayOf(
      await runCli(
        ["--upstream-command", commandLine(everythingCommand()), "--port", "0", "--log-level", "silent"],
        cap,
      ),
    );
    expect(cap.out.join("")).toMatch(
      /listening on http:\/\/127\.0\.0\.1:\d+\/mcp → upstream stdio: .*server-everything.* stdio"}\n$/,
    );
    const legacy = await connectSdkClient(gateway.url);
    const modern = await connectModernClient(gateway.url);
    try {
      expect((await legacy.client.callTool({ name: "echo", arguments: { message: "legacy" } })).content).toEqual([
        { type: "text", text: "Echo: legacy" },
      ]);
      expect(textOf(await modern.client.callTool({ name: "echo", arguments: { message: "modern" } }))).toBe(
        "Echo: modern",
      );
      // Each legacy session has its own process; the bridge's pooled session has one too.
      await openRawSession(gateway.url);
      expect((await gateway.stats()).upstreamProcesses).toBe(3);
    } finally {
      await legacy.close();
      await modern.close();
    }
  });
});
