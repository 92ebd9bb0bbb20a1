// An incremental Server-Sent Events parser following the WHATWG HTML
// "Interpreting an event stream" rules, for reading upstream SSE answers
// (fed by sse-reader.ts from a body's 'data' events).
//
// - Bytes are decoded with one streaming UTF-8 TextDecoder, so a multi-byte
//   sequence split across chunks decodes correctly, one leading BOM is dropped
//   (only the very first, as the spec says) and invalid bytes become U+FFFD.
// - Lines end with CRLF, LF or CR. A CR that ends a chunk ends the line at once;
//   an LF at the start of the next chunk is then swallowed as its CRLF partner.
// - An incomplete line is kept as a list of pieces, and each chunk is scanned
//   only once, so a long line spread over many chunks costs linear time.
// - Memory is bounded: the data of one event plus the line still being read may
//   not exceed `maxEventBytes` (UTF-8 bytes); past that, SseEventTooLargeError.
//   Bytes are counted only once an event could reach the limit (UTF-8 takes at
//   most 3 bytes per UTF-16 unit): measuring every line cost a quarter of the
//   parser's time on 1 KB events (bench/sse-parser.ts).

export interface SseEvent {
  /** The event type; "message" when the event named none (or an empty one). */
  event: string;
  /** The data lines of the event, joined with "\n". */
  data: string;
  /**
   * The last event ID at dispatch time (spec semantics: it persists across
   * events until another `id` field changes it); undefined while it is empty.
   */
  id?: string | undefined;
  /** The reconnection time (ms) set by a valid `retry` field in this event's block, if any. */
  retry?: number | undefined;
}

export interface SseParserOptions {
  /** Upper bound, in UTF-8 bytes, on one event's data plus the line being read. Default 16 MiB. */
  maxEventBytes?: number;
}

export const DEFAULT_MAX_SSE_EVENT_BYTES = 16 * 1024 * 1024;

export class SseEventTooLargeError extends Error {
  override readonly name = "SseEventTooLargeError";
  readonly code = "ERR_SSE_EVENT_TOO_LARGE";
  constructor(readonly limit: number) {
    super(`SSE event exceeds the limit of ${limit} bytes`);
  }
}

const LF = 10;
const DIGITS = /^[0-9]+$/;

export class SseParser {
  private readonly maxEventBytes: number;
  private readonly decoder = new TextDecoder("utf-8");
  /** Pieces of the line being read (no terminator seen yet). */
  private pending: string[] = [];
  /** Sizes of the line being read and of the event's data: UTF-16 units, and UTF-8 bytes once `exact`. */
  private pendingUnits = 0;
  private pendingBytes = 0;
  /** The previous chunk ended with CR: an LF at the start of the next one belongs to it. */
  private skipLF = false;
  private dataLines: string[] = [];
  private dataUnits = 0;
  private dataBytes = 0;
  /** The event has grown past maxEventBytes / 3 units: its bytes are counted from now on. */
  private exact = false;
  private eventType = "";
  private lastEventId = "";
  private blockRetry: number | undefined = undefined;
  private reconnection: number | undefined = undefined;
  private ended = false;
  private failed: SseEventTooLargeError | undefined = undefined;

