// The pinning fields of a named upstream, as --check sees them, and the `pins` command's refusals that need no
// store: a pin must be sha256: and 64 lowercase hex digits; the memory store has no pins another process can see.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, type CliIo } from "../../src/cli.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

function capture(): CliIo & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    env: {},
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
  };
  return io;
}

async function configFile(yaml: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mtg-pin-config-"));
  dirs.push(dir);
  const file = join(dir, "gateway.yaml");
  await writeFile(file, yaml);
  return file;
}

const DIGEST = `sha256:${"0123456789abcdef".repeat(4)}`;

describe("--check and upstreams.<name>.pins", () => {
  it("accepts a policy and pins as `pins list` prints them", async () => {
    const file = await configFile(
      `upstreams:\n  github:\n    url: http://127.0.0.1:3001/mcp\n    pinning: hide\n    pins:\n      create_issue: "${DIGEST}"\n`,
    );
    const io = capture();
    expect(await runCli(["--check", "--config", file], io)).toEqual({ exitCode: 0 });
    expect(io.out).toContain("configuration OK");
  });

  it("names a pin that is not sha256: and 64 lowercase hex digits, and an unknown policy", async () => {
    const file = await configFile(
      `upstreams:\n  github:\n    url: http://127.0.0.1:3001/mcp\n    pinning: block\n    pins:\n      create_issue: "sha256:ABC"\n`,
    );
    const io = capture();
    expect(await runCli(["--check", "--config", file], io)).toEqual({ exitCode: 2 });
    expect(io.err).toContain("upstreams.github.pins.create_issue");
    expect(io.err).toContain("upstreams.github.pinning");
  });
});

describe("mcp-task-gateway pins", () => {
  it("refuses the memory store: its pins live in each gateway's own process", async () => {
    const file = await configFile(`upstreams:\n  github:\n    url: http://127.0.0.1:3001/mcp\n    pinning: hide\n`);
    const io = capture();
    expect(await runCli(["pins", "list", "--config", file], io)).toEqual({ exitCode: 2 });
    expect(io.err).toContain("tasks.store is memory");
  });

  it("is found after --config too", async () => {
    const file = await configFile(`upstreams:\n  github:\n    url: http://127.0.0.1:3001/mcp\n    pinning: hide\n`);
    const io = capture();
    expect(await runCli(["--config", file, "pins", "list"], io)).toEqual({ exitCode: 2 });
    expect(io.err).toContain("tasks.store is memory");
  });

  it("needs tools or --all to approve, and a known subcommand", async () => {
    const file = await configFile(`upstreams:\n  github:\n    url: http://127.0.0.1:3001/mcp\n    pinning: hide\n`);
    const io = capture();
    expect(await runCli(["pins", "approve", "--config", file], io)).toEqual({ exitCode: 2 });
    expect(io.err).toContain("name the tools to approve, or --all");
    expect(await runCli(["pins", "forget", "--config", file], io)).toEqual({ exitCode: 2 });
    expect(await runCli(["pins", "list", "--upstream", "nope", "--config", file], io)).toEqual({ exitCode: 2 });
    expect(io.err).toContain("upstreams.nope has no pinning");
  });
});
