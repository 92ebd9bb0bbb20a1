// Faults a real MCP peer cannot produce on demand, scripted with a node:http
// upstream: the gateway must answer with the documented status and JSON-RPC
// error, pass broken streams through as they are, and keep serving everyone else.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { gatewayInFrontOf, startTestGateway, type TestGateway } from "../helpers/gateway.js";
import { delay, MCP_ACCEPT, rawRequest } from "../helpers/http.js";
import { getDeadUrl } from "../helpers/ports.js";
import {
  jsonRpcOk,
  openSse,
  sseEvent,
  startScriptedUpstream,
  type RecordedRequest,
  type ScriptedHandler,
  type ScriptedUpstream,
} from "../helpers/scripted-upstream.js";
import { sseMessages } from "../helpers/compare.js";

const JSON_HEADERS = { "content-type": "application/json", accept: MCP_ACCEPT } as const;

function post(url: string, message: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(message), ...init });
}

/** A normal request through the gateway must still work after a fault. */
async function expectStillServing(gw: TestGateway, upstream: ScriptedUpstream): Promise<void> {
  upstream.setHandler(jsonRpcOk);
  const res = await post(gw.url, { jsonrpc: "2.0", id: "after-fault", method: "ping" });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ jsonrpc: "2.0", id: "after-fault", result: { ok: true } });
  const health = await fetch(`${gw.origin}/healthz`);
  expect(health.status).toBe(200);
  await health.arrayBuffer();
}

/** Waits (bounded) for the upstream to see its response closed; never a timing assertion. */
async function closedWithin(recorded: RecordedRequest, ms = 5_000): Promise<{ aborted: boolean } | "still open"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"still open">((resolve) => {
    timer = setTimeout(() => resolve("still open"), ms);
  });
  try {
    return await Promise.race([recorded.closed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function readAll(res: Response): Promise<{ text: string; outcome: "ended" | "errored" }> {
  const reader = res.body?.getReader();
  if (!reader) return { text: "", outcome: "ended" };
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, outcome: "ended" };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, outcome: "errored" };
  }
}

async function waitForRequests(upstream: ScriptedUpstream, count: number, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (upstream.requests.length < count) {
    if (Date.now() > deadline) throw new Error(`upstream saw ${upstream.requests.length} of ${count} requests`);
    await delay(5);
  }
}

describe("upstream is down", () => {
  let gw: TestGateway;
  let deadUrl: string;
  beforeAll(async () => {
    deadUrl = await getDeadUrl();
    gw = await startTestGateway(deadUrl, { upstream: { connectTimeoutMs: 2_000 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers 502 with a JSON-RPC error that carries the request's id and names the upstream", async () => {
    for (const id of [42, "req-abc"]) {
      const res = await post(gw.url, { jsonrpc: "2.0", id, method: "tools/list" });
      expect(res.status).toBe(502);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await res.json()) as {
        jsonrpc: string;
        id: unknown;
        error: { code: number; message: string; data?: unknown };
      };
      expect(body).toMatchObject({ jsonrpc: "2.0", id, error: { code: -32603 } });
      // Named as the client knows it (its configured name), never by its address: that is internal topology.
      expect(body.error.message).toContain("Upstream MCP server default");
      expect(JSON.stringify(body)).not.toContain(new URL(deadUrl).host);
      expect(body.error.data).toBeTypeOf("object");
    }
  });

  it("answers 502 with id null for a notification and for a GET", async () => {
    const note = await post(gw.url, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(note.status).toBe(502);
    expect(await note.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32603 } });
    const get = await fetch(gw.url, { headers: { accept: "text/event-stream", "mcp-session-id": "s" } });
    expect(get.status).toBe(502);
    expect(await get.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32603 } });
  });

  it("keeps answering: /healthz 200, /readyz 503", async () => {
    const health = await fetch(`${gw.origin}/healthz`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    const ready = await fetch(`${gw.origin}/readyz`);
    expect(ready.status).toBe(503);
    await ready.arrayBuffer();
  });
});

