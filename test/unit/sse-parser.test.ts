import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_SSE_EVENT_BYTES,
  SseEventTooLargeError,
  SseParser,
  type SseEvent,
} from "../../src/upstream/sse-parser.js";

const enc = new TextEncoder();
const bytes = (s: string): Uint8Array => enc.encode(s);

/** Parses `input` fed as the given chunks, plus end(). */
function parseChunks(chunks: readonly Uint8Array[], parser = new SseParser()): SseEvent[] {
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...parser.push(c));
  out.push(...parser.end());
  return out;
}

function parse(input: string | Uint8Array): SseEvent[] {
  return parseChunks([typeof input === "string" ? bytes(input) : input]);
}

/** Cuts `buf` at the given sorted byte offsets. */
function splitAt(buf: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let prev = 0;
  for (const c of cuts) {
    parts.push(buf.subarray(prev, c));
    prev = c;
  }
  parts.push(buf.subarray(prev));
  return parts;
}

describe("SseParser: line endings", () => {
  const expected: SseEvent[] = [
    { event: "message", data: "a\nb" },
    { event: "ping", data: "c" },
  ];
  for (const [name, eol] of [
    ["LF", "\n"],
    ["CR", "\r"],
    ["CRLF", "\r\n"],
  ] as const) {
    it(`parses events terminated with ${name}`, () => {
      const text = `data: a${eol}data: b${eol}${eol}event: ping${eol}data: c${eol}${eol}`;
      expect(parse(text)).toEqual(expected);
    });
  }

  it("parses mixed terminators in one stream", () => {
    expect(parse("data: a\rdata: b\r\n\nevent: ping\r\ndata: c\n\r")).toEqual(expected);
  });

  it("treats CR at a chunk end followed by LF at the next chunk start as one terminator", () => {
    // Were the CR and LF counted as two line ends, the first data line would be dispatched alone.
    const events = parseChunks([bytes("data: a\r"), bytes("\ndata: b\r"), bytes("\n\r"), bytes("\n")]);
    expect(events).toEqual([{ event: "message", data: "a\nb" }]);
  });

  it("dispatches at a lone CR ending a chunk without waiting for the next chunk", () => {
    const p = new SseParser();
    expect(p.push(bytes("data: x\r"))).toEqual([]);
    expect(p.push(bytes("\r"))).toEqual([{ event: "message", data: "x" }]);
    // The LF right after a CR that ended a line is swallowed, not taken as a blank line.
    expect(p.push(bytes("\ndata: y\n\n"))).toEqual([{ event: "message", data: "y" }]);
  });

  it("keeps the pending-CR state across an empty chunk and a chunk holding only part of a multi-byte character", () => {
    const euro = bytes("€"); // 3 bytes
    const p = new SseParser();
    const out = [
      ...p.push(bytes("data: a\r")),
      ...p.push(new Uint8Array(0)),
      ...p.push(bytes("\n")),
      ...p.push(bytes("data: ")),
      ...p.push(euro.subarray(0, 1)),
      ...p.push(euro.subarray(1)),
      ...p.push(bytes("\r")),
      ...p.push(bytes("\n\n")),
    ];
    expect(out).toEqual([{ event: "message", data: "a\n€" }]);
  });

  it("treats CRLF split across chunks after a blank line correctly", () => {
    const events = parseChunks([bytes("data: a\r\n\r"), bytes("\ndata: b\r\n\r"), bytes("\n")]);
    expect(events).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
    ]);
  });
});

