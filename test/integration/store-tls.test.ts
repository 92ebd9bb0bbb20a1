// tasks.redisTls against a real redis-server listening with TLS only (a throwaway self-signed certificate for
// 127.0.0.1 and localhost): a CA given as a path or as PEM text, a servername for a connection by address, TLS
// turned on by the settings for a redis:// URL, and the failures an operator can fix, named.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRedis, connectRedis } from "../../src/store/redis-connect.js";
import { parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";
import { makeTestCertificate, type TestCertificate } from "../fixtures/tls-upstream.js";
import { getFreePort } from "../helpers/ports.js";

let cert: TestCertificate;
let port: number;
let server: ChildProcess;

const spec = (url: string): RedisStoreSpec => parseStoreSpec(url) as RedisStoreSpec;

beforeAll(async () => {
  cert = makeTestCertificate();
  port = await getFreePort();
  server = spawn(
    "redis-server",
    [
      ...["--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      ...["--tls-cert-file", cert.certFile, "--tls-key-file", cert.keyFile, "--tls-ca-cert-file", cert.certFile],
      ...["--tls-auth-clients", "no"],
    ],
    { stdio: "ignore" },
  );
  // Up once a TLS client gets through.
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const c = await connectRedis(spec(`rediss://localhost:${port}`), {
        tls: { ca: cert.cert },
        connectTimeoutMs: 500,
      });
      await closeRedis(c);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
  }
});

afterAll(async () => {
  if (server.exitCode === null) {
    const exited = once(server, "exit");
    server.kill("SIGKILL");
    await exited;
  }
  cert.dispose();
});

describe("tasks.redisTls", () => {
  it("rediss:// with the CA as a file path", async () => {
    const client = await connectRedis(spec(`rediss://localhost:${port}`), { tls: { ca: cert.certFile } });
    try {
      expect(await client.ping()).toBe("PONG");
    } finally {
      await closeRedis(client);
    }
  });

  it("redis:// by address: the settings turn TLS on, servername names the certificate", async () => {
    const client = await connectRedis(spec(`redis://127.0.0.1:${port}`), {
      tls: { ca: cert.cert, servername: "localhost" },
    });
    try {
      expect(await client.ping()).toBe("PONG");
    } finally {
      await closeRedis(client);
    }
  });

  it("a server certificate no CA vouches for fails the start, naming the URL", async () => {
    const failure = await connectRedis(spec(`rediss://localhost:${port}`), { connectTimeoutMs: 1_000 }).then(
      () => new Error("connected without trusting the certificate"),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toContain(`cannot connect to the task store Redis at rediss://localhost:${port}`);
  });

  it("a CA path that cannot be read is named", async () => {
    await expect(
      connectRedis(spec(`rediss://localhost:${port}`), { tls: { ca: "/nonexistent/ca.pem" } }),
    ).rejects.toThrow("tasks.redisTls.ca: cannot read /nonexistent/ca.pem: ENOENT");
  });
});
