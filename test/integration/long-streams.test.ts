// Long-lived event streams are normal MCP traffic (legacy GET streams, listens,
// running tasks). Each holds an upstream connection, so they must not be able to
// starve ordinary requests: with more open streams than the old pool size (128),
// a plain POST still gets its answer. A scripted upstream holds the streams open,
// which a real peer cannot be told to do on demand.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";

const STREAMS = 160;

let upstream: Server;
let gw: TestGateway;
const held: ServerResponse[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(": open\n\n");
      held.push(res);
      return;
    }
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const { id } = JSON.parse(body) as { id: number };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true } }));
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  gw = await startTestGateway(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await gw?.close(0);
  for (const r of held) r.destroy();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

describe("many open event streams", () => {
  it(`${STREAMS} held GET streams do not stop a POST from being answered`, async () => {
    const controllers = Array.from({ length: STREAMS }, () => new AbortController());
    const opened = await Promise.all(
      controllers.map((c) => fetch(gw.url, { headers: { accept: "text/event-stream" }, signal: c.signal })),
    );
    expect(opened.every((r) => r.status === 200)).toBe(true);
    while (held.length < STREAMS) await new Promise((r) => setTimeout(r, 10));

    const res = await fetch(gw.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 7, result: { ok: true } });
    for (const c of controllers) c.abort();
  });
});