describe("scripted upstream faults", () => {
  const { upstream, gateway: gw } = gatewayInFrontOf(() => startScriptedUpstream(jsonRpcOk), { beforeAll, afterAll });
  afterEach(() => {
    upstream().setHandler(jsonRpcOk);
  });

  it("the upstream resets the connection before answering: 502 with the request's id", async () => {
    upstream().setHandler((_req, res) => {
      res.socket?.destroy();
    });
    const res = await post(gw().url, { jsonrpc: "2.0", id: 77, method: "tools/call", params: { name: "x" } });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { id: unknown; error: { code: number; message: string } };
    expect(body).toMatchObject({ jsonrpc: "2.0", id: 77, error: { code: -32603 } });
    expect(body.error.message).toContain("Upstream MCP server default");
    expect(JSON.stringify(body)).not.toContain(new URL(upstream().url).host);
    await expectStillServing(gw(), upstream());
  });

  it("the upstream dies mid-stream: the client gets the event sent so far, then the stream breaks as it does directly", async () => {
    const first = sseEvent({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 1, progress: 1 },
    });
    upstream().setHandler(async (_req, res) => {
      openSse(res);
      res.write(first);
      await delay(50);
      res.socket?.destroy();
    });
    const message = { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "slow" } };
    const direct = await post(upstream().url, message);
    const directRead = await readAll(direct);
    const via = await post(gw().url, message);
    expect(via.status).toBe(200);
    expect(via.headers.get("content-type")).toBe("text/event-stream");
    const viaRead = await readAll(via);
    expect(directRead).toEqual({ text: first, outcome: "errored" });
    expect(viaRead).toEqual(directRead);
    await expectStillServing(gw(), upstream());
  });

  it("a malformed SSE stream passes through byte for byte", async () => {
    const pieces: Buffer[] = [
      Buffer.from(": a comment line\n\n"),
      Buffer.from("data: {not json at all\n\n"),
      Buffer.from("garbage line without a field separator\n"),
      Buffer.from("event: weird\ndata: [1, 2,\ndata: 3]]]\n\n"),
      Buffer.from('id: 7\rdata: {"jsonrpc":"2.0","id":9,"res'),
      Buffer.from('ult":{}}\r\n\r\n'),
      Buffer.from([0x64, 0x61, 0x74, 0x61, 0x3a, 0x20, 0xff, 0xfe, 0xc3, 0x28, 0x0a, 0x0a]), // invalid UTF-8
      Buffer.from("retry: banana\ndata:\n\ndata: trailing event without its blank line"),
    ];
    const expected = Buffer.concat(pieces);
    upstream().setHandler(async (_req, res) => {
      openSse(res);
      for (const p of pieces) {
        res.write(p);
        await delay(5);
      }
      res.end();
    });
    const via = await post(gw().url, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "x" } });
    expect(via.status).toBe(200);
    expect(via.headers.get("content-type")).toBe("text/event-stream");
    const received = Buffer.from(await via.arrayBuffer());
    expect(received.equals(expected), `received ${JSON.stringify(received.toString("latin1"))}`).toBe(true);
    await expectStillServing(gw(), upstream());
  });

  it("a client that disconnects mid-stream makes the gateway abort the upstream request", async () => {
    upstream().setHandler((_req, res) => {
      openSse(res);
      res.write(
        sseEvent({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } }),
      );
      // ...and then nothing: a long call that only the client's departure ends.
    });
    const before = upstream().requests.length;
    const ac = new AbortController();
    const res = await post(
      gw().url,
      { jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "long" } },
      { signal: ac.signal },
    );
    const reader = res.body?.getReader();
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toContain("notifications/progress");
    ac.abort();
    await waitForRequests(upstream(), before + 1);
    const recorded = upstream().requests[before];
    if (!recorded) throw new Error("unreachable: request was awaited");
    expect(await closedWithin(recorded)).toEqual({ aborted: true });
    await expectStillServing(gw(), upstream());
  });

  it("a client that disconnects while the upstream has not answered yet also aborts the upstream request", async () => {
    upstream().setHandler(() => {
      // never answers
    });
    const before = upstream().requests.length;
    const ac = new AbortController();
    const pending = post(
      gw().url,
      { jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "silent" } },
      { signal: ac.signal },
    ).catch((e: unknown) => e);
    await waitForRequests(upstream(), before + 1);
    ac.abort();
    expect(await pending).toBeInstanceOf(Error);
    const recorded = upstream().requests[before];
    if (!recorded) throw new Error("unreachable: request was awaited");
    expect(await closedWithin(recorded)).toEqual({ aborted: true });
    await expectStillServing(gw(), upstream());
  });

  it("a GET event stream dropped by the client is aborted upstream too", async () => {
    upstream().setHandler((_req, res) => {
      openSse(res);
    });
    const before = upstream().requests.length;
    const ac = new AbortController();
    const res = await fetch(gw().url, {
      headers: { accept: "text/event-stream", "mcp-session-id": "s-1" },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    await waitForRequests(upstream(), before + 1);
    ac.abort();
    const recorded = upstream().requests[before];
    if (!recorded) throw new Error("unreachable: request was awaited");
    expect(await closedWithin(recorded)).toEqual({ aborted: true });
  });

  it("malformed JSON from the client: 400 with -32700 and nothing reaches the upstream", async () => {
    const before = upstream().requests.length;
    for (const body of ['{"jsonrpc":"2.0","id":1,"method":', "not json", ""]) {
      const res = await fetch(gw().url, { method: "POST", headers: JSON_HEADERS, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    }
    expect(upstream().requests.length).toBe(before);
    await expectStillServing(gw(), upstream());
  });

  it("JSON nested 2 million levels deep (4 MB, under maxBodyBytes): 400 -32700 at once, the event loop never held", async () => {
    const before = upstream().requests.length;
    const body = "[".repeat(2_000_000) + "]".repeat(2_000_000);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const res = await fetch(gw().url, { method: "POST", headers: JSON_HEADERS, body });
    const answer = (await res.json()) as { error: { code: number; message: string; data: { reason: string } } };
    loop.disable();
    expect(res.status).toBe(400);
    expect(answer.error).toMatchObject({ code: -32700, data: { reason: "parse_error" } });
    expect(answer.error.message).toMatch(/nested deeper than/);
    // JSON.parse took 1–4 s over this body; the depth scan takes milliseconds.
    expect(loop.max / 1e6).toBeLessThan(500);
    expect(upstream().requests.length).toBe(before);
    await expectStillServing(gw(), upstream());
  });
});

describe("body size limit", () => {
  const { upstream, gateway: gw } = gatewayInFrontOf(
    () => startScriptedUpstream(jsonRpcOk),
    { beforeAll, afterAll },
    { server: { maxBodyBytes: 1024 } },
  );

  function bigMessage(bytes: number): string {
    const base = { jsonrpc: "2.0", id: 12, method: "tools/call", params: { name: "echo", arguments: { text: "" } } };
    const pad = "x".repeat(Math.max(0, bytes - JSON.stringify(base).length));
    return JSON.stringify({ ...base, params: { ...base.params, arguments: { text: pad } } });
  }

  it("a body over maxBodyBytes gets 413 (with Content-Length and chunked) and never reaches the upstream", async () => {
    const body = bigMessage(8 * 1024);
    const withLength = await fetch(gw().url, { method: "POST", headers: JSON_HEADERS, body });
    expect(withLength.status).toBe(413);
    await withLength.arrayBuffer();

    const chunked = await rawRequest(gw().url, {
      method: "POST",
      headers: { ...JSON_HEADERS, "transfer-encoding": "chunked" },
      chunks: [Buffer.from(body.slice(0, 600)), Buffer.from(body.slice(600))],
    });
    expect(chunked.status).toBe(413);
    expect(upstream().requests.length).toBe(0);
  });

  it("a body within the limit is forwarded intact, and the gateway keeps serving after a 413", async () => {
    const body = bigMessage(1000);
    const res = await fetch(gw().url, { method: "POST", headers: JSON_HEADERS, body });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 12, result: { ok: true } });
    expect(upstream().requests.at(-1)?.body).toBe(body);
  });
});

