// Reloading the gateway process as an operator does: a config file in a temp
// folder, `node --import tsx src/main.ts --config FILE`, then
//   --watch-config: a valid edit applies its access rule; an invalid one writes
//   exactly one error line naming the field and the old policy stays;
//   SIGHUP (no watch): a valid edit applies once the signal arrives, and a
//   setting that needs a restart is named in a warning and keeps its value.
// Waits are bounded polls on what a client sees; nothing is timed.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { modernRpc } from "../helpers/modern-rpc.js";
import { rawRequest } from "../helpers/http.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { startPrivateRedis } from "../helpers/redis-server.js";
import { pollUntil } from "../helpers/poll.js";

const ROOT = new URL("../../", import.meta.url);
const START_LINE = /"msg":"mcp-task-gateway listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) /;
/** The primary's one start line with --workers N. */
const WORKERS_LINE = /"msg":"mcp-task-gateway listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) .*\(\d+ workers\)"/;
const WAIT_MS = 15_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stderr: () => string;
}

/** A temp folder with the config file; removed after the test. */
async function configFile(): Promise<{ file: string; write: (config: unknown) => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "gateway-reload-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, "gateway.json");
  return { file, write: (config) => writeFile(file, `${JSON.stringify(config, null, 2)}\n`) };
}

async function upstream(): Promise<ModernUpstream> {
  const u = await startModernUpstream();
  cleanups.push(() => u.close());
  return u;
}

/** Starts the CLI and waits for its start line; killed after the test. */
async function runGateway(args: string[], startLine = START_LINE): Promise<Running> {
  // Only the file (and flags) configure it: no MCP_GATEWAY_* variables from the environment running the tests.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MCP_GATEWAY_")));
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], { cwd: ROOT, env });
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const url = await pollUntil(
    async () => startLine.exec(out)?.[1],
    (u) => u !== undefined || child.exitCode !== null,
    WAIT_MS,
  );
  if (url === undefined) throw new Error(`the gateway did not start: ${out} ${err}`);
  return { child, url, stderr: () => err };
}

/** The tool names a modern client sees through the gateway. */
async function visibleTools(url: string): Promise<string[]> {
  const answer = await modernRpc(url, "tools/list", {}, { caps: {} });
  const tools = answer.body.result?.tools as Array<{ name: string }> | undefined;
  if (!tools) throw new Error(`tools/list failed: ${answer.text}`);
  return tools.map((t) => t.name);
}

/** Polls until the visible tools satisfy `done` (bounded); returns the last list. */
function toolsUntil(url: string, done: (tools: string[]) => boolean): Promise<string[]> {
  return pollUntil(() => visibleTools(url), done, WAIT_MS);
}

/** stderr's JSON log lines at `level`. */
function linesAt(stderr: string, level: string): Array<Record<string, unknown>> {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.level === level);
}

function gatewayConfig(
  upstreamUrl: string,
  deny: string[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    upstream: { url: upstreamUrl },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "warn" },
    access: { default: "allow", rules: deny.map((tools) => ({ tools, effect: "deny" })) },
    ...extra,
  };
}

