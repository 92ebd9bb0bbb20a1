// Raw HTTP checks of what the gateway forwards, drops and keeps. A scripted
// node:http upstream records headers exactly as they arrive; the 404 for an
// unknown session comes from the real SDK fixture.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { gatewayInFrontOf, startTestGateway } from "../helpers/gateway.js";
import { INIT_REQUEST, MCP_ACCEPT, rawRequest } from "../helpers/http.js";
import { getDeadUrl } from "../helpers/ports.js";
import {
  jsonRpcOk,
  openSse,
  sseEvent,
  startScriptedUpstream,
  type ScriptedUpstream,
} from "../helpers/scripted-upstream.js";

const { upstream, gateway: gw } = gatewayInFrontOf(() => startScriptedUpstream(jsonRpcOk), { beforeAll, afterAll });

function lastRequest(): NonNullable<ScriptedUpstream["requests"][number]> {
  const r = upstream().requests.at(-1);
  if (!r) throw new Error("the upstream received no request");
  return r;
}

describe("end-to-end headers pass both ways", () => {
  it("Mcp-Session-Id from the upstream reaches the client, and the client's session, protocol version, Authorization, Accept and Content-Type reach the upstream", async () => {
    upstream().setHandler((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "sess-7f3a" });
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          result: { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "s", version: "1" } },
        }),
      );
    });
    const init = await fetch(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify(INIT_REQUEST),
    });
    expect(init.status).toBe(200);
    expect(init.headers.get("mcp-session-id")).toBe("sess-7f3a");
    expect(init.headers.get("content-type")).toBe("application/json");
    expect(await init.json()).toMatchObject({ id: 1, result: { serverInfo: { name: "s" } } });

    upstream().setHandler(jsonRpcOk);
    const body = JSON.stringify({ jsonrpc: "2.0", id: "call-1", method: "tools/list", params: {} });
    const res = await fetch(gw().url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        "mcp-session-id": "sess-7f3a",
        "MCP-Protocol-Version": "2025-11-25",
        authorization: "Bearer s3cr3t-token",
      },
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: "call-1", result: { ok: true } });
    const seen = lastRequest();
    expect(seen.method).toBe("POST");
    expect(seen.url).toBe("/mcp");
    expect(seen.body).toBe(body);
    expect(seen.headers["mcp-session-id"]).toBe("sess-7f3a");
    expect(seen.headers["mcp-protocol-version"]).toBe("2025-11-25");
    expect(seen.headers.authorization).toBe("Bearer s3cr3t-token");
    expect(seen.headers.accept).toBe(MCP_ACCEPT);
    expect(seen.headers["content-type"]).toBe("application/json");
  });

  it("Last-Event-ID and the session travel on a GET; the event stream comes back", async () => {
    const event = sseEvent(
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "resumed" } },
      "evt-42",
    );
    upstream().setHandler((_req, res) => {
      openSse(res);
      res.end(event);
    });
    const res = await fetch(gw().url, {
      method: "GET",
      headers: {
        accept: "text/event-stream",
        "mcp-session-id": "sess-7f3a",
        "mcp-protocol-version": "2025-11-25",
        "last-event-id": "evt-41",
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(await res.text()).toBe(event);
    const seen = lastRequest();
    expect(seen.method).toBe("GET");
    expect(seen.headers["last-event-id"]).toBe("evt-41");
    expect(seen.headers["mcp-session-id"]).toBe("sess-7f3a");
    expect(seen.headers.accept).toBe("text/event-stream");
  });

  it("DELETE is forwarded with the session id and the upstream's status comes back", async () => {
    upstream().setHandler((_req, res) => {
      res.writeHead(405, { allow: "GET, POST" });
      res.end();
    });
    const res = await fetch(gw().url, { method: "DELETE", headers: { "mcp-session-id": "sess-7f3a" } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    const seen = lastRequest();
    expect(seen.method).toBe("DELETE");
    expect(seen.headers["mcp-session-id"]).toBe("sess-7f3a");
  });
});

describe("hop-by-hop headers are not forwarded", () => {
  it("drops Connection, the headers it names, Keep-Alive, TE, Proxy-Authorization and Upgrade on the way up", async () => {
    upstream().setHandler(jsonRpcOk);
    const res = await rawRequest(gw().url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: MCP_ACCEPT,
        connection: "x-custom",
        "x-custom": "connection-scoped",
        "keep-alive": "timeout=5, max=100",
        te: "trailers",
        "proxy-authorization": "Basic cHJveHk6c2VjcmV0",
        upgrade: "h2c",
        "x-end-to-end": "kept",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" }),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString("utf8"))).toEqual({ jsonrpc: "2.0", id: 5, result: { ok: true } });
    const seen = lastRequest();
    expect(seen.headers["x-end-to-end"]).toBe("kept");
    for (const name of ["x-custom", "keep-alive", "te", "proxy-authorization", "upgrade"]) {
      expect(seen.headerNames, `${name} must not reach the upstream`).not.toContain(name);
    }
    expect(String(seen.headers.connection ?? "")).not.toMatch(/x-custom/i);
  });

  it("drops the upstream's Connection-named headers and Proxy-Authenticate on the way down", async () => {
    upstream().setHandler((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.setHeader("connection", "x-upstream-hop");
      res.setHeader("x-upstream-hop", "connection-scoped");
      res.setHeader("proxy-authenticate", 'Basic realm="upstream-proxy"');
      res.setHeader("x-upstream-e2e", "kept");
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 6, result: {} }));
    });
    const res = await rawRequest(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 6, method: "ping" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-upstream-e2e"]).toBe("kept");
    expect(res.headers["x-upstream-hop"]).toBeUndefined();
    expect(res.headers["proxy-authenticate"]).toBeUndefined();
    expect(String(res.headers.connection ?? "")).not.toMatch(/x-upstream-hop/i);
  });
});