describe("slow upstream", () => {
  const { upstream, gateway: gw } = gatewayInFrontOf(
    () =>
      startScriptedUpstream(() => {
        // never sends headers
      }),
    { beforeAll, afterAll },
    { upstream: { headersTimeoutMs: 200 } },
  );

  it("no response headers within headersTimeoutMs: 504 with the request's id, naming the upstream", async () => {
    const res = await post(gw().url, { jsonrpc: "2.0", id: "slow-1", method: "tools/call", params: { name: "never" } });
    expect(res.status).toBe(504);
    const body = (await res.json()) as { id: unknown; error: { code: number; message: string } };
    expect(body).toMatchObject({ jsonrpc: "2.0", id: "slow-1", error: { code: -32603 } });
    expect(body.error.message).toContain("Upstream MCP server default");
    expect(JSON.stringify(body)).not.toContain(new URL(upstream().url).host);
    await expectStillServing(gw(), upstream());
  });
});

describe("SSE keep-alive", () => {
  const KEEPALIVE = ": keepalive\n\n";
  const { upstream, gateway: gw } = gatewayInFrontOf(
    () => startScriptedUpstream(jsonRpcOk),
    { beforeAll, afterAll },
    { server: { sseKeepAliveMs: 50 } },
  );

  it("comments appear on an idle stream only between complete events, and the events arrive intact", async () => {
    const progress = {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 3, progress: 1, total: 2 },
    };
    const result = { jsonrpc: "2.0", id: 13, result: { content: [{ type: "text", text: "done" }] } };
    const firstEvent = sseEvent(progress);
    const split = Math.floor(firstEvent.length / 2);
    const sent = [firstEvent.slice(0, split), firstEvent.slice(split), sseEvent(result)];
    upstream().setHandler(async (_req, res) => {
      openSse(res);
      await delay(300); // idle before the first event
      res.write(sent[0]);
      await delay(300); // idle in the middle of an event: no comment may go in here
      res.write(sent[1]);
      await delay(300); // idle between events
      res.end(sent[2]);
    });
    const res = await post(gw().url, { jsonrpc: "2.0", id: 13, method: "tools/call", params: { name: "slow" } });
    expect(res.status).toBe(200);
    const received = await res.text();
    const upstreamText = sent.join("");

    expect(received).toContain(KEEPALIVE);
    expect(received.split(KEEPALIVE).join("")).toBe(upstreamText);
    // Every comment sits at the start or right after a complete event.
    let offset = 0;
    let upstreamSoFar = "";
    for (;;) {
      const at = received.indexOf(KEEPALIVE, offset);
      if (at === -1) break;
      upstreamSoFar += received.slice(offset, at);
      expect(
        upstreamSoFar === "" || upstreamSoFar.endsWith("\n\n"),
        `comment after ${JSON.stringify(upstreamSoFar)}`,
      ).toBe(true);
      offset = at + KEEPALIVE.length;
    }
    // Comments were also sent after the first complete event, not only before any data.
    expect(received.indexOf(KEEPALIVE, received.indexOf(firstEvent) + firstEvent.length)).toBeGreaterThan(-1);
    expect(sseMessages(received)).toEqual([progress, result]);
  });

  it("JSON responses are never touched by keep-alive", async () => {
    upstream().setHandler(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"jsonrpc":"2.0",');
      await delay(200);
      res.end('"id":14,"result":{}}');
    });
    const res = await post(gw().url, { jsonrpc: "2.0", id: 14, method: "ping" });
    expect(await res.text()).toBe('{"jsonrpc":"2.0","id":14,"result":{}}');
  });
});

