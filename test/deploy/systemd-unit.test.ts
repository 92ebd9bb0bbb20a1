// deploy/systemd/mcp-task-gateway.service, checked by systemd's own tools (Debian's systemd package;
// scripts/test-services.sh installs it when systemd-analyze is missing):
//   - `systemd-analyze verify` parses the unit as systemd would load it: unknown sections or keys, values that do
//     not parse (an address family, a system call set, a signal), and an ExecStart whose program is missing.
//     It exits 0 on warnings, so the test wants no output at all.
//   - `systemd-analyze security --offline=true` scores its sandboxing; the test holds it to "OK" (2.0 or less, of
//     10: the lower, the less the service is exposed).
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const UNIT = fileURLToPath(new URL("../../deploy/systemd/mcp-task-gateway.service", import.meta.url));

interface Result {
  code: number;
  output: string;
}

function analyze(args: readonly string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile("systemd-analyze", [...args], { encoding: "utf8", timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, output: `${stdout}${stderr}${err && code === -1 ? err.message : ""}`.trim() });
    });
  });
}

let dir = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "unit-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the systemd unit", () => {
  it("passes systemd-analyze verify without a warning", async () => {
    expect(await analyze(["verify", UNIT])).toEqual({ code: 0, output: "" });
  });

  it("is caught by the same check when a directive is wrong (the check is not blind)", async () => {
    const broken = join(dir, "mcp-task-gateway.service");
    const text = await readFile(UNIT, "utf8");
    await writeFile(broken, text.replace("RestrictAddressFamilies=AF_INET ", "RestrictAddressFamilies=AF_NOPE "));
    const result = await analyze(["verify", broken]);
    expect(result.output).toContain("Failed to parse address family");
  });

  it("is sandboxed: systemd-analyze security rates its exposure OK (at most 2.0)", async () => {
    const result = await analyze(["security", "--offline=true", "--threshold=20", "--no-pager", UNIT]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/Overall exposure level for mcp-task-gateway\.service: [0-2]\.\d OK/);
  });

  it("runs node on the bin (signals reach the gateway), reloads with SIGHUP and stops with SIGTERM", async () => {
    const text = await readFile(UNIT, "utf8");
    const directives = new Map<string, string[]>();
    for (const line of text.split("\n")) {
      const m = /^([A-Za-z]+)=(.*)$/.exec(line);
      if (m?.[1] !== undefined && m[2] !== undefined) directives.set(m[1], [...(directives.get(m[1]) ?? []), m[2]]);
    }
    expect(directives.get("ExecStart")?.[0]).toMatch(/^\/usr\/bin\/node \S+\/bin\/mcp-task-gateway\.js /);
    expect(directives.get("ExecReload")).toEqual(["/bin/kill -HUP $MAINPID"]);
    expect(directives.get("KillSignal")).toEqual(["SIGTERM"]);
    for (const [key, value] of [
      ["NoNewPrivileges", "yes"],
      ["ProtectSystem", "strict"],
      ["PrivateTmp", "yes"],
      ["DynamicUser", "yes"],
      ["CapabilityBoundingSet", ""],
      ["RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"],
    ] as const) {
      expect(directives.get(key), key).toEqual([value]);
    }
    expect(directives.get("SystemCallFilter")).toContain("@system-service");
  });
});
