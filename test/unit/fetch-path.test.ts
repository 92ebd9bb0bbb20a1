// The web-standard path: createGateway(config).fetch(Request) → Response, in
// front of a small in-process node:http upstream on 127.0.0.1, port 0.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { createGateway, type Gateway } from "../../src/index.js";
import { getDeadUrl } from "../helpers/ports.js";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Gate {
  promise: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const JSON_BODY = Buffer.from(
  JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "héllo ✓ 🚀" }] } }),
  "utf8",
);
const SSE_FIRST = Buffer.from(
  'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n',
);
const SSE_SECOND = Buffer.from('event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"ok":"✓"}}\n\n');

const received: Received[] = [];
/** Opened by a test to let the SSE scenario send its second chunk. */
let sseGate = gate();
/** Resolves when the upstream sees its SSE response closed before it finished. */
let upstreamSseClosed = gate();

function respond(scenario: string, req: IncomingMessage, res: ServerResponse): void {
  switch (scenario) {
    case "json":
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(JSON_BODY.byteLength),
        "mcp-session-id": "sess-123",
        "x-multi": ["first", "second"],
        connection: "keep-alive, x-upstream-hop",
        "x-upstream-hop": "must not pass",
      });
      res.end(JSON_BODY);
      return;
    case "sse":
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "mcp-session-id": "sess-123",
      });
      res.write(SSE_FIRST);
      res.once("close", () => {
        if (!res.writableFinished) upstreamSseClosed.open();
      });
      void sseGate.promise.then(() => {
        if (!res.destroyed) res.end(SSE_SECOND);
      });
      return;
    case "sse-die":
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(SSE_FIRST, () => {
        void sseGate.promise.then(() => res.destroy());
      });
      return;
    case "sse-with-length": {
      const body = Buffer.concat([SSE_FIRST, SSE_SECOND]);
      res.writeHead(200, { "content-type": "text/event-stream", "content-length": String(body.byteLength) });
      res.end(body);
      return;
    }
    case "hang":
      // Never answers: a call still waiting for headers when shutdown's grace runs out.
      return;
    case "unauthorized":
      res.writeHead(401, {
        "www-authenticate": 'Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource"',
        "content-type": "application/json",
      });
      res.end('{"error":"invalid_token"}');
      return;
    case "status": {
      const status = Number(req.headers["x-status"] ?? 200);
      res.writeHead(status, { "x-from-upstream": "yes" });
      res.end();
      return;
    }
    default:
      // OPTIONS probes from /readyz and anything unexpected.
      res.writeHead(req.method === "OPTIONS" ? 204 : 404);
      res.end();
  }
}

let upstream: Server;
let upstreamUrl: string;
let gateway: Gateway;
const extraGateways: Gateway[] = [];

function gatewayFor(url: string, server: Record<string, unknown> = {}): Gateway {
  const g = createGateway({ upstream: { url }, server: { sseKeepAliveMs: 0, ...server }, log: { level: "silent" } });
  extraGateways.push(g);
  return g;
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    res.sendDate = false;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      respond(String(req.headers["x-scenario"] ?? ""), req, res);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  gateway = createGateway({
    upstream: { url: upstreamUrl },
    server: { maxBodyBytes: 1024, sseKeepAliveMs: 0 },
    log: { level: "silent" },
  });
});

afterEach(async () => {
  await Promise.all(extraGateways.splice(0).map((g) => g.shutdown(0)));
  sseGate.open();
  sseGate = gate();
  upstreamSseClosed = gate();
});

