import { describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { readLimitedBody } from "../../src/server/limited-body.js";

async function* chunksOf(...parts: Array<string | Uint8Array>): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield typeof p === "string" ? Buffer.from(p) : p;
}

/** An endless source that counts how many chunks were pulled from it. */
function endless(chunkSize: number): {
  source: AsyncIterable<Uint8Array>;
  pulls: () => number;
  finished: () => boolean;
} {
  let pulls = 0;
  let finished = false;
  async function* gen(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        pulls += 1;
        yield new Uint8Array(chunkSize).fill(0x61);
      }
    } finally {
      finished = true;
    }
  }
  return { source: gen(), pulls: () => pulls, finished: () => finished };
}

describe("readLimitedBody", () => {
  it("returns the whole body under the limit, chunks joined in order", async () => {
    const result = await readLimitedBody(chunksOf('{"a":', "1", "}"), 100, undefined);
    expect(result).toEqual({ ok: true, body: Buffer.from('{"a":1}') });
  });

  it("returns an empty buffer for an empty body", async () => {
    const result = await readLimitedBody(chunksOf(), 10, "0");
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.body.byteLength).toBe(0);
  });

  it("accepts a body exactly at the limit, declared or not", async () => {
    const declared = await readLimitedBody(chunksOf("12345", "67890"), 10, "10");
    expect(declared).toEqual({ ok: true, body: Buffer.from("1234567890") });
    const undeclared = await readLimitedBody(chunksOf("1234567890"), 10, undefined);
    expect(undeclared).toEqual({ ok: true, body: Buffer.from("1234567890") });
  });

  it("accepts plain Uint8Array views (not Buffers), honouring their offsets", async () => {
    const backing = new TextEncoder().encode("xxHELLOxx");
    const result = await readLimitedBody(chunksOf(backing.subarray(2, 7), new Uint8Array([0x21])), 100, undefined);
    expect(result).toEqual({ ok: true, body: Buffer.from("HELLO!") });
  });

  it("rejects by declared Content-Length without reading anything", async () => {
    const { source, pulls } = endless(1);
    const result = await readLimitedBody(source, 10, "11");
    expect(result).toEqual({ ok: false, reason: "too_large" });
    expect(pulls()).toBe(0);
  });

  it("ignores a Content-Length that is not a number and enforces the limit on the bytes", async () => {
    const small = await readLimitedBody(chunksOf("abc"), 10, "not-a-number");
    expect(small).toEqual({ ok: true, body: Buffer.from("abc") });
    const big = await readLimitedBody(chunksOf("0123456789AB"), 10, "nope");
    expect(big).toEqual({ ok: false, reason: "too_large" });
  });

  it("rejects a body that grows past the limit while streaming, and stops pulling at once", async () => {
    const { source, pulls, finished } = endless(4);
    const result = await readLimitedBody(source, 10, undefined);
    expect(result).toEqual({ ok: false, reason: "too_large" });
    // 4 + 4 = 8 ≤ 10, the third chunk makes 12 > 10: exactly three pulls.
    expect(pulls()).toBe(3);
    // The source was closed (its `finally` ran), so it is not read any further.
    expect(finished()).toBe(true);
  });

  it("rejects a body whose declared length lies below its real size", async () => {
    const result = await readLimitedBody(chunksOf("0123456789", "X"), 10, "3");
    expect(result).toEqual({ ok: false, reason: "too_large" });
  });

  it("reports a source that throws as aborted", async () => {
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield Buffer.from("partial");
      throw new Error("ECONNRESET");
    }
    await expect(readLimitedBody(broken(), 100, undefined)).resolves.toEqual({ ok: false, reason: "aborted" });
  });

  it("works with a Node Readable, destroying it when over the limit", async () => {
    const ok = await readLimitedBody(Readable.from([Buffer.from("ab"), Buffer.from("cd")]), 4, "4");
    expect(ok).toEqual({ ok: true, body: Buffer.from("abcd") });

    const stream = new Readable({ read() {} });
    stream.push(Buffer.alloc(3));
    stream.push(Buffer.alloc(3));
    const tooLarge = await readLimitedBody(stream, 4, undefined);
    expect(tooLarge).toEqual({ ok: false, reason: "too_large" });
    expect(stream.destroyed).toBe(true);
  });

  it("reports a Node Readable destroyed with an error as aborted", async () => {
    const stream = new Readable({ read() {} });
    stream.push(Buffer.from("x"));
    const pending = readLimitedBody(stream, 100, undefined);
    stream.destroy(new Error("client went away"));
    await expect(pending).resolves.toEqual({ ok: false, reason: "aborted" });
  });
});