  constructor(options: SseParserOptions = {}) {
    const max = options.maxEventBytes ?? DEFAULT_MAX_SSE_EVENT_BYTES;
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`maxEventBytes must be a positive integer, got ${String(max)}`);
    this.maxEventBytes = max;
  }

  /** The current last event ID ("" when none), per the spec's "last event ID string". */
  get currentLastEventId(): string {
    return this.lastEventId;
  }

  /** The reconnection time (ms) from the last valid `retry` field, even one in a block that dispatched nothing. */
  get reconnectionTime(): number | undefined {
    return this.reconnection;
  }

  /** Feed raw bytes; returns the events completed by this chunk. */
  push(chunk: Uint8Array): SseEvent[] {
    if (this.failed) throw this.failed;
    if (this.ended) throw new Error("SseParser: push() after end()");
    const out: SseEvent[] = [];
    if (chunk.byteLength === 0) return out;
    const text = this.decoder.decode(chunk, { stream: true });
    try {
      this.feed(text, out);
    } catch (err) {
      if (err instanceof SseEventTooLargeError) this.failed = err;
      throw err;
    }
    return out;
  }

  /**
   * End of stream. Per the spec, an event not yet terminated by a blank line
   * (including a final line without a line terminator) is discarded, so this
   * never yields events; it returns an array for symmetry with push().
   */
  end(): SseEvent[] {
    if (this.failed) throw this.failed;
    if (this.ended) return [];
    this.ended = true;
    this.decoder.decode(); // flush and reset the decoder; anything left is part of the discarded tail
    this.pending = [];
    this.pendingUnits = 0;
    this.pendingBytes = 0;
    this.resetData();
    this.eventType = "";
    this.blockRetry = undefined;
    return [];
  }

  private feed(text: string, out: SseEvent[]): void {
    const n = text.length;
    if (n === 0) return; // e.g. only part of a multi-byte sequence arrived; skipLF stays as it is
    let pos = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (text.charCodeAt(0) === LF) pos = 1;
    }
    let cr = text.indexOf("\r", pos);
    let lf = text.indexOf("\n", pos);
    while (cr !== -1 || lf !== -1) {
      const isCr = cr !== -1 && (lf === -1 || cr < lf);
      const end = isCr ? cr : lf;
      let next = end + 1;
      if (isCr) {
        if (next < n) {
          if (text.charCodeAt(next) === LF) next++;
        } else {
          this.skipLF = true;
        }
      }
      let line: string;
      if (this.pending.length > 0) {
        this.pending.push(text.slice(pos, end));
        line = this.pending.join("");
        this.pending = [];
        this.pendingUnits = 0;
        this.pendingBytes = 0;
      } else {
        line = text.slice(pos, end);
      }
      this.processLine(line, out);
      pos = next;
      if (cr !== -1 && cr < pos) cr = text.indexOf("\r", pos);
      if (lf !== -1 && lf < pos) lf = text.indexOf("\n", pos);
    }
    if (pos < n) {
      const rest = pos === 0 ? text : text.slice(pos);
      this.pending.push(rest);
      this.pendingUnits += rest.length;
      if (this.exact) this.pendingBytes += Buffer.byteLength(rest, "utf8");
      this.checkSize();
    }
  }

  private checkSize(): void {
    if (!this.exact) {
      if ((this.dataUnits + this.pendingUnits) * 3 <= this.maxEventBytes) return;
      // Once per event at most: measure what is held, then each piece as it comes.
      this.exact = true;
      this.dataBytes = 0;
      for (const line of this.dataLines) this.dataBytes += Buffer.byteLength(line, "utf8") + 1;
      this.pendingBytes = 0;
      for (const piece of this.pending) this.pendingBytes += Buffer.byteLength(piece, "utf8");
    }
    if (this.dataBytes + this.pendingBytes > this.maxEventBytes) throw new SseEventTooLargeError(this.maxEventBytes);
  }

  private resetData(): void {
    this.dataLines = [];
    this.dataUnits = 0;
    this.dataBytes = 0;
    this.exact = false;
  }

  private processLine(line: string, out: SseEvent[]): void {
    if (line.length === 0) {
      this.dispatch(out);
      return;
    }
    const colon = line.indexOf(":");
    if (colon === 0) return; // comment
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      const start = line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1;
      value = line.slice(start);
    }
    switch (field) {
      case "data":
        // The data buffer gets value + LF per line; the final LF is dropped at dispatch.
        this.dataUnits += value.length + 1;
        if (this.exact) this.dataBytes += Buffer.byteLength(value, "utf8") + 1;
        this.dataLines.push(value);
        this.checkSize();
        break;
      case "event":
        this.eventType = value;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (DIGITS.test(value)) {
          this.blockRetry = Number(value);
          this.reconnection = this.blockRetry;
        }
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    const retry = this.blockRetry;
    this.blockRetry = undefined;
    if (this.dataLines.length === 0) {
      this.eventType = "";
      this.exact = false; // a long comment or field may have set it
      return;
    }
    const data = this.dataLines.length === 1 ? (this.dataLines[0] as string) : this.dataLines.join("\n");
    const event: SseEvent = { event: this.eventType === "" ? "message" : this.eventType, data };
    if (this.lastEventId !== "") event.id = this.lastEventId;
    if (retry !== undefined) event.retry = retry;
    out.push(event);
    this.resetData();
    this.eventType = "";
  }
}