afterAll(async () => {
  await gateway.shutdown(0);
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

function mcpRequest(init: RequestInit & { scenario?: string; path?: string } = {}): Request {
  const { scenario, path = "/mcp", headers, ...rest } = init;
  const h = new Headers(headers);
  if (scenario) h.set("x-scenario", scenario);
  return new Request(`http://gateway.test${path}`, { ...rest, headers: h });
}

function headerRecord(headers: Headers): Record<string, string> {
  return Object.fromEntries(headers.entries());
}

interface ErrorBody {
  jsonrpc: string;
  id: string | number | null;
  error: { code: number; message: string; data?: Record<string, unknown> };
}

async function errorBody(res: Response): Promise<ErrorBody> {
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  return (await res.json()) as ErrorBody;
}

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>, start: Buffer[] = []): Promise<Buffer> {
  const parts = [...start];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(parts);
    parts.push(Buffer.from(value));
  }
}

describe("pass-through", () => {
  it("forwards a JSON POST and returns status, filtered headers and body bytes unchanged", async () => {
    const requestBody = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { t: "ü" } },
    });
    /** End-to-end headers: sent by the client, they reach the upstream as they are. */
    const endToEnd = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": "sess-123",
      "mcp-protocol-version": "2025-06-18",
      authorization: "Bearer tok",
      "x-custom": "kept",
    };
    const before = received.length;
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "json",
        path: "/mcp?trace=1",
        method: "POST",
        body: requestBody,
        headers: {
          ...endToEnd,
          connection: "x-client-hop",
          "x-client-hop": "must not pass",
          "keep-alive": "timeout=5",
          te: "trailers",
          upgrade: "h2c",
          "proxy-authorization": "Basic Zm9vOmJhcg==",
          "x-forwarded-proto": "https",
          "x-forwarded-host": "spoofed.example",
        },
      }),
    );

    expect(res.status).toBe(200);
    expect(headerRecord(res.headers)).toEqual({
      "content-type": "application/json",
      "content-length": String(JSON_BODY.byteLength),
      "mcp-session-id": "sess-123",
      "x-multi": "first, second",
    });
    expect(Buffer.from(await res.arrayBuffer()).equals(JSON_BODY)).toBe(true);

    expect(received.length).toBe(before + 1);
    const got = received[received.length - 1] as Received;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/mcp?trace=1");
    expect(got.body.toString("utf8")).toBe(requestBody);
    expect(got.headers).toMatchObject({
      ...endToEnd,
      "x-forwarded-proto": "http",
      "x-forwarded-host": "gateway.test",
      "content-length": String(Buffer.byteLength(requestBody)),
    });
    for (const hop of ["x-client-hop", "te", "upgrade", "proxy-authorization"])
      expect(got.headers).not.toHaveProperty(hop);
    expect(got.headers["keep-alive"]).toBeUndefined();
    expect(got.headers.host).toBe(new URL(upstreamUrl).host);
    expect(gateway.inFlight()).toBe(0);
  });

  it("streams an SSE answer as it arrives: the first event before the upstream sends the second", async () => {
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "sse",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":2,"method":"tools/call"}',
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      }),
    );
    expect(res.status).toBe(200);
    expect(headerRecord(res.headers)).toEqual({
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "mcp-session-id": "sess-123",
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first: Buffer[] = [];
    while (Buffer.concat(first).byteLength < SSE_FIRST.byteLength) {
      const { done, value } = await reader.read();
      expect(done).toBe(false);
      first.push(Buffer.from(value ?? new Uint8Array()));
    }
    // The upstream is still holding its second chunk back.
    expect(Buffer.concat(first).equals(SSE_FIRST)).toBe(true);
    expect(gateway.inFlight()).toBe(1);

    sseGate.open();
    const all = await readAll(reader, first);
    expect(all.equals(Buffer.concat([SSE_FIRST, SSE_SECOND]))).toBe(true);
    expect(gateway.inFlight()).toBe(0);
  });

  it("drops an SSE content-length when keep-alive comments may be added", async () => {
    const g = gatewayFor(upstreamUrl, { sseKeepAliveMs: 60_000 });
    const res = await g.fetch(
      mcpRequest({ scenario: "sse-with-length", method: "GET", headers: { accept: "text/event-stream" } }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBeNull();
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.concat([SSE_FIRST, SSE_SECOND]))).toBe(true);

    const plain = gatewayFor(upstreamUrl, { sseKeepAliveMs: 0 });
    const res2 = await plain.fetch(mcpRequest({ scenario: "sse-with-length", method: "GET" }));
    expect(res2.headers.get("content-length")).toBe(String(SSE_FIRST.byteLength + SSE_SECOND.byteLength));
    await res2.arrayBuffer();
  });

  it("keeps the upstream's 401 and WWW-Authenticate, so OAuth discovery works", async () => {
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "unauthorized",
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(
      'Bearer resource_metadata="https://as.example/.well-known/oauth-protected-resource"',
    );
    expect(await res.text()).toBe('{"error":"invalid_token"}');
  });

  it.each([200, 202, 400, 404, 500, 503])("keeps the upstream status %i", async (status) => {
    const res = await gateway.fetch(
      mcpRequest({ scenario: "status", method: "GET", headers: { "x-status": String(status) } }),
    );
    expect(res.status).toBe(status);
    expect(res.headers.get("x-from-upstream")).toBe("yes");
    expect(await res.text()).toBe("");
  });

  it.each([204, 205, 304])("keeps the body-less upstream status %i", async (status) => {
    const res = await gateway.fetch(
      mcpRequest({ scenario: "status", method: "GET", headers: { "x-status": String(status) } }),
    );
    expect(res.status).toBe(status);
    expect(res.headers.get("x-from-upstream")).toBe("yes");
    expect(res.body).toBeNull();
  });

  it("forwards DELETE with the session id", async () => {
    const before = received.length;
    const res = await gateway.fetch(
      mcpRequest({ scenario: "status", method: "DELETE", headers: { "mcp-session-id": "sess-9", "x-status": "200" } }),
    );
    expect(res.status).toBe(200);
    const got = received[before] as Received;
    expect(got.method).toBe("DELETE");
    expect(got.headers["mcp-session-id"]).toBe("sess-9");
  });

  it("merges the client's query with the upstream URL's own", async () => {
    const g = gatewayFor(`${upstreamUrl}?tenant=a`);
    const before = received.length;
    await (await g.fetch(mcpRequest({ scenario: "status", path: "/mcp?x=1", method: "GET" }))).arrayBuffer();
    await (await g.fetch(mcpRequest({ scenario: "status", path: "/mcp", method: "GET" }))).arrayBuffer();
    expect(received.slice(before).map((r) => r.url)).toEqual(["/mcp?tenant=a&x=1", "/mcp?tenant=a"]);
  });

  it("aborts the upstream request when the client cancels a stream", async () => {
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "sse",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":3,"method":"tools/call"}',
        headers: { "content-type": "application/json" },
      }),
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect(gateway.inFlight()).toBe(1);
    await reader.cancel();
    await upstreamSseClosed.promise;
    expect(gateway.inFlight()).toBe(0);
  });

  it("an upstream that dies mid-stream errors the client's stream instead of ending it cleanly", async () => {
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "sse-die",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":5,"method":"tools/call"}',
        headers: { "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? new Uint8Array()).equals(SSE_FIRST)).toBe(true);
    sseGate.open();
    await expect(readAll(reader)).rejects.toBeDefined();
    expect(gateway.inFlight()).toBe(0);
  });

  it("shutdown ends a long-lived GET stream and reports drained", async () => {
    const g = gatewayFor(upstreamUrl);
    const res = await g.fetch(mcpRequest({ scenario: "sse", method: "GET", headers: { accept: "text/event-stream" } }));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(g.inFlight()).toBe(1);
    await expect(g.shutdown(5_000)).resolves.toEqual({ drained: true });
    expect(g.inFlight()).toBe(0);
    await upstreamSseClosed.promise;
  });

  it("shutdown cuts a call still running after the grace period: the client sees an error, not a clean end", async () => {
    const g = gatewayFor(upstreamUrl);
    const res = await g.fetch(
      mcpRequest({
        scenario: "sse",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":4,"method":"tools/call"}',
        headers: { "content-type": "application/json" },
      }),
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    await expect(g.shutdown(0)).resolves.toEqual({ drained: false });
    await upstreamSseClosed.promise;
    // A clean end would let the client take a truncated call for a finished one
    // (the Node path destroys the response in this case).
    await expect(readAll(reader)).rejects.toBeDefined();
    expect(g.inFlight()).toBe(0);
  });
});

