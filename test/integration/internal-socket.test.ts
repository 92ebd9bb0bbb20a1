// server.internalSocketDir (issue 38): replicas of one host forward to each other over Unix sockets in a directory
// only their user can enter. Two gateways on one Redis share a directory, in front of server-everything over stdio
// (a stdio session is held by the gateway that opened it, and requests on it sent to the other are forwarded):
//   - each listens on a 0600 socket there, which goes when it closes;
//   - the socket asks for the replica credential like the TCP listener: a request without one, or with one made
//     under another key, is refused (a process of the same user is no replica);
//   - a session's requests sent to the other gateway reach the owner through the socket (its TCP address is
//     advertised at a closed port, so nothing else could answer), all on one connection kept warm;
//   - over TCP (no directory), the forwarded requests share one kept-alive connection as well;
//   - a directory open to other users, a symbolic link or a file stops the start, naming the setting.
import { randomBytes } from "node:crypto";
import { chmod, lstat, mkdir, mkdtemp, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type RunningGateway } from "../../src/index.js";
import { FORWARDED_HEADER, forwardingKey, forwardToken } from "../../src/replicas/forward-token.js";
import { INIT_REQUEST } from "../helpers/http.js";
import { getFreePort } from "../helpers/ports.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { everythingCommand } from "../helpers/stdio-servers.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const ECHO = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "hi" } } };

let redis: TestRedis;
let base: string;
const gateways: RunningGateway[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  redis = await testRedis();
  base = await mkdtemp(join(tmpdir(), "mtg-sockets-"));
});

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close(0)));
  for (const s of servers.splice(0)) s.close();
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
  await redis?.cleanup();
});

/** A fresh directory of mode 0700 under the test's own. */
async function socketDir(): Promise<string> {
  const dir = join(base, randomBytes(4).toString("hex"));
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

async function gateway(prefix: string, server: Record<string, unknown>): Promise<RunningGateway> {
  const g = await startGateway({
    upstream: { command: everythingCommand() },
    server: { host: "127.0.0.1", port: 0, ...server },
    tasks: { store: TEST_REDIS_URL, storePrefix: prefix },
    log: { level: "error" },
  });
  gateways.push(g);
  return g;
}

/** A session opened on `g` (its stdio child is held there): its id. */
async function openSession(g: RunningGateway): Promise<string> {
  const init = await fetch(g.url, { method: "POST", headers: HEADERS, body: JSON.stringify(INIT_REQUEST) });
  expect(init.status).toBe(200);
  await init.text();
  const sessionId = init.headers.get("mcp-session-id") ?? "";
  expect(sessionId).not.toBe("");
  const headers = { ...HEADERS, "mcp-session-id": sessionId };
  const done = await fetch(g.url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  expect(done.status).toBe(202);
  await done.text();
  return sessionId;
}

async function echo(g: RunningGateway, sessionId: string): Promise<void> {
  const res = await fetch(g.url, {
    method: "POST",
    headers: { ...HEADERS, "mcp-session-id": sessionId },
    body: JSON.stringify(ECHO),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(text).toContain("Echo: hi");
}

/** A relay listening at `at` (a port or a socket path) to `to`, counting the connections it is given. */
async function countingRelay(at: number | string, to: () => Socket): Promise<{ connections: () => number }> {
  let n = 0;
  const relay = createServer((client) => {
    n++;
    const target = to();
    client.pipe(target).pipe(client);
    client.on("error", () => target.destroy());
    target.on("error", () => client.destroy());
  });
  servers.push(relay);
  await new Promise<void>((resolve) =>
    typeof at === "string" ? relay.listen(at, resolve) : relay.listen(at, "127.0.0.1", resolve),
  );
  return { connections: () => n };
}

describe("server.internalSocketDir", () => {
  it("listens on a socket only its user may use, and removes it on close", async () => {
    const dir = await socketDir();
    const g = await gateway(redis.freshPrefix(), { internalSocketDir: dir });
    const path = g.internalSocket ?? "";
    expect(path.startsWith(`${dir}/`)).toBe(true);
    const st = await lstat(path);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    await g.close(0);
    await expect(lstat(path)).rejects.toMatchObject({ code: "ENOENT" });
    // The directory is the operator's: it stays.
    expect((await stat(dir)).isDirectory()).toBe(true);
  });

  it("asks for the replica credential on the socket", async () => {
    const prefix = redis.freshPrefix();
    const g = await gateway(prefix, { internalSocketDir: await socketDir() });
    const pool = new Pool("http://localhost", { socketPath: g.internalSocket ?? "" });
    try {
      const body = JSON.stringify(ECHO);
      const forged = forwardToken(
        forwardingKey(randomBytes(32)),
        "replica-x",
        { method: "POST", path: "/mcp", body: Buffer.from(body) },
        true,
        Date.now(),
      );
      for (const extra of [{}, { [FORWARDED_HEADER]: forged }]) {
        const res = await pool.request({ method: "POST", path: "/mcp", headers: { ...HEADERS, ...extra }, body });
        expect(res.statusCode).toBe(403);
        expect(await res.body.json()).toMatchObject({ error: { data: { reason: "not_a_replica" } } });
      }
    } finally {
      await pool.close();
    }
  });

  it("forwards a session's requests to its owner through the socket, on one kept connection", async () => {
    const prefix = redis.freshPrefix();
    const dir = await socketDir();
    // A's TCP address is advertised at a port nothing listens on: only the socket can reach it.
    const closed = await getFreePort();
    const a = await gateway(prefix, { internalSocketDir: dir, advertiseUrl: `http://127.0.0.1:${closed}` });
    const b = await gateway(prefix, { internalSocketDir: dir });
    // A relay takes A's socket's place and counts the connections B makes to A.
    const own = a.internalSocket ?? "";
    const moved = `${own}.real`;
    await rename(own, moved);
    const relay = await countingRelay(own, () => connect(moved));

    const sessionId = await openSession(a);
    for (let i = 0; i < 10; i++) await echo(b, sessionId);
    expect(relay.connections()).toBe(1);
  });

  it("keeps one warm connection to the owner over TCP as well", async () => {
    const prefix = redis.freshPrefix();
    const internalPort = await getFreePort();
    const relayPort = await getFreePort();
    const relay = await countingRelay(relayPort, () => connect(internalPort, "127.0.0.1"));
    const a = await gateway(prefix, { internalPort, advertiseUrl: `http://127.0.0.1:${relayPort}` });
    const b = await gateway(prefix, {});

    const sessionId = await openSession(a);
    for (let i = 0; i < 10; i++) await echo(b, sessionId);
    expect(relay.connections()).toBe(1);
  });

  it("refuses a directory other users could reach, a symbolic link, or a file", async () => {
    const open = join(base, "open");
    await mkdir(open, { mode: 0o700 });
    // chmod after mkdir: the umask does not narrow it.
    await chmod(open, 0o755);
    const link = join(base, "link");
    await symlink(await socketDir(), link);
    const file = join(base, "file");
    await writeFile(file, "");
    for (const [dir, why] of [
      [open, /is open to other users \(mode 755; needs 0700\)/],
      [link, /is not a directory/],
      [file, /is not a directory/],
      [join(base, "missing"), /cannot be read \(ENOENT\)/],
    ] as const) {
      await expect(gateway(redis.freshPrefix(), { internalSocketDir: dir })).rejects.toThrow(
        new RegExp(`server\\.internalSocketDir ${dir} ${why.source}`),
      );
    }
  });
});
