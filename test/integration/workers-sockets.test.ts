// `--workers N` (issue 38): the workers forward to each other over Unix sockets in a directory the primary makes
// for them (mode 0700, under TMPDIR: here the test's own), each worker's socket 0600. A session opened on one
// worker is served whatever worker a request lands on (the client opens a new connection per request, so the
// cluster spreads them); a worker killed with SIGKILL leaves no socket behind, its replacement listens on its own
// and serves forwarded requests; SIGTERM removes the directory.
import { lstat, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freshConnectionFetch } from "../helpers/round-robin.js";
import { replicaSuite } from "../helpers/replica-suite.js";
import { childPids, START_LINE, replicaConfig, waitFor } from "../helpers/replicas.js";
import { everythingCommand } from "../helpers/stdio-servers.js";
import { TEST_REDIS_URL } from "../helpers/redis.js";

const suite = replicaSuite();
const fresh = freshConnectionFetch();
afterAll(() => fresh.close());

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "sockets-test", version: "1" } },
};
const ECHO = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "hi" } } };

async function post(
  url: string,
  body: unknown,
  sessionId?: string,
): Promise<{ status: number; text: string; id: string }> {
  const res = await fresh.fetch(url, {
    method: "POST",
    headers: sessionId === undefined ? HEADERS : { ...HEADERS, "mcp-session-id": sessionId },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), id: res.headers.get("mcp-session-id") ?? "" };
}

/** A session, and echo calls on it, each on a new connection: about half land on the worker that does not hold it. */
async function echoAcrossWorkers(url: string, calls: number): Promise<void> {
  const init = await post(url, INITIALIZE);
  expect(init.status, init.text).toBe(200);
  const done = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, init.id);
  expect(done.status, done.text).toBe(202);
  for (let i = 0; i < calls; i++) {
    const res = await post(url, ECHO, init.id);
    expect(res.status, res.text).toBe(200);
    expect(res.text).toContain("Echo: hi");
  }
}

/** The primary's socket directory under `tmp`, and the sockets in it. */
async function sockets(tmp: string): Promise<{ dir: string; names: string[] } | undefined> {
  const dirs = (await readdir(tmp)).filter((d) => d.startsWith("mcp-task-gateway-"));
  if (dirs.length !== 1) return undefined;
  const dir = join(tmp, dirs[0] as string);
  const names = (await readdir(dir).catch(() => [])).filter((n) => n.endsWith(".sock")).sort();
  return { dir, names };
}

describe("--workers 2 over Unix sockets", () => {
  it("makes a private directory, forwards through it, survives a worker's death, and removes it on SIGTERM", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "mtg-workers-tmp-"));
    try {
      const config = replicaConfig({ command: everythingCommand() }, TEST_REDIS_URL, suite.redis.freshPrefix());
      const primary = await suite.replicas.start("primary", config, ["--workers", "2"], START_LINE, {
        TMPDIR: tmp,
      });
      const first = await waitFor(async () => {
        const s = await sockets(tmp);
        return s?.names.length === 2 ? s : undefined;
      }, "two workers' sockets");
      expect((await lstat(first.dir)).mode & 0o777).toBe(0o700);
      for (const name of first.names) {
        const st = await lstat(join(first.dir, name));
        expect(st.isSocket()).toBe(true);
        expect(st.mode & 0o777).toBe(0o600);
      }
      await echoAcrossWorkers(primary.url, 8);

      // One worker killed: its socket goes, the replacement's comes, and forwarding works between the two.
      const [victim] = await childPids(primary.pid);
      process.kill(victim as number, "SIGKILL");
      const after = await waitFor(async () => {
        const pids = await childPids(primary.pid);
        const s = await sockets(tmp);
        return pids.length === 2 && !pids.includes(victim as number) && s?.names.length === 2 ? s : undefined;
      }, "a replacement worker and its socket");
      expect(after.names.filter((n) => first.names.includes(n))).toHaveLength(1);
      await echoAcrossWorkers(primary.url, 8);

      const exit = await primary.terminate();
      expect(exit.code).toBe(0);
      expect((await readdir(tmp)).filter((d) => d.startsWith("mcp-task-gateway-"))).toEqual([]);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }, 60_000);
});
