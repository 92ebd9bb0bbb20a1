// OAuth starts from a 401 and its WWW-Authenticate challenge. On the era bridge
// (a 2026-07-28 client over a legacy upstream) the gateway opens the upstream
// session itself, so it must relay that 401 and challenge to the client rather
// than fold them into an in-band error. A scripted upstream stands in for an
// OAuth-protected legacy server.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";

const CHALLENGE = 'Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource"';

let upstream: Server;
let gw: TestGateway;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      if (req.headers.authorization !== "Bearer good") {
        res.writeHead(401, { "www-authenticate": CHALLENGE, "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Unauthorized" } }));
        return;
      }
      if (req.method !== "POST" || body === "") {
        // Session DELETE at shutdown, probes: nothing to answer but the status.
        res.writeHead(req.method === "DELETE" ? 200 : 405).end();
        return;
      }
      const m = JSON.parse(body) as { id?: number | string; method: string };
      if (m.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s-auth" });
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: m.id,
            result: {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "oauth-upstream", version: "1" },
            },
          }),
        );
      } else if (m.method === "tools/list") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { tools: [] } }));
      } else {
        res.writeHead(202).end();
      }
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  gw = await startTestGateway(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await gw?.close(0);
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

function listTools(authorization?: string): Promise<Response> {
  return fetch(gw.url, {
    method: "POST",
    headers: { ...modernHeaders("tools/list"), ...(authorization !== undefined && { authorization }) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: modernMeta() } }),
  });
}

describe("an OAuth-protected legacy upstream behind the era bridge", () => {
  it("a modern request without a valid token gets the upstream's 401 and its WWW-Authenticate challenge", async () => {
    const res = await listTools();
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(CHALLENGE);
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 3, error: { code: -32001 } });
  });

  it("with the token, the same request is served", async () => {
    const res = await listTools("Bearer good");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 3, result: { resultType: "complete", tools: [] } });
  });
});