describe("shutdown before the upstream answered", () => {
  it("answers 503 'gateway shutting down' with the request id, not a 502 blaming the upstream", async () => {
    const g = gatewayFor(upstreamUrl);
    const pending = g.fetch(
      mcpRequest({
        scenario: "hang",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":"s-1","method":"tools/call"}',
        headers: { "content-type": "application/json" },
      }),
    );
    while (!received.some((r) => r.body.includes('"s-1"'))) await new Promise((r) => setTimeout(r, 5));
    await expect(g.shutdown(0)).resolves.toEqual({ drained: false });
    const res = await pending;
    expect(res.status).toBe(503);
    const body = await errorBody(res);
    expect(body.id).toBe("s-1");
    expect(body.error.code).toBe(-32603);
    expect(body.error.data).toEqual({ reason: "gateway_shutting_down" });
    expect(g.inFlight()).toBe(0);
  });
});

describe("the gateway's own answers", () => {
  it("malformed JSON → 400 with -32700, and the upstream is not called", async () => {
    const before = received.length;
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "json",
        method: "POST",
        body: '{"jsonrpc":"2.0","id":1,',
        headers: { "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(400);
    const body = await errorBody(res);
    expect(body.jsonrpc).toBe("2.0");
    expect(body.id).toBeNull();
    expect(body.error.code).toBe(-32700);
    expect(received.length).toBe(before);
  });

  it("non-UTF-8 garbage with no content-type → 400 with -32700", async () => {
    const res = await gateway.fetch(mcpRequest({ method: "POST", body: new Uint8Array([0xff, 0xfe, 0x00, 0x80]) }));
    expect(res.status).toBe(400);
    expect((await errorBody(res)).error.code).toBe(-32700);
  });

  it("a body over the limit → 413, and the upstream is not called", async () => {
    const before = received.length;
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { pad: "x".repeat(2048) } });
    const res = await gateway.fetch(
      mcpRequest({ scenario: "json", method: "POST", body: big, headers: { "content-type": "application/json" } }),
    );
    expect(res.status).toBe(413);
    const body = await errorBody(res);
    expect(body.error.data).toMatchObject({ reason: "body_too_large", limit: 1024 });
    expect(body.error.message).toContain("1024");
    expect(received.length).toBe(before);
  });

  it("a streamed body over the limit → 413", async () => {
    const chunk = new Uint8Array(600).fill(0x20);
    let pulls = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls += 1;
        controller.enqueue(chunk);
        if (pulls > 100) controller.close();
      },
    });
    const res = await gateway.fetch(
      new Request("http://gateway.test/mcp", { method: "POST", body: stream, duplex: "half" }),
    );
    expect(res.status).toBe(413);
    expect(pulls).toBeLessThan(100);
  });

  it("a body exactly at the limit is forwarded", async () => {
    const base = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "m", params: { pad: "" } });
    const exact = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "m",
      params: { pad: "y".repeat(1024 - base.length) },
    });
    expect(Buffer.byteLength(exact)).toBe(1024);
    const res = await gateway.fetch(
      mcpRequest({ scenario: "json", method: "POST", body: exact, headers: { "content-type": "application/json" } }),
    );
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  it("upstream down → 502 carrying the request id and naming the upstream, without credentials", async () => {
    const dead = await getDeadUrl("/mcp");
    const port = new URL(dead).port;
    const g = gatewayFor(`http://admin:hunter2@127.0.0.1:${port}/mcp/path-SECRET?token=tok-SECRET`);
    const res = await g.fetch(
      mcpRequest({
        method: "POST",
        body: '{"jsonrpc":"2.0","id":"req-42","method":"tools/call"}',
        headers: { "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(502);
    const text = await res.clone().text();
    const body = await errorBody(res);
    expect(body.id).toBe("req-42");
    expect(body.error.code).toBe(-32603);
    // Named as the client knows it: never by its URL, which shows the topology and may carry secrets.
    expect(body.error.message).toContain("Upstream MCP server default");
    expect(text).not.toContain(`127.0.0.1:${port}`);
    expect(body.error.data).toMatchObject({ reason: "upstream_unreachable", cause: "ECONNREFUSED" });
    for (const secret of ["admin", "hunter2", "tok-SECRET", "path-SECRET"]) expect(text).not.toContain(secret);
    expect(g.inFlight()).toBe(0);

    const numeric = await g.fetch(
      mcpRequest({
        method: "POST",
        body: '{"jsonrpc":"2.0","id":7,"method":"ping"}',
        headers: { "content-type": "application/json" },
      }),
    );
    expect((await errorBody(numeric)).id).toBe(7);
    const get = await g.fetch(mcpRequest({ method: "GET" }));
    expect(get.status).toBe(502);
    expect((await errorBody(get)).id).toBeNull();
  });

  it("GET /healthz → 200 whether or not the upstream is up", async () => {
    const res = await gateway.fetch(new Request("http://gateway.test/healthz"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    const down = gatewayFor(await getDeadUrl());
    expect((await down.fetch(new Request("http://gateway.test/healthz"))).status).toBe(200);
  });

  it("GET /readyz → 200 when the upstream answers, 503 when it is down", async () => {
    const up = await gateway.fetch(new Request("http://gateway.test/readyz"));
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ status: "ready", upstreams: [{ name: "default", status: "ready" }] });
    const down = gatewayFor(await getDeadUrl());
    const res = await down.fetch(new Request("http://gateway.test/readyz"));
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      status: "unavailable",
      upstreams: [{ name: "default", status: "unavailable" }],
    });
  });

  it("a disallowed Origin → 403, and the upstream is not called; a loopback Origin passes", async () => {
    const before = received.length;
    const res = await gateway.fetch(
      mcpRequest({
        scenario: "json",
        method: "POST",
        body: "{}",
        headers: { origin: "http://localhost.evil.com", "content-type": "application/json" },
      }),
    );
    expect(res.status).toBe(403);
    const body = await errorBody(res);
    expect(body.error.data).toMatchObject({ reason: "origin_not_allowed" });
    expect(body.error.message).toContain("http://localhost.evil.com");
    expect(received.length).toBe(before);

    const ok = await gateway.fetch(
      mcpRequest({
        scenario: "json",
        method: "POST",
        body: "{}",
        headers: { origin: "http://localhost:6274", "content-type": "application/json" },
      }),
    );
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    expect(received[received.length - 1]?.headers.origin).toBe("http://localhost:6274");
  });

  it.each(["PUT", "PATCH"])("%s → 405 with Allow, and the upstream is not called", async (method) => {
    const before = received.length;
    const res = await gateway.fetch(mcpRequest({ method, body: "{}" }));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST, DELETE, OPTIONS");
    expect((await errorBody(res)).error.data).toEqual({
      reason: "method_not_allowed",
      allow: "GET, POST, DELETE, OPTIONS",
    });
    expect(received.length).toBe(before);
  });

  it("paths other than the MCP endpoint are not proxied", async () => {
    const before = received.length;
    const res = await gateway.fetch(new Request("http://gateway.test/other", { method: "POST", body: "{}" }));
    expect(res.status).toBe(404);
    expect(received.length).toBe(before);
  });
});
