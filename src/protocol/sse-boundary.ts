// Tracks whether an SSE byte stream currently sits between two events, so that a
// keep-alive comment is only ever inserted where it cannot split an event.
// SSE ends a line with CRLF, LF or CR; an event ends at a blank line, i.e. two
// line terminators in a row. We keep the last few bytes across chunk borders.

const BOUNDARY_TAILS = ["\n\n", "\r\r", "\n\r", "\n\r\n", "\r\r\n"];

export class SseBoundaryTracker {
  private tail = "";
  private seenAny = false;

  observe(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.seenAny = true;
    const start = Math.max(0, chunk.byteLength - 4);
    // latin1 maps bytes 1:1, and CR/LF never occur inside multi-byte UTF-8 sequences.
    const piece = Buffer.from(chunk.buffer, chunk.byteOffset + start, chunk.byteLength - start).toString("latin1");
    this.tail = (this.tail + piece).slice(-4);
  }

  /** True before the first byte and right after a complete event. */
  get atBoundary(): boolean {
    if (!this.seenAny) return true;
    return BOUNDARY_TAILS.some((t) => this.tail.endsWith(t));
  }
}

/** The comment line sent on idle streams; SSE parsers ignore lines starting with ':'. */
export const SSE_KEEPALIVE = Buffer.from(": keepalive\n\n", "latin1");