describe("SseParser: chunking property", () => {
  // A BOM, comments, every line ending, 2-, 3- and 4-byte UTF-8, ids, retry, event names, multi-line data.
  const sample =
    "\uFEFF: hello\r\n" +
    "event: greet\ndata: héllo\r\nid: 1\r\n\r\n" +
    "data: 世界\rdata:😀 end\r\r" +
    'retry: 2500\nevent: κ\ndata: {"jsonrpc":"2.0","id":1,"result":{"t":"ü€𝄞"}}\n\n' +
    ":comment € only\n" +
    "id\ndata\ndata:  two spaces\n\r\n" +
    "data: tail-without-blank-line";
  const expected: SseEvent[] = [
    { event: "greet", data: "héllo", id: "1" },
    { event: "message", data: "世界\n😀 end", id: "1" },
    { event: "κ", data: '{"jsonrpc":"2.0","id":1,"result":{"t":"ü€𝄞"}}', id: "1", retry: 2500 },
    { event: "message", data: "\n two spaces" },
  ];
  const buf = bytes(sample);

  it("parses the sample in one chunk", () => {
    expect(parse(buf)).toEqual(expected);
  });

  it("gives the same events for a split at every byte position", () => {
    for (let i = 0; i <= buf.byteLength; i++) {
      expect(parseChunks(splitAt(buf, [i])), `split at byte ${i}`).toEqual(expected);
    }
  });

  it("gives the same events for every pair of split positions", () => {
    for (let i = 0; i <= buf.byteLength; i++) {
      for (let j = i; j <= buf.byteLength; j++) {
        const got = parseChunks(splitAt(buf, [i, j]));
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          expect(got, `splits at bytes ${i} and ${j}`).toEqual(expected);
        }
      }
    }
    expect(parseChunks(splitAt(buf, [1, buf.byteLength - 1]))).toEqual(expected);
  });

  it("gives the same events fed one byte at a time", () => {
    const cuts = Array.from({ length: buf.byteLength - 1 }, (_, k) => k + 1);
    expect(parseChunks(splitAt(buf, cuts))).toEqual(expected);
  });

  it("returns each event from the push that completes it", () => {
    const p = new SseParser();
    const perPush: number[] = [];
    for (let i = 0; i < buf.byteLength; i++) perPush.push(p.push(buf.subarray(i, i + 1)).length);
    expect(perPush.reduce((a, b) => a + b, 0)).toBe(expected.length);
    // The last complete event ends with the blank line "\r\n": it completes at that CR, not at the LF after it.
    const byteIndex = enc.encode(sample.slice(0, sample.lastIndexOf("\r\n"))).byteLength;
    expect(perPush[byteIndex]).toBe(1);
  });
});

describe("SseParser: BOM", () => {
  it("drops one leading BOM", () => {
    expect(parse("\uFEFFdata: x\n\n")).toEqual([{ event: "message", data: "x" }]);
  });

  it("drops a leading BOM split across chunks", () => {
    const b = bytes("\uFEFFdata: x\n\n");
    expect(parseChunks(splitAt(b, [1, 2]))).toEqual([{ event: "message", data: "x" }]);
  });

  it("keeps a second BOM, which turns the line into an unknown field", () => {
    expect(parse("\uFEFF\uFEFFdata: x\n\ndata: y\n\n")).toEqual([{ event: "message", data: "y" }]);
  });

  it("keeps a BOM that is not at the start of the stream", () => {
    expect(parse("data: y\n\n\uFEFFdata: x\n\n")).toEqual([{ event: "message", data: "y" }]);
    expect(parse("data: \uFEFFx\n\n")).toEqual([{ event: "message", data: "\uFEFFx" }]);
  });
});

describe("SseParser: fields", () => {
  it("ignores comment lines, including one alone and a bare ':'", () => {
    expect(parse(":\n: keepalive\n\ndata: a\n:between\ndata: b\n\n")).toEqual([{ event: "message", data: "a\nb" }]);
  });

  it("joins multi-line data with \\n", () => {
    expect(parse("data: one\ndata: two\ndata: three\n\n")).toEqual([{ event: "message", data: "one\ntwo\nthree" }]);
  });

  it("removes exactly one leading space after the colon", () => {
    expect(parse("data:x\n\n")).toEqual([{ event: "message", data: "x" }]);
    expect(parse("data:  x \n\n")).toEqual([{ event: "message", data: " x " }]);
    expect(parse("data:\tx\n\n")).toEqual([{ event: "message", data: "\tx" }]);
  });

  it("keeps colons after the first in the value", () => {
    expect(parse("data: a: b:c\n\n")).toEqual([{ event: "message", data: "a: b:c" }]);
  });

  it("treats a line without ':' as a field with an empty value", () => {
    expect(parse("data\n\n")).toEqual([{ event: "message", data: "" }]);
    expect(parse("data\ndata\n\n")).toEqual([{ event: "message", data: "\n" }]);
    expect(parse("event: x\nevent\ndata: a\n\n")).toEqual([{ event: "message", data: "a" }]);
  });

  it("dispatches an event whose data field is empty, but not one with no data field", () => {
    expect(parse("data:\n\n")).toEqual([{ event: "message", data: "" }]);
    expect(parse("event: x\n\nid: 7\n\n\n\n")).toEqual([]);
  });

  it("does not carry an event type from a block without data into the next event", () => {
    expect(parse("event: stale\n\ndata: a\n\n")).toEqual([{ event: "message", data: "a" }]);
  });

  it("ignores unknown fields and field names that differ in case or spacing", () => {
    expect(parse("foo: bar\nData: no\ndata : no\n data: no\ndata: yes\n\n")).toEqual([
      { event: "message", data: "yes" },
    ]);
  });

  it("uses the last event field of a block", () => {
    expect(parse("event: a\nevent: b\ndata: x\n\n")).toEqual([{ event: "b", data: "x" }]);
  });

  it("decodes invalid UTF-8 as U+FFFD", () => {
    const b = new Uint8Array([...bytes("data: a"), 0xff, 0xc3, ...bytes("b\n\n")]);
    expect(parse(b)).toEqual([{ event: "message", data: "a\uFFFD\uFFFDb" }]);
  });
});

