// Newline-delimited JSON, as the stdio transport frames it: one JSON-RPC message
// per line, no embedded newlines. The reader keeps at most maxLineBytes of an
// unfinished line; a longer one is a framing fault (the session is ended), never
// an unbounded buffer.

export class LineTooLongError extends Error {
  override readonly name = "LineTooLongError";
  constructor(readonly limit: number) {
    super(`wrote a line longer than upstream.maxLineBytes (${limit} bytes)`);
  }
}

const NEWLINE = 0x0a;

export class LineReader {
  private parts: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** The complete lines in `chunk` (with what was buffered before), without their newline. Throws LineTooLongError. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      if (this.buffered + piece.length > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes);
      const line = this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]);
      this.parts = [];
      this.buffered = 0;
      lines.push(stripCr(line.toString("utf8")));
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.buffered + rest.length > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes);
      this.parts.push(rest);
      this.buffered += rest.length;
    }
    return lines;
  }

  /** Bytes of an unfinished line. */
  get pending(): number {
    return this.buffered;
  }
}

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

export type ParsedLine =
  { kind: "message"; message: Record<string, unknown> } | { kind: "blank" } | { kind: "garbage"; why: string };

/** A line from a stdio server's stdout: a JSON-RPC message (or batch member list), blank, or garbage to log and skip. */
export function parseLine(line: string): ParsedLine {
  if (line.trim() === "") return { kind: "blank" };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { kind: "garbage", why: "not JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { kind: "garbage", why: "not a JSON-RPC message object" };
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return { kind: "garbage", why: 'no "jsonrpc": "2.0"' };
  const hasMethod = typeof message.method === "string";
  const hasId = typeof message.id === "string" || typeof message.id === "number";
  const isResponse = hasId && ("result" in message || "error" in message);
  if (!hasMethod && !isResponse) return { kind: "garbage", why: "neither a request, a notification nor a response" };
  return { kind: "message", message };
}
