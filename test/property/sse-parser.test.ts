// Properties of the SSE parser (upstream/sse-parser.ts): a serialized stream yields its events however its bytes are
// cut into chunks; arbitrary bytes never throw and are read the same in one chunk or many; a line that never ends
// is refused once it passes the event limit, so the parser never holds much more than that.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SseEventTooLargeError, SseParser, type SseEvent } from "../../src/upstream/sse-parser.js";
import { chunked } from "../helpers/arbitraries.js";

const enc = new TextEncoder();

function parseChunks(chunks: readonly Uint8Array[], parser = new SseParser()): SseEvent[] {
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...parser.push(c));
  out.push(...parser.end());
  return out;
}

/** Text of a field value: any code point but CR and LF (which end a line). */
const fieldText = fc.string({ unit: "binary", maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, ""));

interface EventSpec {
  event: string | undefined;
  /** The data lines; an event with none dispatches nothing. */
  data: string[];
  /** undefined: no id field; "" resets the last event id. */
  id: string | undefined;
  retry: number | undefined;
  comments: string[];
}

const eventSpec: fc.Arbitrary<EventSpec> = fc.record({
  event: fc.option(fieldText, { nil: undefined }),
  data: fc.array(fieldText, { maxLength: 4 }),
  id: fc.option(
    fieldText.map((s) => s.replace(/\0/g, "")),
    { nil: undefined },
  ),
  retry: fc.option(fc.nat(), { nil: undefined }),
  comments: fc.array(fieldText, { maxLength: 2 }),
});

const EOLS = ["\n", "\r\n", "\r"] as const;

/**
 * The stream's text, one line ending drawn per line. A CR followed by a blank line's LF would read as one CRLF,
 * so a blank line after a CR ends with CRLF or CR instead.
 */
function serialize(events: readonly EventSpec[], eols: readonly number[], bom: boolean, space: boolean): string {
  let text = bom ? "\ufeff" : "";
  let n = 0;
  let previous = "";
  const line = (content: string): void => {
    let eol: string = EOLS[(eols[n++ % eols.length] ?? 0) % 3] as string;
    if (content === "" && previous === "\r" && eol === "\n") eol = "\r\n";
    text += content + eol;
    previous = eol;
  };
  // One space after the colon is dropped by the parser: written when asked, and always before a value that starts
  // with a space itself.
  const field = (name: string, value: string): string => `${name}:${space || value.startsWith(" ") ? " " : ""}${value}`;
  for (const e of events) {
    for (const c of e.comments) line(`:${c}`);
    if (e.event !== undefined) line(field("event", e.event));
    if (e.id !== undefined) line(field("id", e.id));
    if (e.retry !== undefined) line(field("retry", String(e.retry)));
    for (const d of e.data) line(field("data", d));
    line("");
  }
  return text;
}

/** The events a spec-following parser yields for `events`. */
function expected(events: readonly EventSpec[]): SseEvent[] {
  const out: SseEvent[] = [];
  let lastId = "";
  for (const e of events) {
    if (e.id !== undefined) lastId = e.id;
    if (e.data.length === 0) continue;
    const ev: SseEvent = {
      event: e.event === undefined || e.event === "" ? "message" : e.event,
      data: e.data.join("\n"),
    };
    if (lastId !== "") ev.id = lastId;
    if (e.retry !== undefined) ev.retry = e.retry;
    out.push(ev);
  }
  return out;
}

describe("SseParser (properties)", () => {
  it("yields the serialized events, however the stream's bytes are cut into chunks", () => {
    const stream = fc
      .record({
        events: fc.array(eventSpec, { maxLength: 8 }),
        eols: fc.array(fc.nat({ max: 2 }), { minLength: 1, maxLength: 8 }),
        bom: fc.boolean(),
        space: fc.boolean(),
      })
      .chain((s) => {
        const bytes = enc.encode(serialize(s.events, s.eols, s.bom, s.space));
        return fc.tuple(fc.constant(s.events), chunked(bytes));
      });
    fc.assert(
      fc.property(stream, ([events, chunks]) => {
        expect(parseChunks(chunks)).toEqual(expected(events));
      }),
      { numRuns: 500 },
    );
  });

  it("never throws on arbitrary bytes, and reads them the same in one chunk or in many", () => {
    // Bytes rich in what the parser looks at: line ends, colons, field names, multi-byte and invalid UTF-8.
    const piece = fc.oneof(
      fc.uint8Array({ maxLength: 16 }),
      fc
        .constantFrom(
          "\r",
          "\n",
          "\r\n",
          ":",
          "data:",
          "data: x",
          "event:e",
          "id:1",
          "retry:5",
          "\ufeff",
          "é",
          "\u{1f600}",
        )
        .map((s) => enc.encode(s)),
      fc.constantFrom(Uint8Array.of(0xe2, 0x82), Uint8Array.of(0xff), Uint8Array.of(0xf0, 0x9f)),
    );
    const input = fc
      .array(piece, { maxLength: 40 })
      .map((parts) => Buffer.concat(parts))
      .chain((bytes) => fc.tuple(fc.constant(bytes), chunked(bytes)));
    fc.assert(
      fc.property(input, ([bytes, chunks]) => {
        const whole = parseChunks([bytes]);
        expect(parseChunks(chunks)).toEqual(whole);
        for (const e of whole) {
          expect(typeof e.event).toBe("string");
          expect(typeof e.data).toBe("string");
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("refuses a line that never ends once it passes the limit, having held little more than the limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4_096 }),
        fc.constantFrom("data: ", "", ": ", "event: "),
        fc.array(fc.integer({ min: 1, max: 1_024 }), { minLength: 1, maxLength: 64 }),
        fc.constantFrom("x", "é", "\u{1f600}"),
        (limit, lead, sizes, char) => {
          const parser = new SseParser({ maxEventBytes: limit });
          let fed = 0;
          let first = true;
          for (let i = 0; ; i++) {
            const size = sizes[i % sizes.length] as number;
            const chunk = enc.encode((first ? lead : "") + char.repeat(size));
            first = false;
            try {
              expect(parser.push(chunk)).toEqual([]);
            } catch (err) {
              expect(err).toBeInstanceOf(SseEventTooLargeError);
              // Held before the last chunk: within the limit.
              expect(fed).toBeLessThanOrEqual(limit);
              // And the parser stays refused.
              expect(() => parser.push(enc.encode("\n\n"))).toThrow(SseEventTooLargeError);
              return;
            }
            fed += chunk.byteLength;
            // It must have refused by now.
            expect(fed).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
