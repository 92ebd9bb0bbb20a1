// A legacy upstream that answers with JSON sends its response headers only when
// the call ends. Cancelling a task (tasks/cancel) while such a call runs must
// still reach the upstream at once, as notifications/cancelled carrying the
// upstream's own request id, and the gateway must stop waiting for the answer.
// A scripted upstream: no real peer can be told to answer JSON and hold the call.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";

interface Rpc {
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
}

let upstream: Server;
let gw: TestGateway;
const seen: Rpc[] = [];
const heldCalls: Array<{ id: string | number; res: ServerResponse }> = [];
let callClosedEarly = false;

function readJson(req: IncomingMessage): Promise<Rpc> {
  return new Promise((resolve) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => resolve(JSON.parse(body) as Rpc));
  });
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    void readJson(req).then((m) => {
      seen.push(m);
      if (m.method === "initialize") {
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s-1" });
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: m.id,
            result: {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "json-upstream", version: "1" },
            },
          }),
        );
      } else if (m.method === "tools/call" && m.id !== undefined) {
        // Held: a JSON answer would come only at the end of a long call.
        heldCalls.push({ id: m.id, res });
        res.once("close", () => {
          if (!res.writableFinished) callClosedEarly = true;
        });
      } else {
        res.writeHead(202).end();
      }
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  gw = await startTestGateway(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`, {
    tasks: { rules: [{ tool: "long", mode: "always" }] },
  });
});

afterAll(async () => {
  await gw?.close(0);
  for (const c of heldCalls) c.res.destroy();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

async function rpc(
  method: string,
  params: Record<string, unknown>,
  name?: string,
): Promise<{ result?: Record<string, unknown> }> {
  const res = await fetch(gw.url, {
    method: "POST",
    headers: modernHeaders(method, name),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: modernMeta({ capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } }),
      },
    }),
  });
  return (await res.json()) as { result?: Record<string, unknown> };
}

describe("tasks/cancel before the upstream's response headers", () => {
  it("reaches the upstream at once with its request id, and the gateway stops waiting", async () => {
    const created = await rpc("tools/call", { name: "long", arguments: {} }, "long");
    const taskId = created.result?.taskId as string;
    expect(created.result?.resultType).toBe("task");
    while (heldCalls.length === 0) await new Promise((r) => setTimeout(r, 5));
    const upstreamId = heldCalls[0]?.id;

    expect((await rpc("tasks/cancel", { taskId }, taskId)).result).toEqual({ resultType: "complete" });
    while (!seen.some((m) => m.method === "notifications/cancelled")) await new Promise((r) => setTimeout(r, 5));
    const cancel = seen.find((m) => m.method === "notifications/cancelled");
    expect(cancel?.params?.requestId).toBe(upstreamId);
    while (!callClosedEarly) await new Promise((r) => setTimeout(r, 5));
    expect((await rpc("tasks/get", { taskId }, taskId)).result?.status).toBe("cancelled");
    expect((await gw.stats()).tasks.unfinished).toBe(0);
  });
});