describe("readNodeBody (the Node fast path)", () => {
  it("reads a body under the limit in one buffer", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBody } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    const read = readNodeBody(s, 10, undefined);
    s.write("abc");
    s.end("def");
    expect(await read).toEqual({ ok: true, body: Buffer.from("abcdef") });
  });

  it("refuses at once when the declared length is over the limit, reading nothing", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBody } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    expect(await readNodeBody(s, 10, "11")).toEqual({ ok: false, reason: "too_large" });
    expect(s.listenerCount("data")).toBe(0);
  });

  it("stops reading as soon as a streamed body passes the limit", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBody } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    const read = readNodeBody(s, 4, undefined);
    s.write("abc");
    s.write("de");
    expect(await read).toEqual({ ok: false, reason: "too_large" });
    expect(s.isPaused()).toBe(true);
    // Drained later (the full route's clean-up), the rest passes the finished read's listener by.
    s.resume();
    s.end("fgh");
    await new Promise<void>((resolve) => s.once("close", resolve));
  });

  it("a stream that closes before its end is aborted", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBody } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    const read = readNodeBody(s, 10, undefined);
    s.write("ab");
    s.destroy();
    expect(await read).toEqual({ ok: false, reason: "aborted" });
  });
});

describe("readNodeBodyThen (the lean tasks/get path's read)", () => {
  it("calls back once, with the result and the context given, and adds its listeners once per stream", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBodyThen } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    const calls: Array<[unknown, string]> = [];
    const context = "the poll";
    readNodeBodyThen(s, 10, undefined, (result, ctx) => calls.push([result, ctx]), context);
    const listeners = ["data", "end", "error", "close"].map((event) => s.listenerCount(event));
    s.write("ab");
    s.end("c");
    await new Promise<void>((resolve) => s.once("close", resolve));
    s.emit("error", new Error("after the end"));
    expect(calls).toEqual([[{ ok: true, body: Buffer.from("abc") }, "the poll"]]);
    // The finished read's listeners stay (they find no read); a second read of the stream adds none.
    readNodeBodyThen(s, 10, undefined, () => calls.push([undefined, "again"]), context);
    expect(["data", "end", "error", "close"].map((event) => s.listenerCount(event))).toEqual(listeners);
  });

  it("a read after one that found the body too large hears each chunk once", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBodyThen } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    const results: unknown[] = [];
    readNodeBodyThen(s, 2, undefined, (result) => results.push(result), undefined);
    s.write("abc");
    await new Promise((resolve) => setImmediate(resolve));
    readNodeBodyThen(s, 10, undefined, (result) => results.push(result), undefined);
    s.resume();
    s.end("de");
    await new Promise<void>((resolve) => s.once("close", resolve));
    expect(results).toEqual([
      { ok: false, reason: "too_large" },
      { ok: true, body: Buffer.from("de") },
    ]);
  });

  it("two reads on two streams at once keep their bodies apart", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBodyThen } = await import("../../src/server/limited-body.js");
    const [a, b] = [new PassThrough(), new PassThrough()];
    const got = new Map<string, unknown>();
    const done = (result: unknown, name: string): void => void got.set(name, result);
    readNodeBodyThen(a, 10, undefined, done, "a");
    readNodeBodyThen(b, 10, undefined, done, "b");
    a.write("1");
    b.write("xyz");
    a.end("2");
    b.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).toEqual(
      new Map([
        ["a", { ok: true, body: Buffer.from("12") }],
        ["b", { ok: true, body: Buffer.from("xyz") }],
      ]),
    );
  });

  it("answers at once when the declared length is over the limit", async () => {
    const { PassThrough } = await import("node:stream");
    const { readNodeBodyThen } = await import("../../src/server/limited-body.js");
    const s = new PassThrough();
    let result: unknown;
    readNodeBodyThen(s, 10, "11", (r) => (result = r), undefined);
    expect(result).toEqual({ ok: false, reason: "too_large" });
    expect(s.listenerCount("data")).toBe(0);
  });
});
