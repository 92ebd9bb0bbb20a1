import { describe, expect, it } from "vitest";
import { SSE_KEEPALIVE, SseBoundaryTracker } from "../../src/protocol/sse-boundary.js";

interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * A small reference SSE parser (WHATWG "event stream interpretation"): lines end
 * with CRLF, LF or CR; a blank line dispatches; lines starting with ':' are comments.
 * The last, unterminated line is ignored.
 */
function parseEvents(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop();
  let data: string[] = [];
  let event = "";
  let id: string | undefined;
  for (const line of lines) {
    if (line === "") {
      if (data.length > 0) events.push({ event: event || "message", data: data.join("\n"), id });
      data = [];
      event = "";
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
    else if (field === "id") id = value;
  }
  return events;
}

/** Each frame is one complete event, blank line included. */
const STREAMS: Record<string, string[]> = {
  LF: [
    'event: progress\ndata: {"progress":1}\nid: 1\n\n',
    "data: first line\ndata: second line\n\n",
    ": a comment-only frame\n\n",
    'data: {"text":"héllo ✓ 🚀"}\n\n',
  ],
  CRLF: [
    'event: progress\r\ndata: {"progress":1}\r\nid: 1\r\n\r\n',
    "data: first line\r\ndata: second line\r\n\r\n",
    ": a comment-only frame\r\n\r\n",
    'data: {"text":"héllo ✓ 🚀"}\r\n\r\n',
  ],
  CR: [
    'event: progress\rdata: {"progress":1}\rid: 1\r\r',
    "data: first line\rdata: second line\r\r",
    ": a comment-only frame\r\r",
    'data: {"text":"héllo ✓ 🚀"}\r\r',
  ],
  mixed: [
    "data: a\r\n\n",
    "data: b\n\r\n",
    "data: c\r\r\n",
    "data: d\n\r",
    "data: e\r\n\r",
    "data: f\ndata: g\r\n\r\n",
  ],
};

function streamBytes(frames: readonly string[]): { bytes: Buffer; eventEnds: Set<number> } {
  const eventEnds = new Set<number>([0]);
  let offset = 0;
  for (const frame of frames) {
    offset += Buffer.byteLength(frame, "utf8");
    eventEnds.add(offset);
  }
  return { bytes: Buffer.from(frames.join(""), "utf8"), eventEnds };
}

function insertionIsHarmless(bytes: Buffer, at: number): boolean {
  const original = parseEvents(bytes.toString("utf8"));
  const spliced = Buffer.concat([bytes.subarray(0, at), SSE_KEEPALIVE, bytes.subarray(at)]).toString("utf8");
  return JSON.stringify(parseEvents(spliced)) === JSON.stringify(original);
}

describe("reference parser sanity", () => {
  it("parses every stream variant into the same events", () => {
    const lf = parseEvents(streamBytes(STREAMS.LF ?? []).bytes.toString("utf8"));
    expect(lf).toHaveLength(3);
    expect(parseEvents(streamBytes(STREAMS.CRLF ?? []).bytes.toString("utf8"))).toEqual(lf);
    expect(parseEvents(streamBytes(STREAMS.CR ?? []).bytes.toString("utf8"))).toEqual(lf);
    expect(parseEvents(streamBytes(STREAMS.mixed ?? []).bytes.toString("utf8")).map((e) => e.data)).toEqual([
      "a",
      "b",
      "c",
      "d",
      "e",
      "f\ng",
    ]);
  });

  it("detects a harmful insertion", () => {
    // Inside an event, the keep-alive's blank line would dispatch it early.
    expect(insertionIsHarmless(Buffer.from("data: a\ndata: b\n\n"), 8)).toBe(false);
    expect(insertionIsHarmless(Buffer.from("data: a\ndata: b\n\n"), 3)).toBe(false);
  });
});

describe("SseBoundaryTracker", () => {
  it("is at a boundary before the first byte, and empty chunks change nothing", () => {
    const t = new SseBoundaryTracker();
    expect(t.atBoundary).toBe(true);
    t.observe(new Uint8Array(0));
    expect(t.atBoundary).toBe(true);
    t.observe(Buffer.from("data: x"));
    expect(t.atBoundary).toBe(false);
    t.observe(new Uint8Array(0));
    expect(t.atBoundary).toBe(false);
    t.observe(Buffer.from("\n\n"));
    expect(t.atBoundary).toBe(true);
  });

  it.each([
    ["LF", "data: x\n\n"],
    ["CRLF", "data: x\r\n\r\n"],
    ["CR", "data: x\r\r"],
  ])("recognises the end of an event terminated with %s, and not before", (_name, frame) => {
    const t = new SseBoundaryTracker();
    const bytes = Buffer.from(frame);
    t.observe(bytes);
    expect(t.atBoundary).toBe(true);
    const mid = new SseBoundaryTracker();
    mid.observe(bytes.subarray(0, "data: x".length + 1));
    expect(mid.atBoundary).toBe(false);
    mid.observe(Buffer.from("data: y"));
    expect(mid.atBoundary).toBe(false);
  });

  it("leaves the boundary as soon as the next event starts", () => {
    const t = new SseBoundaryTracker();
    t.observe(Buffer.from("data: 1\n\n"));
    expect(t.atBoundary).toBe(true);
    t.observe(Buffer.from("d"));
    expect(t.atBoundary).toBe(false);
  });

  it("reads only the view it is given", () => {
    const whole = Buffer.from("data: x\n\nGARBAGE");
    const t = new SseBoundaryTracker();
    t.observe(new Uint8Array(whole.buffer, whole.byteOffset, 9));
    expect(t.atBoundary).toBe(true);
    const u = new SseBoundaryTracker();
    u.observe(new Uint8Array(whole.buffer, whole.byteOffset + 9, 7));
    expect(u.atBoundary).toBe(false);
  });

  for (const [name, frames] of Object.entries(STREAMS)) {
    describe(`${name} stream, every split point`, () => {
      const { bytes, eventEnds } = streamBytes(frames);

      it("byte-at-a-time: at a boundary after every complete event, and only where a comment is harmless", () => {
        const t = new SseBoundaryTracker();
        for (let i = 0; i <= bytes.length; i++) {
          if (i > 0) t.observe(bytes.subarray(i - 1, i));
          if (eventEnds.has(i)) expect(t.atBoundary, `after byte ${i}`).toBe(true);
          if (t.atBoundary) expect(insertionIsHarmless(bytes, i), `comment at byte ${i}`).toBe(true);
        }
      });

      it("two chunks split at every position agree with byte-at-a-time", () => {
        const reference: boolean[] = [];
        const ref = new SseBoundaryTracker();
        reference.push(ref.atBoundary);
        for (let i = 1; i <= bytes.length; i++) {
          ref.observe(bytes.subarray(i - 1, i));
          reference.push(ref.atBoundary);
        }
        for (let split = 0; split <= bytes.length; split++) {
          const t = new SseBoundaryTracker();
          t.observe(bytes.subarray(0, split));
          expect(t.atBoundary, `first chunk ends at ${split}`).toBe(reference[split]);
          t.observe(bytes.subarray(split));
          expect(t.atBoundary, `second chunk after split ${split}`).toBe(true);
        }
      });

      it("three chunks split at every pair of positions end at a boundary exactly when the reference does", () => {
        const reference = new SseBoundaryTracker();
        const at: boolean[] = [true];
        for (let i = 1; i <= bytes.length; i++) {
          reference.observe(bytes.subarray(i - 1, i));
          at.push(reference.atBoundary);
        }
        for (let a = 0; a <= bytes.length; a++) {
          for (let b = a; b <= bytes.length; b++) {
            const t = new SseBoundaryTracker();
            t.observe(bytes.subarray(0, a));
            t.observe(bytes.subarray(a, b));
            if (t.atBoundary !== at[b]) expect.fail(`chunks [0,${a}) [${a},${b}): got ${t.atBoundary}, want ${at[b]}`);
            t.observe(bytes.subarray(b));
            if (!t.atBoundary) expect.fail(`chunks split at ${a}, ${b}: stream end not seen as a boundary`);
          }
        }
      });
    });
  }
});

describe("SSE_KEEPALIVE", () => {
  it("is a comment followed by a blank line, which SSE parsers ignore", () => {
    expect(SSE_KEEPALIVE.toString("latin1")).toMatch(/^:[^\r\n]*\n\n$/);
    expect(parseEvents(SSE_KEEPALIVE.toString("utf8"))).toEqual([]);
    const t = new SseBoundaryTracker();
    t.observe(SSE_KEEPALIVE);
    expect(t.atBoundary).toBe(true);
  });
});
