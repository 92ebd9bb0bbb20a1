// SseStream: the one writer of the gateway's own event streams (a client answer that outgrew JSON, a legacy
// session's GET stream). What reaches the client, byte for byte, and how a client that left is noticed.
import { afterEach, describe, expect, it, vi } from "vitest";
import { SseStream } from "../../src/calls/sse-stream.js";

describe("SseStream", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers 200 as an uncached, unbuffered event stream of message events and keep-alive comments", async () => {
    const stream = new SseStream(() => undefined);
    const res = stream.response;
    expect(res.status).toBe(200);
    expect(Object.fromEntries(res.headers)).toEqual({
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    });
    stream.send({ jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1 } });
    stream.ping();
    stream.send({ jsonrpc: "2.0", id: 1, result: { é: "ü" } });
    stream.end();
    expect(await res.text()).toBe(
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n' +
        ": keepalive\n\n" +
        'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"é":"ü"}}\n\n',
    );
  });

  it("keeps alive on a period until it ends, and not at all with 0", async () => {
    vi.useFakeTimers();
    const stream = new SseStream(() => undefined);
    stream.keepAliveEvery(1_000);
    await vi.advanceTimersByTimeAsync(2_000);
    stream.end();
    expect(vi.getTimerCount()).toBe(0);
    expect(await stream.response.text()).toBe(": keepalive\n\n: keepalive\n\n");

    const quiet = new SseStream(() => undefined);
    quiet.keepAliveEvery(0);
    expect(vi.getTimerCount()).toBe(0);
    quiet.end();
  });

  it("a client that cancels the body is gone; an end is not", async () => {
    let gone = 0;
    const cancelled = new SseStream(() => (gone += 1));
    await cancelled.response.body?.cancel();
    expect(gone).toBe(1);
    // Ending after the client left does not throw.
    expect(() => cancelled.end()).not.toThrow();

    let ended = 0;
    const finished = new SseStream(() => (ended += 1));
    finished.send({ ok: true });
    finished.end();
    await finished.response.text();
    expect(ended).toBe(0);
  });

  it("a write the stream refuses (it already ended) reports the client gone", () => {
    let gone = 0;
    const stream = new SseStream(() => (gone += 1));
    stream.end();
    stream.ping();
    expect(gone).toBe(1);
  });
});
