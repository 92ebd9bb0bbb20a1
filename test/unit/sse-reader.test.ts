import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, Readable } from "node:stream";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { SseMessages } from "../../src/upstream/sse-messages.js";
import { readSseBody, sseEvents, type SseHandler } from "../../src/upstream/sse-reader.js";
import { SseEventTooLargeError, type SseEvent } from "../../src/upstream/sse-parser.js";

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A handler that records everything; `hold` makes event() return promises the test resolves. */
function recorder(
  hold = false,
): SseHandler & { events: SseEvent[]; ended: Promise<unknown>; release: () => void; held: number } {
  let ended!: (error: unknown) => void;
  const releases: Array<() => void> = [];
  const r = {
    events: [] as SseEvent[],
    held: 0,
    ended: new Promise<unknown>((resolve) => (ended = resolve)),
    event(e: SseEvent): void | Promise<void> {
      r.events.push(e);
      if (!hold) return;
      r.held += 1;
      return new Promise<void>((resolve) => releases.push(resolve));
    },
    end(error?: unknown): void {
      ended(error ?? "ended");
    },
    release(): void {
      r.held -= 1;
      releases.shift()?.();
    },
  };
  return r;
}

describe("readSseBody", () => {
  it("hands on every event, whatever the chunk boundaries and line ends", async () => {
    const text =
      'event: message\nid: 1\ndata: {"a":"é€"}\n\r\n: comment\r\ndata: 2\rdata: two\r\r' + "data: 3\n\ndata: tail";
    const whole = Buffer.from(text, "utf8");
    for (let cut = 1; cut < whole.byteLength; cut++) {
      const body = Readable.from([whole.subarray(0, cut), whole.subarray(cut)], { objectMode: false });
      const r = recorder();
      readSseBody(body, r);
      expect(await r.ended).toBe("ended");
      expect(r.events.map((e) => e.data)).toEqual(['{"a":"é€"}', "2\ntwo", "3"]);
      expect(r.events.map((e) => e.id)).toEqual(["1", "1", "1"]);
    }
  });

  it("pauses the body while the handler's promise is pending, and keeps the order", async () => {
    const body = new PassThrough();
    const r = recorder(true);
    readSseBody(body, r);
    body.write("data: 1\n\ndata: 2\n\n");
    await tick();
    expect(r.events.map((e) => e.data)).toEqual(["1"]);
    expect(body.isPaused()).toBe(true);
    body.write("data: 3\n\n");
    await tick();
    expect(r.events).toHaveLength(1);
    r.release();
    await tick();
    expect(r.events.map((e) => e.data)).toEqual(["1", "2"]);
    r.release();
    await tick();
    expect(r.events.map((e) => e.data)).toEqual(["1", "2", "3"]);
    r.release();
    await tick();
    expect(body.isPaused()).toBe(false);
    body.end();
    expect(await r.ended).toBe("ended");
  });

  it("reports a close mid-event as Node's premature close, after the events before it", async () => {
    const body = new PassThrough();
    const r = recorder();
    readSseBody(body, r);
    body.write("data: 1\n\ndata: half");
    await tick();
    body.destroy();
    const error = await r.ended;
    expect(r.events.map((e) => e.data)).toEqual(["1"]);
    expect(error).toMatchObject({ message: "Premature close", code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("reports the body's own error, after the events of the chunk in hand", async () => {
    const body = new PassThrough();
    const r = recorder(true);
    readSseBody(body, r);
    body.write("data: 1\n\ndata: 2\n\n");
    await tick();
    const boom = new Error("boom");
    body.destroy(boom);
    await tick();
    r.release();
    await tick();
    r.release();
    expect(await r.ended).toBe(boom);
    expect(r.events.map((e) => e.data)).toEqual(["1", "2"]);
  });

  it("stops on an event past the size limit and destroys the body", async () => {
    const body = new PassThrough();
    const r = recorder();
    readSseBody(body, r, { maxEventBytes: 8 });
    body.write("data: 12345\n\ndata: 123456789\n\n");
    expect(await r.ended).toBeInstanceOf(SseEventTooLargeError);
    expect(r.events.map((e) => e.data)).toEqual([]);
    expect(body.destroyed).toBe(true);
  });

  it("stops with the handler's rejection or throw", async () => {
    const body = new PassThrough();
    const failure = new Error("consumer failed");
    const ended = sseEvents(body, () => Promise.reject(failure));
    body.write("data: 1\n\n");
    await expect(ended).rejects.toBe(failure);
    expect(body.destroyed).toBe(true);
    const other = new PassThrough();
    const thrown = sseEvents(other, () => {
      throw failure;
    });
    other.write("data: 1\n\n");
    await expect(thrown).rejects.toBe(failure);
  });
});

describe("SseMessages", () => {
  it("does not read the body before the first next()", async () => {
    const body = new PassThrough();
    const messages = new SseMessages(body);
    body.write('data: {"n":1}\n\n');
    await tick();
    expect(body.readableFlowing).toBe(null);
    await expect(messages.next()).resolves.toEqual({ done: false, value: { n: 1 } });
  });

  it("skips what is not a message, and records the cursor as messages are handed on", async () => {
    const body = new PassThrough();
    const messages = new SseMessages(body);
    const first = messages.next();
    body.write(
      'id: a\ndata: {"n":1}\n\nid: b\ndata: {"n":2}\n\nevent: ping\nid: c\ndata: x\n\nid: d\ndata: {broken\n\n',
    );
    expect(await first).toEqual({ done: false, value: { n: 1 } });
    // "b" is parsed, but its message is still held (and the body paused): a resume must replay it.
    await tick();
    expect(messages.cursor).toBe("a");
    expect(body.isPaused()).toBe(true);
    const second = messages.next();
    expect(messages.cursor).toBe("b");
    expect(await second).toEqual({ done: false, value: { n: 2 } });
    // Once the body reads on, events that carry no message move the cursor on (nothing to replay in them).
    await tick();
    expect(messages.cursor).toBe("d");
    const third = messages.next();
    body.end('id: e\ndata: {"n":3}\n\n');
    expect(await third).toEqual({ done: false, value: { n: 3 } });
    expect(messages.cursor).toBe("e");
    expect(await messages.next()).toEqual({ done: true, value: undefined });
  });

  it("surfaces a failure once, after the messages before it, then is done", async () => {
    const body = new PassThrough();
    const messages = new SseMessages(body);
    const first = messages.next();
    body.write('data: {"n":1}\n\ndata: {"n":2}\n\n');
    expect(await first).toEqual({ done: false, value: { n: 1 } });
    const boom = new Error("boom");
    body.destroy(boom);
    await tick();
    expect(await messages.next()).toEqual({ done: false, value: { n: 2 } });
    await expect(messages.next()).rejects.toBe(boom);
    expect(await messages.next()).toEqual({ done: true, value: undefined });
  });

  it("return() (a break out of for await) destroys the body", async () => {
    const body = new PassThrough();
    const messages = new SseMessages(body);
    body.write('data: {"n":1}\n\ndata: {"n":2}\n\n');
    const got: unknown[] = [];
    for await (const m of messages) {
      got.push(m);
      break;
    }
    expect(got).toEqual([{ n: 1 }]);
    expect(body.destroyed).toBe(true);
    expect(await messages.next()).toEqual({ done: true, value: undefined });
  });

  it("settles a pending next() as done when returned", async () => {
    const messages = new SseMessages(new PassThrough());
    const pending = messages.next();
    await messages.return();
    expect(await pending).toEqual({ done: true, value: undefined });
  });
});

describe("on an undici body, errors are those a for await over it gives", () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
    server = undefined;
  });

  async function upstream(after: (res: import("node:http").ServerResponse) => void): Promise<string> {
    server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('id: 1\ndata: {"n":1}\n\ndata: {"ha');
      after(res);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  /** The error `read` ends with, after the first message. */
  async function failureOf(
    url: string,
    read: "iterate" | "messages",
    stop: (ac: AbortController) => void,
  ): Promise<unknown> {
    const ac = new AbortController();
    const res = await request(url, { signal: ac.signal });
    res.body.on("error", () => {});
    try {
      if (read === "iterate") {
        const chunks = res.body[Symbol.asyncIterator]();
        while (!(await chunks.next()).done) stop(ac);
      } else {
        const messages = new SseMessages(res.body);
        expect(await messages.next()).toEqual({ done: false, value: { n: 1 } });
        stop(ac);
        await messages.next();
      }
    } catch (err) {
      return err;
    }
    return "no error";
  }

  const shape = (err: unknown): unknown => {
    const e = err as { name?: string; code?: string; message?: string };
    return { name: e.name, code: e.code, message: e.message };
  };

  it("the upstream closing the connection mid-event", async () => {
    const url = await upstream((res) => setTimeout(() => res.socket?.destroy(), 20));
    const iterate = await failureOf(url, "iterate", () => {});
    const messages = await failureOf(url, "messages", () => {});
    expect(shape(messages)).toEqual(shape(iterate));
    expect(messages).not.toBe("no error");
  });

  it("the call aborted while it waits", async () => {
    const url = await upstream(() => {});
    const iterate = await failureOf(url, "iterate", (ac) => ac.abort());
    const messages = await failureOf(url, "messages", (ac) => ac.abort());
    expect(shape(messages)).toEqual(shape(iterate));
    expect(messages).not.toBe("no error");
  });
});

describe("a body that closed before anyone read it", () => {
  it("ends the reader with its error (and SseMessages' first next() rejects), instead of waiting for a 'close' that already fired", async () => {
    const failed = new Readable({ read() {} });
    failed.on("error", () => undefined);
    const closed = new Promise((resolve) => failed.once("close", resolve));
    failed.destroy(new Error("socket reset"));
    await closed;
    const r = recorder();
    readSseBody(failed, r);
    expect(await r.ended).toMatchObject({ message: "socket reset" });

    const cut = new Readable({ read() {} });
    cut.destroy();
    await once(cut, "close");
    await expect(new SseMessages(cut).next()).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });
});