describe("SseParser: id and retry", () => {
  it("keeps the last event ID across events until changed, and an empty id clears it", () => {
    expect(parse("id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\nid\ndata: d\n\nid:\ndata: e\n\n")).toEqual([
      { event: "message", data: "a", id: "1" },
      { event: "message", data: "b", id: "1" },
      { event: "message", data: "c", id: "2" },
      { event: "message", data: "d" },
      { event: "message", data: "e" },
    ]);
  });

  it("sets the last event ID even from a block that dispatches nothing", () => {
    const p = new SseParser();
    expect(parseChunks([bytes("id: 9\n\ndata: x\n\n")], p)).toEqual([{ event: "message", data: "x", id: "9" }]);
    expect(p.currentLastEventId).toBe("9");
  });

  it("ignores an id containing NUL", () => {
    expect(parse("id: 1\ndata: a\n\nid: 2\u00003\ndata: b\n\n")).toEqual([
      { event: "message", data: "a", id: "1" },
      { event: "message", data: "b", id: "1" },
    ]);
    expect(parse("id: \u0000\ndata: c\n\n")).toEqual([{ event: "message", data: "c" }]);
  });

  it("accepts retry made only of ASCII digits and ignores anything else", () => {
    expect(parse("retry: 3000\ndata: a\n\n")).toEqual([{ event: "message", data: "a", retry: 3000 }]);
    expect(parse("retry:0042\ndata: a\n\n")).toEqual([{ event: "message", data: "a", retry: 42 }]);
    for (const bad of ["10a", "-1", "1.5", "", " 5", "5 ", "+5", "１２", "1e3"]) {
      const p = new SseParser();
      expect(parseChunks([bytes(`retry: ${bad}\ndata: a\n\n`)], p), `retry: ${JSON.stringify(bad)}`).toEqual([
        { event: "message", data: "a" },
      ]);
      expect(p.reconnectionTime).toBeUndefined();
    }
  });

  it("keeps retry per block, and remembers a retry from a block without data", () => {
    const p = new SseParser();
    const events = parseChunks([bytes("retry: 100\n\ndata: a\n\nretry: 200\ndata: b\n\ndata: c\n\n")], p);
    expect(events).toEqual([
      { event: "message", data: "a" },
      { event: "message", data: "b", retry: 200 },
      { event: "message", data: "c" },
    ]);
    expect(p.reconnectionTime).toBe(200);
  });
});

describe("SseParser: end of stream", () => {
  it("discards an event not closed by a blank line", () => {
    expect(parse("data: a\n\ndata: b\n")).toEqual([{ event: "message", data: "a" }]);
    expect(parse("data: a\n\ndata: b")).toEqual([{ event: "message", data: "a" }]);
    expect(parse("data: a\n\ndata: b\r")).toEqual([{ event: "message", data: "a" }]);
  });

  it("discards a trailing partial multi-byte character", () => {
    const b = bytes("data: a\n\ndata: €");
    expect(parse(b.subarray(0, b.byteLength - 1))).toEqual([{ event: "message", data: "a" }]);
  });

  it("end() is idempotent and push() after end() throws", () => {
    const p = new SseParser();
    p.push(bytes("data: a\n"));
    expect(p.end()).toEqual([]);
    expect(p.end()).toEqual([]);
    expect(() => p.push(bytes("\n"))).toThrow(/after end/);
  });
});