describe("upstream status codes pass through unchanged", () => {
  it("a 401 with WWW-Authenticate challenges reaches the client exactly as the upstream sent it", async () => {
    const challenge =
      'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", error="invalid_token"';
    const body = JSON.stringify({ error: "invalid_token", error_description: "The access token expired" });
    upstream().setHandler((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.setHeader("www-authenticate", [challenge, 'Basic realm="mcp"']);
      res.writeHead(401);
      res.end(body);
    });
    const request = (url: string): Promise<Response> =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT, authorization: "Bearer expired" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
      });
    const direct = await request(upstream().url);
    const via = await request(gw().url);
    const summary = async (r: Response): Promise<unknown> => ({
      status: r.status,
      wwwAuthenticate: r.headers.get("www-authenticate"),
      contentType: r.headers.get("content-type"),
      body: await r.text(),
    });
    const directSummary = await summary(direct);
    expect(directSummary).toEqual({
      status: 401,
      wwwAuthenticate: `${challenge}, Basic realm="mcp"`,
      contentType: "application/json",
      body,
    });
    expect(await summary(via)).toEqual(directSummary);
    expect(lastRequest().headers.authorization).toBe("Bearer expired");
  });

  it("202 Accepted with an empty body (a notification) passes through", async () => {
    upstream().setHandler((_req, res) => {
      res.writeHead(202);
      res.end();
    });
    const res = await fetch(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT, "mcp-session-id": "sess-7f3a" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  describe("against the real SDK fixture", () => {
    const { upstream: sdk, gateway: sdkGw } = gatewayInFrontOf(() => startSdkUpstream({ host: "127.0.0.1", port: 0 }), {
      beforeAll,
      afterAll,
    });

    it("404 for an unknown session is passed through exactly as directly", async () => {
      const request = (url: string, method: string): Promise<Response> =>
        fetch(url, {
          method,
          headers: {
            "content-type": "application/json",
            accept: method === "GET" ? "text/event-stream" : MCP_ACCEPT,
            "mcp-session-id": "00000000-0000-4000-8000-000000000000",
            "mcp-protocol-version": "2025-11-25",
          },
          ...(method === "POST" ? { body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }) } : {}),
        });
      for (const method of ["POST", "GET", "DELETE"]) {
        const direct = await request(sdk().url, method);
        const via = await request(sdkGw().url, method);
        const d = { status: direct.status, contentType: direct.headers.get("content-type"), body: await direct.text() };
        const v = { status: via.status, contentType: via.headers.get("content-type"), body: await via.text() };
        expect(d.status, method).toBe(404);
        expect(JSON.parse(d.body)).toMatchObject({ error: { code: -32001 } });
        expect(v, method).toEqual(d);
      }
    });

    it("a real initialize through the gateway returns the upstream's session id and protocol version", async () => {
      const res = await fetch(sdkGw().url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: MCP_ACCEPT },
        body: JSON.stringify(INIT_REQUEST),
      });
      expect(res.status).toBe(200);
      const sessionId = res.headers.get("mcp-session-id");
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
      const text = await res.text();
      expect(text).toContain('"protocolVersion":"2025-11-25"');
      // The session the gateway relayed is the upstream's own: it works directly too.
      const direct = await fetch(sdk().url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: MCP_ACCEPT,
          "mcp-session-id": sessionId ?? "",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      });
      expect(direct.status).toBe(202);
    });
  });
});