describe("many clients drop mid-stream under load", () => {
  const CLIENTS = 200;
  const timers = new Set<NodeJS.Timeout>();
  // Every stream runs until its client leaves: an event every 20 ms, forever.
  const streamForever: ScriptedHandler = (_req, res, recorded) => {
    openSse(res);
    let n = 0;
    const timer = setInterval(() => {
      n += 1;
      res.write(
        sseEvent({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: n } }),
      );
    }, 20);
    timers.add(timer);
    void recorded.closed.then(() => {
      clearInterval(timer);
      timers.delete(timer);
    });
  };
  const { upstream, gateway: gw } = gatewayInFrontOf(() => startScriptedUpstream(streamForever), {
    beforeAll,
    afterAll,
  });
  // Registered after the gateway's hooks, so (after-hooks run in reverse) the streams stop before the gateway closes.
  afterAll(() => {
    for (const t of timers) clearInterval(t);
  });

  it(`${CLIENTS} clients abort SSE POSTs at random points; the gateway survives, aborts every upstream stream and still serves`, async () => {
    // Deterministic pseudo-random points (mulberry32) so a failure can be replayed.
    let seed = 0x5eed1234;
    const random = (): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = seed;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const outcomes = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const ac = new AbortController();
        const mode = random();
        const chunksBeforeAbort = Math.floor(random() * 4);
        const abortAfterMs = Math.floor(random() * 30);
        try {
          if (mode < 0.2) {
            // Abort before (or while) the response headers arrive.
            setTimeout(() => ac.abort(), abortAfterMs);
            const res = await post(
              gw().url,
              { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "stream" } },
              { signal: ac.signal },
            );
            await res.body?.cancel();
            return "aborted-early";
          }
          const res = await post(
            gw().url,
            { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "stream" } },
            { signal: ac.signal },
          );
          const reader = res.body?.getReader();
          for (let c = 0; c < chunksBeforeAbort; c++) await reader?.read();
          if (mode < 0.6) ac.abort();
          else await reader?.cancel();
          return "aborted-mid-stream";
        } catch {
          return "aborted-early";
        }
      }),
    );
    expect(outcomes).toHaveLength(CLIENTS);
    expect(outcomes.filter((o) => o === "aborted-mid-stream").length).toBeGreaterThan(0);

    // Every stream that reached the upstream must be closed by the gateway (bounded wait).
    const deadline = Date.now() + 10_000;
    const open = (): number => timers.size;
    while (open() > 0 && Date.now() < deadline) await delay(20);
    expect(open(), "upstream streams left open after their clients left").toBe(0);
    const closes = await Promise.all(upstream().requests.map((r) => r.closed));
    expect(closes.every((c) => c.aborted)).toBe(true);

    // ...and the gateway is alive and serving.
    const health = await fetch(`${gw().origin}/healthz`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    upstream().setHandler(jsonRpcOk);
    const res = await post(gw().url, { jsonrpc: "2.0", id: "final", method: "ping" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: "final", result: { ok: true } });
  });

  it("the web-standard entry point (gateway.fetch) survives 100 consumers cancelling mid-stream and aborts their upstream streams", async () => {
    // This is the Readable → web stream path that crashes Node 20 with
    // ERR_INVALID_STATE when it is not guarded (see DESIGN.md).
    upstream().setHandler(streamForever);
    const before = upstream().requests.length;
    let seed = 0x0badf00d;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const ac = new AbortController();
        const chunks = Math.floor(random() * 4);
        const viaSignal = random() < 0.5;
        const request = new Request(gw().url, {
          method: "POST",
          headers: JSON_HEADERS,
          body: JSON.stringify({ jsonrpc: "2.0", id: `web-${i}`, method: "tools/call", params: { name: "stream" } }),
          signal: ac.signal,
        });
        try {
          const res = await gw().fetch(request);
          const reader = res.body?.getReader();
          for (let c = 0; c < chunks; c++) await reader?.read();
          if (viaSignal) ac.abort();
          else await reader?.cancel();
        } catch {
          // an abort may surface as a rejection; that is the client's business
        }
      }),
    );
    const deadline = Date.now() + 10_000;
    while (timers.size > 0 && Date.now() < deadline) await delay(20);
    expect(timers.size, "upstream streams left open after their consumers left").toBe(0);
    const closes = await Promise.all(
      upstream()
        .requests.slice(before)
        .map((r) => r.closed),
    );
    expect(closes.length).toBeGreaterThan(0);
    expect(closes.every((c) => c.aborted)).toBe(true);

    upstream().setHandler(jsonRpcOk);
    const res = await post(gw().url, { jsonrpc: "2.0", id: "final-web", method: "ping" });
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: "final-web", result: { ok: true } });
  });
});
