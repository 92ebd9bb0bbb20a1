// The internal listener (src/replicas/internal-listener.ts): only requests with a valid replica credential for
// that very request (method, path, body), on the gateway's clock and used once, reach the app, and those arrive
// with the sender's verdict; anything else is refused with 403.
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "undici";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { FORWARDED_HEADER, forwardingKey, forwardToken } from "../../src/replicas/forward-token.js";
import { internalListener, internalListeners } from "../../src/replicas/internal-listener.js";
import { Exchange } from "../../src/server/exchange.js";

const T0 = 1_767_225_600_000;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An app that says whether the request reached it marked as forwarded. */
function reportingApp(): Hono {
  const app = new Hono();
  app.post("/mcp", (c) => c.json({ forwarded: Exchange.of(c).forwarded ?? false }));
  return app;
}

async function listening(key: Buffer, now: () => number): Promise<string> {
  const server = internalListener(reportingApp(), key, now, 1024);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

const BODY = "{}";
const REQ = { method: "POST", path: "/mcp", body: Buffer.from(BODY) };

const post = (url: string, token?: string, body = BODY): Promise<Response> =>
  fetch(url, { method: "POST", body, headers: token === undefined ? {} : { [FORWARDED_HEADER]: token } });

describe("internalListener", () => {
  const key = forwardingKey(randomBytes(32));

  it("lets a request with a valid credential through once, with the sender's verdict", async () => {
    const url = await listening(key, () => T0);
    const token = forwardToken(key, "replica-a", REQ, true, T0);
    const res = await post(url, token);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ forwarded: { replica: "replica-a", limitsDecided: true } });
    // The same credential again (a replay), or on another body: refused.
    expect((await post(url, token)).status).toBe(403);
    expect((await post(url, forwardToken(key, "replica-a", REQ, true, T0), '{"x":1}')).status).toBe(403);
  });

  it("refuses a request without one, with another key's, or one stale on the gateway's clock", async () => {
    let t = T0;
    const url = await listening(key, () => t);
    const token = forwardToken(key, "replica-a", REQ, false, T0);
    for (const res of [
      await post(url),
      await post(url, forwardToken(forwardingKey(randomBytes(32)), "replica-a", REQ, false, T0)),
      await post(url, "x".repeat(100)),
    ]) {
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: { data: { reason: "not_a_replica" } } });
    }
    t = T0 + 10 * 60_000;
    expect((await post(url, token)).status).toBe(403);
  });
});

describe("internalListeners (TCP and a Unix socket)", () => {
  const key = forwardingKey(randomBytes(32));

  it("checks the credential on both, and a credential used on one is refused on the other", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mtg-internal-"));
    const { tcp, local } = internalListeners(reportingApp(), key, () => T0, 1024, undefined, true);
    if (!local) throw new Error("no Unix socket server");
    const path = join(dir, "r.sock");
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
    await new Promise<void>((resolve) => local.listen(path, resolve));
    const pool = new Pool("http://localhost", { socketPath: path });
    closers.push(async () => {
      await pool.close();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      await new Promise<void>((resolve) => local.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    });
    const viaSocket = async (token?: string) => {
      const headers = token === undefined ? {} : { [FORWARDED_HEADER]: token };
      const res = await pool.request({ method: "POST", path: "/mcp", headers, body: BODY });
      return { status: res.statusCode, body: await res.body.json() };
    };
    expect((await viaSocket()).status).toBe(403);
    const token = forwardToken(key, "replica-a", REQ, false, T0);
    expect(await viaSocket(token)).toEqual({
      status: 200,
      body: { forwarded: { replica: "replica-a", limitsDecided: false } },
    });
    // Replayed over TCP: the two servers share one memory of nonces.
    expect((await post(`http://127.0.0.1:${(tcp.address() as AddressInfo).port}/mcp`, token)).status).toBe(403);
    const other = forwardToken(key, "replica-a", REQ, false, T0);
    expect((await post(`http://127.0.0.1:${(tcp.address() as AddressInfo).port}/mcp`, other)).status).toBe(200);
    expect((await viaSocket(other)).status).toBe(403);
  });
});