describe("streaming: bytes reach the client as the upstream sends them", () => {
  /** A gate the upstream waits on, opened by the test once the client has seen the first part. */
  function gate(): { wait: Promise<void>; open: () => void } {
    let open = (): void => {};
    const wait = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { wait, open };
  }

  type Reader = ReadableStreamDefaultReader<Uint8Array>;

  async function firstChunkOrFail(reader: Reader): Promise<string> {
    // If the gateway buffered, nothing would arrive before the upstream finished, and
    // the upstream only finishes after this read: the race would go to the timeout.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("the first part never arrived while the upstream held the rest back")),
        5_000,
      );
    });
    try {
      const first = await Promise.race([reader.read(), stuck]);
      return new TextDecoder().decode(first.value);
    } finally {
      clearTimeout(timer);
    }
  }

  async function rest(reader: Reader): Promise<string> {
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  }

  it("an SSE event is delivered before the upstream sends the rest of the stream", async () => {
    const g = gate();
    const first = sseEvent({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 1, progress: 1 },
    });
    const last = sseEvent({ jsonrpc: "2.0", id: 20, result: {} });
    upstream().setHandler(async (_req, res) => {
      openSse(res);
      res.write(first);
      await g.wait;
      res.end(last);
    });
    const res = await fetch(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 20, method: "tools/call", params: { name: "x" } }),
    });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    if (!reader) throw new Error("no body");
    expect(await firstChunkOrFail(reader)).toBe(first);
    g.open();
    expect(await rest(reader)).toBe(last);
  });

  it("an event stream's headers reach the client while the upstream has sent no event yet", async () => {
    const g = gate();
    const last = sseEvent({ jsonrpc: "2.0", id: 22, result: {} });
    upstream().setHandler(async (_req, res) => {
      openSse(res);
      await g.wait;
      res.end(last);
    });
    // fetch resolves with the headers: it must not wait for the first event, which comes only after this.
    const res = await fetch(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 22, method: "tools/call", params: { name: "x" } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body?.getReader();
    if (!reader) throw new Error("no body");
    g.open();
    expect(await rest(reader)).toBe(last);
  });

  it("a JSON body is streamed too: its first bytes arrive before the upstream finishes it", async () => {
    const g = gate();
    upstream().setHandler(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"jsonrpc":"2.0","id":21,');
      await g.wait;
      res.end('"result":{}}');
    });
    const res = await fetch(gw().url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: MCP_ACCEPT },
      body: JSON.stringify({ jsonrpc: "2.0", id: 21, method: "ping" }),
    });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    if (!reader) throw new Error("no body");
    expect(await firstChunkOrFail(reader)).toBe('{"jsonrpc":"2.0","id":21,');
    g.open();
    expect(await rest(reader)).toBe('"result":{}}');
  });
});

describe("health endpoints", () => {
  it("GET /healthz answers 200 and /readyz answers 200 while the upstream is reachable", async () => {
    const before = upstream().requests.filter((r) => r.url === "/healthz" || r.url === "/readyz").length;
    const health = await fetch(`${gw().origin}/healthz`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    const ready = await fetch(`${gw().origin}/readyz`);
    expect(ready.status).toBe(200);
    await ready.arrayBuffer();
    // Health lives off the MCP path and is never forwarded as such.
    expect(upstream().requests.filter((r) => r.url === "/healthz" || r.url === "/readyz").length).toBe(before);
  });

  it("GET /readyz answers 503 when the upstream is unreachable, while /healthz still answers 200", async () => {
    const dead = await startTestGateway(await getDeadUrl());
    try {
      const ready = await fetch(`${dead.origin}/readyz`);
      expect(ready.status).toBe(503);
      await ready.arrayBuffer();
      const health = await fetch(`${dead.origin}/healthz`);
      expect(health.status).toBe(200);
      await health.arrayBuffer();
    } finally {
      await dead.close();
    }
  });
});