describe("SseParser: size limit", () => {
  it("defaults to 16 MiB", () => {
    expect(DEFAULT_MAX_SSE_EVENT_BYTES).toBe(16 * 1024 * 1024);
  });

  it("rejects a bad limit", () => {
    expect(() => new SseParser({ maxEventBytes: 0 })).toThrow(RangeError);
    expect(() => new SseParser({ maxEventBytes: 1.5 })).toThrow(RangeError);
  });

  it("throws SseEventTooLargeError when one event's data lines pass the limit", () => {
    const p = new SseParser({ maxEventBytes: 20 });
    // 5 lines of "abc" = 5 * (3 + 1) = 20 bytes: at the limit, still fine.
    expect(p.push(bytes("data: abc\n".repeat(5)))).toEqual([]);
    let caught: unknown;
    try {
      p.push(bytes("data: a\n"));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SseEventTooLargeError);
    expect(caught).toMatchObject({ name: "SseEventTooLargeError", code: "ERR_SSE_EVENT_TOO_LARGE", limit: 20 });
    // The parser stays failed.
    expect(() => p.push(bytes("\n"))).toThrow(SseEventTooLargeError);
  });

  it("accepts an event exactly at the limit and resets the count after each event", () => {
    const p = new SseParser({ maxEventBytes: 8 });
    const out: SseEvent[] = [];
    for (let i = 0; i < 50; i++) out.push(...p.push(bytes("data: 1234567\n\n")));
    expect(out).toHaveLength(50);
    expect(out.every((e) => e.data === "1234567")).toBe(true);
  });

  it("counts UTF-8 bytes, not characters", () => {
    // "€€€" is 3 characters but 9 bytes (+1 for the line's LF).
    expect(parseChunks([bytes("data: €€€\n\n")], new SseParser({ maxEventBytes: 10 }))).toEqual([
      { event: "message", data: "€€€" },
    ]);
    expect(() => parseChunks([bytes("data: €€€\n\n")], new SseParser({ maxEventBytes: 9 }))).toThrow(
      SseEventTooLargeError,
    );
  });

  it("counts bytes exactly once an event nears the limit, whatever piece takes it there", () => {
    // Multi-byte text held as data lines and as a line still being read, cut inside characters.
    // Data: 61 + 61 bytes; at most 61 + 66 held at once (the second line, "data: " included, before its LF).
    const whole = bytes(`data: ${"€".repeat(20)}\ndata: ${"é".repeat(30)}\n\n`);
    for (let cut = 1; cut < whole.byteLength; cut++) {
      expect(parseChunks(splitAt(whole, [cut]), new SseParser({ maxEventBytes: 127 }))).toHaveLength(1);
      expect(() => parseChunks(splitAt(whole, [cut]), new SseParser({ maxEventBytes: 121 }))).toThrow(
        SseEventTooLargeError,
      );
    }
    // A long comment takes the count past a third of the limit; the events after it are still measured right.
    const p = new SseParser({ maxEventBytes: 9 });
    expect(p.push(bytes(`: ${"c".repeat(20)}\n\ndata: €€\n\n`))).toEqual([{ event: "message", data: "€€" }]);
    expect(() => p.push(bytes("data: €€€\n\n"))).toThrow(SseEventTooLargeError);
  });

  it("bounds a line that never ends, across many chunks", () => {
    const p = new SseParser({ maxEventBytes: 1000 });
    const chunk = bytes("x".repeat(100));
    expect(p.push(bytes("data: "))).toEqual([]);
    let pushed = 0;
    expect(() => {
      for (;;) {
        p.push(chunk);
        pushed++;
        if (pushed > 100) break;
      }
    }).toThrow(SseEventTooLargeError);
    expect(pushed).toBeLessThanOrEqual(10);
  });

  it("does not count comment lines and skipped fields toward the limit once their line has ended", () => {
    const p = new SseParser({ maxEventBytes: 16 });
    const out = [...p.push(bytes(`: ${"c".repeat(10)}\n`.repeat(100))), ...p.push(bytes("data: ok\n\n"))];
    expect(out).toEqual([{ event: "message", data: "ok" }]);
  });

  it("parses a large event delivered in many chunks", () => {
    const payload = "ab€".repeat(300_000); // 1.5 MB
    const whole = bytes(`data: ${payload}\ndata: 2\n\n`);
    const cuts: number[] = [];
    for (let c = 65_536; c < whole.byteLength; c += 65_536) cuts.push(c);
    expect(parseChunks(splitAt(whole, cuts))).toEqual([{ event: "message", data: `${payload}\n2` }]);
  });
});
