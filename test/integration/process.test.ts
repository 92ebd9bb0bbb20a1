// The gateway as an operator runs it: a real process started the way `npm start`
// starts it, stopped with signals. Checks the start line, exit codes, and that
// SIGTERM lets a call in progress finish while refusing new connections; and
// `--check`, which exits on its own with 0 or 2 and starts nothing.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_REDIS_URL, testRedis } from "../helpers/redis.js";

const ROOT = new URL("../../", import.meta.url);
const START_LINE = /"msg":"mcp-task-gateway listening on (http:\/\/127\.0\.0\.1:\d+\/mcp) → upstream ([^\s"]+)"/;

interface GatewayProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

function runGateway(args: string[]): GatewayProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, MCP_GATEWAY_LOG_LEVEL: "warn" },
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exit = once(child, "exit").then(([code]) => code as number | null);
  return { child, url: "", stdout: () => out, stderr: () => err, exit };
}

async function started(p: GatewayProcess): Promise<GatewayProcess> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const m = START_LINE.exec(p.stdout());
    if (m?.[1]) return { ...p, url: m[1] };
    if (p.child.exitCode !== null) throw new Error(`gateway exited early: ${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gateway did not print its start line: ${p.stdout()} ${p.stderr()}`);
}

/** An upstream whose answers wait until the test releases them, so a call is provably in flight. */
async function heldUpstream(): Promise<{ url: string; arrived: Promise<void>; release: () => void }> {
  let release = (): void => {};
  let arrivedResolve = (): void => {};
  const arrived = new Promise<void>((r) => (arrivedResolve = r));
  const released = new Promise<void>((r) => (release = r));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      arrivedResolve();
      const { id } = JSON.parse(body) as { id: number };
      void released.then(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "finished" }] } }));
      });
    });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, arrived, release };
}

describe("the gateway process", () => {
  it("prints one start line naming where it listens and the upstream, without credentials", async () => {
    const p = await started(runGateway(["--upstream", "http://user:secret@127.0.0.1:9/mcp?token=abc", "--port", "0"]));
    const m = START_LINE.exec(p.stdout());
    expect(m?.[2]).toBe("http://127.0.0.1:9/mcp");
    expect(p.stdout().trim().split("\n")).toHaveLength(1);
    expect(p.stdout() + p.stderr()).not.toMatch(/secret|token=abc/);
    p.child.kill("SIGINT");
    expect(await p.exit).toBe(0);
  });

  it("exits 2 when a start fails after connecting its Redis store: the store's connections do not keep it alive", async () => {
    const redis = await testRedis();
    const dir = await mkdtemp(join(tmpdir(), "mcp-gw-start-"));
    try {
      const missing = join(dir, "missing-ca.pem");
      const file = join(dir, "gateway.json");
      const config = {
        upstream: { url: "https://127.0.0.1:9/mcp", caFile: missing },
        tasks: { storePrefix: redis.prefix },
      };
      await writeFile(file, JSON.stringify(config));
      const p = runGateway(["--config", file, "--store", TEST_REDIS_URL, "--port", "0"]);
      expect(await p.exit).toBe(2);
      expect(p.stderr()).toContain(`upstream.caFile ${missing} cannot be read (ENOENT)`);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await redis.cleanup();
    }
  });

  it("exits 2 and names the field on a bad value", async () => {
    const p = runGateway(["--upstream", "http://127.0.0.1:9/mcp", "--port", "99999"]);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toMatch(/server\.port: .*--port/);
  });

  it("on SIGTERM lets the call in progress finish, refuses new connections, and exits 0", async () => {
    const upstream = await heldUpstream();
    const p = await started(runGateway(["--upstream", upstream.url, "--port", "0"]));

    const call = fetch(p.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: "slow", arguments: {} } }),
    });
    await upstream.arrived;
    p.child.kill("SIGTERM");
    // The listener closes in the same tick as this message is written.
    while (!p.stderr().includes("SIGTERM received")) await new Promise((r) => setTimeout(r, 10));

    // The listener is closed: a new connection is refused while the old call is still held.
    await expect(fetch(p.url.replace("/mcp", "/healthz"))).rejects.toThrow();
    expect(p.child.exitCode).toBeNull();

    upstream.release();
    const res = await call;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      jsonrpc: "2.0",
      id: 42,
      result: { content: [{ type: "text", text: "finished" }] },
    });
    expect(await p.exit).toBe(0);
    // The start line and the shutdown line are JSON log lines, like every other line (log level warn here).
    const start = JSON.parse(p.stdout().trim()) as Record<string, unknown>;
    expect(start).toMatchObject({ level: "info", url: p.url, upstreams: "default", store: "memory" });
    const stderr = p
      .stderr()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(stderr).toContainEqual(
      expect.objectContaining({
        level: "info",
        signal: "SIGTERM",
        msg: "mcp-task-gateway: SIGTERM received, shutting down",
      }),
    );
    for (const line of stderr) expect(line).not.toHaveProperty("worker");
  });
});

describe("mcp-task-gateway --check", () => {
  it("exits 0 with one line on stdout for a good YAML config, with its Redis unserved and its port taken", async () => {
    const taken = createServer();
    servers.push(taken);
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    const dir = await mkdtemp(join(tmpdir(), "mcp-gw-check-"));
    try {
      const file = join(dir, "gateway.yaml");
      const port = (taken.address() as AddressInfo).port;
      await writeFile(file, `upstream:\n  url: http://127.0.0.1:9/mcp\nserver:\n  port: ${port}\n`);
      const p = runGateway(["--check", "--config", file, "--store", "redis://127.0.0.1:1", "--workers", "2"]);
      expect(await p.exit).toBe(0);
      expect(p.stdout()).toBe(`mcp-task-gateway: configuration OK (${file}): default → /mcp\n`);
      expect(p.stderr()).toBe("");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("exits 2 naming each bad field, the schema's and the offline checks' alike", async () => {
    const bad = runGateway(["--check", "--upstream", "http://127.0.0.1:9/mcp", "--port", "99999"]);
    const store = runGateway(["--check", "--upstream", "http://127.0.0.1:9/mcp", "--store", "redis://127.0.0.1/x"]);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr()).toMatch(/server\.port: .*--port/);
    expect(bad.stdout()).toBe("");
    expect(await store.exit).toBe(2);
    expect(store.stderr()).toMatch(/tasks\.store: .*database number.*\(--store\)/);
  });
});
