// One error vocabulary (src/protocol/errors.ts): the same upstream failure looks
// the same on every path (pass-through, the era bridge, tasks), a store that
// fails is a JSON-RPC error rather than a crash, and anything unexpected is a
// JSON-RPC -32603 with status 500, never a plain-text page.
//
// The upstream here is scripted: a hung upstream is a fault no real MCP peer produces.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGateway, startGateway } from "../../src/index.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { INIT_REQUEST, MCP_ACCEPT } from "../helpers/http.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { startScriptedUpstream, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";

const TASKS = { extensions: { "io.modelcontextprotocol/tasks": {} } };

/** A legacy upstream that opens sessions normally and never answers tools/call (no headers, ever). */
function hangsOnCalls(req: IncomingMessage, res: ServerResponse, body: string): void {
  const message = JSON.parse(body || "null") as { id?: unknown; method?: string } | null;
  if (message?.method === "initialize") {
    res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s-1" });
    res.end(
      JSON.stringify({
        jsonrpc: "2.0",
        id: message.id,
        result: {
          protocolVersion: INIT_REQUEST.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "hung", version: "1" },
        },
      }),
    );
    return;
  }
  if (message?.method === "tools/call") return; // hangs
  if (req.method === "POST" && message?.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  // Everything else (the era probe's server/discover): not found, so the upstream is legacy.
  res.writeHead(404, { "content-type": "application/json" });
  res.end(
    JSON.stringify({ jsonrpc: "2.0", id: message?.id ?? null, error: { code: -32601, message: "Method not found" } }),
  );
}

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: { error?: { code: number; data?: { reason?: string } } } }> {
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { error?: { code: number; data?: { reason?: string } } } };
}

describe("a hung upstream", () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startScriptedUpstream((req, res, recorded) => hangsOnCalls(req, res, recorded.body));
    gw = await startGateway({
      upstream: { url: upstream.url, headersTimeoutMs: 200, era: "legacy" },
      // No keep-alive: the bridged answer stays JSON, so its HTTP status can still say what happened.
      server: { host: "127.0.0.1", port: 0, sseKeepAliveMs: 0 },
      tasks: { thresholdMs: 60_000 },
      log: { level: "silent" },
    });
  });
  afterAll(async () => {
    await gw.close(0);
    await upstream.close();
  });

  it("gives 504 upstream_timeout on pass-through, on the era bridge and for a task-eligible call alike", async () => {
    const legacy = await post(
      gw.url,
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "slow" } },
      {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        "mcp-session-id": "s-1",
        "mcp-protocol-version": "2025-11-25",
      },
    );
    const bridged = await post(
      gw.url,
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "slow", arguments: {}, _meta: modernMeta() } },
      modernHeaders("tools/call", "slow"),
    );
    const taskEligible = await post(
      gw.url,
      {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "slow", arguments: {}, _meta: modernMeta({ capabilities: TASKS }) },
      },
      modernHeaders("tools/call", "slow"),
    );
    for (const answer of [legacy, bridged, taskEligible]) {
      expect(answer.status).toBe(504);
      expect(answer.body.error?.code).toBe(-32603);
      expect(answer.body.error?.data?.reason).toBe("upstream_timeout");
    }
  });
});

/** A memory store whose reads and writes fail, as a shared store that went away would. */
function failingStore(): TaskStore {
  const inner = new MemoryTaskStore(1 << 20, Date.now);
  const down = (): Promise<never> => Promise.reject(new Error("connection refused"));
  return {
    create: down,
    get: down,
    update: down,
    onEvict: (listener) => inner.onEvict(listener),
    stats: () => inner.stats(),
    ping: down,
    close: () => inner.close(),
  };
}

describe("a task store that fails", () => {
  it("tasks/get answers a JSON-RPC store_unavailable error (503), not a crash", async () => {
    const gateway = createGateway(
      { upstream: { url: "http://127.0.0.1:9/mcp", era: "legacy" }, log: { level: "silent" } },
      { store: failingStore() },
    );
    try {
      const res = await gateway.fetch(
        new Request("http://gw/mcp", {
          method: "POST",
          headers: modernHeaders("tasks/get", "some-task"),
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 7,
            method: "tasks/get",
            params: { taskId: "some-task", _meta: modernMeta({ capabilities: TASKS }) },
          }),
        }),
      );
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toBe("application/json");
      const body = (await res.json()) as {
        id: unknown;
        error: { code: number; message: string; data: { reason: string } };
      };
      expect(body.id).toBe(7);
      expect(body.error.code).toBe(-32603);
      expect(body.error.data.reason).toBe("store_unavailable");
      expect(body.error.message).toMatch(/task store is unavailable/);
      // The store's own error text (addresses, internals) stays in the log.
      expect(body.error.message).not.toContain("connection refused");
      expect(res.headers.get("retry-after")).toBe("1");
    } finally {
      await gateway.shutdown(0);
    }
  });

  it("a call that may only run as a task is refused with store_unavailable and never reaches the upstream", async () => {
    const upstream = await startScriptedUpstream((req, res, recorded) => hangsOnCalls(req, res, recorded.body));
    const gateway = createGateway(
      {
        upstream: { url: upstream.url, era: "legacy" },
        tasks: { rules: [{ tool: "*", mode: "always" }] },
        log: { level: "silent" },
      },
      { store: failingStore() },
    );
    try {
      const res = await gateway.fetch(
        new Request("http://gw/mcp", {
          method: "POST",
          headers: modernHeaders("tools/call", "slow"),
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 8,
            method: "tools/call",
            params: { name: "slow", arguments: {}, _meta: modernMeta({ capabilities: TASKS }) },
          }),
        }),
      );
      const body = (await res.json()) as { error: { code: number; data: { reason: string } } };
      expect(res.status).toBe(503);
      expect(body.error).toMatchObject({ code: -32603, data: { reason: "store_unavailable" } });
      const calls = upstream.requests.filter((r) => r.body.includes('"tools/call"'));
      expect(calls).toHaveLength(0);
    } finally {
      await gateway.shutdown(0);
      await upstream.close();
    }
  });
});

describe("anything unexpected", () => {
  it("is a JSON-RPC -32603 with HTTP 500 and no internals in the answer", async () => {
    const gateway = createGateway({ upstream: { url: "http://127.0.0.1:9/mcp" }, log: { level: "silent" } });
    try {
      // A route added for the test throws, as a bug anywhere in a handler would.
      gateway.app.get("/boom", () => {
        throw new Error("secret internal detail");
      });
      const res = await gateway.fetch(new Request("http://gw/boom"));
      expect(res.status).toBe(500);
      expect(res.headers.get("content-type")).toBe("application/json");
      const body = (await res.json()) as {
        jsonrpc: string;
        id: unknown;
        error: { code: number; message: string; data: { reason: string } };
      };
      expect(body).toMatchObject({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32603, data: { reason: "internal_error" } },
      });
      expect(JSON.stringify(body)).not.toContain("secret internal detail");
    } finally {
      await gateway.shutdown(0);
    }
  });
});
