// server.internalTls (issue 23): replicas speak HTTPS to each other's internal listener and verify each other
// with certificates made by openssl at test time. A session held by one replica is served through the other over
// TLS; a replica whose certificate another CA signed is refused by the handshake, both as a client (its forward
// fails, and the session answers 404 there) and as a server; plain HTTP to a TLS listener gets nothing. Without
// internalTls, a listener advertised on a non-loopback address is refused at start unless internalInsecure says so.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/validate.js";
import { everythingCommand } from "../helpers/stdio-servers.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { Replicas, type Json, START_LINE, waitFor } from "../helpers/replicas.js";

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "tls-test", version: "1" } },
};

interface Pki {
  ca: string;
  cert: string;
  key: string;
}

let dir: string;
let redis: TestRedis;
const replicas = new Replicas();

function openssl(args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
}

/** A CA named `name`, and a certificate it signed for 127.0.0.1 (server and client use). */
async function pki(name: string): Promise<Pki> {
  openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${name} CA`].concat([
      "-keyout",
      `${name}-ca.key`,
      "-out",
      `${name}-ca.pem`,
    ]),
  );
  openssl(
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${name} replica`, "-keyout", `${name}.key`].concat([
      "-out",
      `${name}.csr`,
    ]),
  );
  await writeFile(
    join(dir, `${name}.ext`),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
  );
  openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${name}-ca.pem`, "-CAkey", `${name}-ca.key`].concat([
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
      "-out",
      `${name}.pem`,
    ]),
  );
  return { ca: join(dir, `${name}-ca.pem`), cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mtg-tls-"));
  redis = await testRedis();
});

afterAll(async () => {
  await replicas.killAll();
  await replicas.cleanup();
  await redis?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function config(prefix: string, tls: Pki): Json {
  return {
    upstream: { command: everythingCommand() },
    server: { host: "127.0.0.1", port: 0, shutdownGraceMs: 1_000, internalTls: tls },
    tasks: { store: TEST_REDIS_URL, storePrefix: prefix, leaseMs: 1_000, sweepIntervalMs: 500, drainMs: 0 },
    log: { level: "warn" },
  };
}

async function post(url: string, body: Json, sessionId?: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...(sessionId && { "mcp-session-id": sessionId }) },
    body: JSON.stringify(body),
  });
}

/** One HTTPS request to `address` with `tls`'s client certificate and CA: the status, or the handshake's error. */
function handshake(address: string, tls: Pki): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      `${address}/mcp`,
      {
        method: "POST",
        ca: readFileSync(tls.ca),
        cert: readFileSync(tls.cert),
        key: readFileSync(tls.key),
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end("{}");
  });
}

describe("server.internalTls", () => {
  it("serves a session held by another replica over verified TLS; another CA's replica is refused", async () => {
    const [good, other] = await Promise.all([pki("good"), pki("other")]);
    const prefix = redis.freshPrefix();
    const [a, b, stranger] = await Promise.all([
      replicas.start("a", config(prefix, good), [], START_LINE),
      replicas.start("b", config(prefix, good), [], START_LINE),
      replicas.start("stranger", config(prefix, other), [], START_LINE),
    ]);
    // Every registration is an https:// address.
    const addresses = await Promise.all(
      (await redis.keys(`${prefix}replica:`)).map(async (k) => (await redis.client.get(k)) ?? ""),
    );
    expect(addresses).toHaveLength(3);
    for (const address of addresses) expect(address).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);

    const init = await post(a.url, INITIALIZE);
    expect(init.status).toBe(200);
    await init.text();
    const sessionId = init.headers.get("mcp-session-id") ?? "";
    const ack = await post(a.url, { jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
    await ack.text();

    // b holds nothing of it: forwarded to a over TLS, both sides verified.
    const viaB = await post(b.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, sessionId);
    expect(viaB.status, b.stderr()).toBe(200);
    expect(await viaB.text()).toContain('"echo"');

    // The stranger's certificate chains to another CA: its forward fails the handshake, and the session is over
    // as far as it can tell (404), while a and b keep serving it.
    const viaStranger = await post(stranger.url, { jsonrpc: "2.0", id: 3, method: "tools/list" }, sessionId);
    expect(viaStranger.status).toBe(404);
    await viaStranger.text();
    // The child's log line may reach its stderr pipe a moment after its answer.
    await waitFor(
      () => (stranger.stderr().includes("forwarding to the replica holding a session failed") ? true : undefined),
      "the stranger to log the failed forward",
    );
    const again = await post(b.url, { jsonrpc: "2.0", id: 4, method: "tools/list" }, sessionId);
    expect(again.status).toBe(200);
    await again.text();

    // As a server, too: a client certificate from another CA gets no further than the handshake; with the right one
    // the handshake passes, and the replica credential is what is checked next (403 without one).
    const outcomes = await Promise.all(
      addresses.map(async (address) => [await handshake(address, good), await handshake(address, other)]),
    );
    const refused = (x: number | string | undefined): boolean => typeof x === "string";
    expect(outcomes.filter(([g, o]) => g === 403 && refused(o))).toHaveLength(2);
    expect(outcomes.filter(([g, o]) => refused(g) && o === 403)).toHaveLength(1);
  }, 60_000);

  it("is required for an internal listener advertised beyond loopback, unless internalInsecure says otherwise", () => {
    const base = { upstream: { url: "http://127.0.0.1:1/mcp" }, tasks: { store: TEST_REDIS_URL } };
    expect(() => parseConfig({ ...base, server: { advertiseUrl: "http://10.0.0.5:8643" } })).toThrow(/internalTls/);
    expect(() => parseConfig({ ...base, server: { internalHost: "10.0.0.5" } })).toThrow(/internalTls/);
    expect(
      parseConfig({ ...base, server: { advertiseUrl: "http://10.0.0.5:8643", internalInsecure: true } }).server
        .internalInsecure,
    ).toBe(true);
    expect(
      parseConfig({
        ...base,
        server: { advertiseUrl: "https://10.0.0.5:8643", internalTls: { cert: "c.pem", key: "k.pem", ca: "ca.pem" } },
      }).server.internalTls,
    ).toEqual({ cert: "c.pem", key: "k.pem", ca: "ca.pem" });
    // Loopback (workers of one host) and the memory store need neither.
    expect(() => parseConfig({ ...base, server: { advertiseUrl: "http://127.0.0.1:8643" } })).not.toThrow();
    expect(() =>
      parseConfig({ upstream: { url: "http://127.0.0.1:1/mcp" }, server: { internalHost: "10.0.0.5" } }),
    ).not.toThrow();
  });
});