describe("reloading the gateway process", () => {
  it("--watch-config: a valid edit applies; an invalid one logs one error line naming the field and the old policy stays", async () => {
    const up = await upstream();
    const { file, write } = await configFile();
    await write(gatewayConfig(up.url, ["fail"]));
    const gw = await runGateway(["--config", file, "--watch-config"]);
    const first = await visibleTools(gw.url);
    expect(first).toContain("echo");
    expect(first).not.toContain("fail");

    // (a) A valid edit: echo is denied as well.
    await write(gatewayConfig(up.url, ["fail", "echo"]));
    const edited = await toolsUntil(gw.url, (t) => !t.includes("echo"));
    expect(edited).not.toContain("echo");
    expect(edited).not.toContain("fail");
    expect(edited).toContain("slow");
    const denied = await modernRpc(
      gw.url,
      "tools/call",
      { name: "echo", arguments: { text: "x" } },
      { name: "echo", caps: {} },
    );
    expect(denied.body.error).toMatchObject({ code: -32602, data: { reason: "access_denied", tool: "echo" } });

    // (b) An invalid file: one error line that names the field; the policy in force does not change.
    const before = gw.stderr().length;
    await write({
      ...gatewayConfig(up.url, ["slow"]),
      access: { default: "sometimes", rules: [{ tools: "slow", effect: "deny" }] },
    });
    const errors = await pollUntil(
      async () => linesAt(gw.stderr(), "error"),
      (l) => l.length > 0,
      WAIT_MS,
    );
    expect(errors).toHaveLength(1);
    expect(String(errors[0]?.problems)).toContain("access.default");
    const kept = await visibleTools(gw.url);
    expect(kept).toEqual(edited);

    // A valid file after it applies again; by then every event of the invalid write has been handled,
    // and it gave exactly one error line.
    await write(gatewayConfig(up.url, ["ask"]));
    const last = await toolsUntil(gw.url, (t) => t.includes("echo"));
    expect(last).toContain("echo");
    expect(last).toContain("fail");
    expect(last).not.toContain("ask");
    // Since the invalid write, stderr got that one line and nothing else.
    const since = gw
      .stderr()
      .slice(before)
      .split("\n")
      .filter((l) => l.trim() !== "");
    expect(since).toHaveLength(1);
    expect(JSON.parse(since[0] as string)).toMatchObject({
      level: "error",
      problems: expect.stringContaining("access.default"),
    });
    expect(gw.child.exitCode).toBeNull();
  });

  it("SIGHUP reloads a valid edit; a setting that needs a restart is named in a warning and keeps its value", async () => {
    const up = await upstream();
    const { file, write } = await configFile();
    await write(gatewayConfig(up.url, []));
    const gw = await runGateway(["--config", file]);
    expect(await visibleTools(gw.url)).toContain("echo");

    // Without --watch-config an edit alone changes nothing.
    await write(gatewayConfig(up.url, ["echo"], { server: { host: "127.0.0.1", port: 0, maxBodyBytes: 2_000_000 } }));
    expect(await visibleTools(gw.url)).toContain("echo");

    gw.child.kill("SIGHUP");
    const after = await toolsUntil(gw.url, (t) => !t.includes("echo"));
    expect(after).not.toContain("echo");
    expect(after).toContain("slow");
    const warnings = await pollUntil(
      async () => linesAt(gw.stderr(), "warn").filter((l) => typeof l.settings === "string"),
      (l) => l.length > 0,
      WAIT_MS,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.settings).toBe("server.maxBodyBytes");
    expect(linesAt(gw.stderr(), "error")).toEqual([]);
    // Still serving at the same address, and still alive.
    expect(gw.child.exitCode).toBeNull();
  });

  it("--workers 2: SIGHUP to the primary reloads every worker", async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.stop());
    const up = await upstream();
    const { file, write } = await configFile();
    const base = (deny: string[]) => gatewayConfig(up.url, deny, { tasks: { store: redis.url } });
    await write(base([]));
    const gw = await runGateway(["--config", file, "--workers", "2"], WORKERS_LINE);

    /** tools/list on a new connection each time, so the cluster spreads them over both workers. */
    const freshList = async (): Promise<string[]> => {
      const res = await rawRequest(gw.url, {
        method: "POST",
        headers: modernHeaders("tools/list"),
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: modernMeta() } }),
      });
      const body = JSON.parse(res.body.toString("utf8")) as { result?: { tools: Array<{ name: string }> } };
      return (body.result?.tools ?? []).map((t) => t.name);
    };
    expect(await freshList()).toContain("echo");

    await write(base(["echo"]));
    gw.child.kill("SIGHUP");
    // Wait until a run of requests on new connections (both workers, round robin) all see the new policy.
    const RUN = 8;
    const run = await pollUntil(
      () => Promise.all(Array.from({ length: RUN }, () => freshList())),
      (lists) => lists.every((t) => !t.includes("echo")),
      WAIT_MS,
    );
    for (const tools of run) {
      expect(tools).not.toContain("echo");
      expect(tools).toContain("slow");
    }
    expect(linesAt(gw.stderr(), "error")).toEqual([]);
    // A graceful stop takes the workers down with the primary.
    const exited = new Promise<number | null>((r) => gw.child.once("exit", (code) => r(code)));
    gw.child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
