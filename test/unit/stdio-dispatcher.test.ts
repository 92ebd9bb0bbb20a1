// The in-process dispatcher between the upstream client and the stdio host: what undici's request() gets from it
// (status, headers, body), and the rules a socket gave for free: backpressure, the consumer's abort reaching the
// answer's producer, and the header and idle timeouts. The host is a stand-in serving web Responses: the real one
// (with server-everything) is covered by test/integration/stdio-*.test.ts.
import { afterEach, describe, expect, it, vi } from "vitest";
import { errors } from "undici";
import { StdioDispatcher } from "../../src/stdio/dispatcher.js";
import type { Exchange, StdioHost } from "../../src/stdio/host.js";

interface Served extends Exchange {
  request: Request;
}

function hostServing(answer: (request: Request, exchange: Exchange) => Promise<Response> | Response): {
  host: StdioHost;
  served: Served[];
} {
  const served: Served[] = [];
  const host = {
    serve: (request: Request, exchange: Exchange) => {
      served.push({ request, ...exchange });
      return Promise.resolve(answer(request, exchange));
    },
  } as unknown as StdioHost;
  return { host, served };
}

const settled = (p: Promise<unknown>): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setImmediate(() => r(false)))]);

afterEach(() => {
  vi.useRealTimers();
});

describe("StdioDispatcher", () => {
  it("hands the request to the host and returns its answer: status, headers, body", async () => {
    const { host, served } = hostServing(
      (req, exchange) =>
        new Response(`echo ${req.method} ${exchange.body?.toString("utf8")}`, {
          status: 201,
          headers: { "content-type": "text/plain", "mcp-session-id": "s1" },
        }),
    );
    const dispatcher = new StdioDispatcher(host, { headersTimeoutMs: 60_000, idleTimeoutMs: 0 });
    const res = await dispatcher.request({
      origin: "http://stdio.invalid",
      path: "/mcp?x=1",
      method: "POST",
      headers: ["content-type", "application/json", "mcp-session-id", "s1"],
      body: Buffer.from('{"a":1}'),
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers["mcp-session-id"]).toBe("s1");
    expect(await res.body.text()).toBe('echo POST {"a":1}');
    const [first] = served;
    expect(new URL(first!.request.url).search).toBe("?x=1");
    expect(first!.request.headers.get("content-type")).toBe("application/json");
    expect(first!.request.body).toBeNull();
    // Read to its end: the host is told the answer is over.
    expect(await settled(first!.done)).toBe(true);
  });

  it("a message the upstream client parsed already, and its caller, reach the host with the body (as undici's opaque)", async () => {
    const { host, served } = hostServing(() => new Response(null, { status: 202 }));
    const dispatcher = new StdioDispatcher(host, { headersTimeoutMs: 60_000, idleTimeoutMs: 0 });
    const message = { jsonrpc: "2.0", method: "notifications/initialized" };
    const res = await dispatcher.request({
      origin: "http://x",
      path: "/mcp",
      method: "POST",
      body: Buffer.from(JSON.stringify(message)),
      opaque: { message, caller: "caller-digest" },
    });
    expect(res.statusCode).toBe(202);
    expect(served[0]!.message).toBe(message);
    expect(served[0]!.caller).toBe("caller-digest");
    expect(served[0]!.body?.toString("utf8")).toBe(JSON.stringify(message));
    // Without one, the host gets none and parses the body itself.
    await dispatcher.request({ origin: "http://x", path: "/mcp", method: "POST", body: Buffer.from("{}") });
    expect(served[1]!.message).toBeUndefined();
  });

  it("the consumer's abort cancels the answer's body, and the host is told it is over", async () => {
    let cancelled: unknown;
    const { host, served } = hostServing(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(c) {
              c.enqueue(new TextEncoder().encode("event: message\n\n"));
            },
            cancel(reason) {
              cancelled = reason ?? "cancelled";
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
    );
    const dispatcher = new StdioDispatcher(host, { headersTimeoutMs: 60_000, idleTimeoutMs: 0 });
    const aborter = new AbortController();
    const res = await dispatcher.request({ origin: "http://x", path: "/mcp", method: "GET", signal: aborter.signal });
    const reader = res.body[Symbol.asyncIterator]();
    expect(String((await reader.next()).value)).toContain("event: message");
    expect(await settled(served[0]!.done)).toBe(false);
    aborter.abort();
    expect(served[0]!.signal.aborted).toBe(true);
    await expect(reader.next()).rejects.toThrow();
    expect(cancelled).toBeDefined();
    expect(await settled(served[0]!.done)).toBe(true);
  });

  it("reads no further than the consumer takes (backpressure), and on once it reads again", async () => {
    let pulls = 0;
    const chunk = new Uint8Array(64 * 1024);
    const total = 64;
    const { host } = hostServing(
      () =>
        new Response(
          new ReadableStream<Uint8Array>(
            {
              pull(c) {
                pulls++;
                if (pulls > total) c.close();
                else c.enqueue(chunk);
              },
            },
            { highWaterMark: 0 },
          ),
        ),
    );
    const dispatcher = new StdioDispatcher(host, { headersTimeoutMs: 60_000, idleTimeoutMs: 0 });
    const res = await dispatcher.request({ origin: "http://x", path: "/mcp", method: "POST", body: Buffer.from("{}") });
    // Nobody reads: the producer is asked for a bounded number of chunks only.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(pulls).toBeLessThan(total);
    let bytes = 0;
    for await (const part of res.body) bytes += (part as Buffer).byteLength;
    expect(bytes).toBe(total * chunk.byteLength);
  });

  it("an answer that does not start within upstream.headersTimeoutMs fails with undici's headers timeout", async () => {
    vi.useFakeTimers();
    const { host } = hostServing(() => new Promise<Response>(() => {}));
    const dispatcher = new StdioDispatcher(host, { headersTimeoutMs: 1_000, idleTimeoutMs: 0 });
    const answer = dispatcher.request({ origin: "http://x", path: "/mcp", method: "POST", body: Buffer.from("{}") });
    const outcome = answer.then(
      () => "answered",
      (err: unknown) => err,
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(await Promise.race([outcome, Promise.resolve("pending")])).toBe("pending");
    await vi.advanceTimersByTimeAsync(2);
    expect(await outcome).toBeInstanceOf(errors.HeadersTimeoutError);
  });

  it("a body silent for upstream.idleTimeoutMs is cut with undici's body timeout; 0 never cuts", async () => {
    vi.useFakeTimers();
    const silent = (): Response =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode(": hello\n\n"));
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    const cut = new StdioDispatcher(hostServing(silent).host, { headersTimeoutMs: 60_000, idleTimeoutMs: 500 });
    const kept = new StdioDispatcher(hostServing(silent).host, { headersTimeoutMs: 60_000, idleTimeoutMs: 0 });
    const [a, b] = await Promise.all(
      [cut, kept].map((d) => d.request({ origin: "http://x", path: "/mcp", method: "GET" })),
    );
    const failure = new Promise<unknown>((resolve) => a!.body.on("error", resolve));
    a!.body.resume();
    let keptFailed = false;
    b!.body.on("error", () => (keptFailed = true)).resume();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await failure).toBeInstanceOf(errors.BodyTimeoutError);
    expect(keptFailed).toBe(false);
    b!.body.destroy();
  });
});
