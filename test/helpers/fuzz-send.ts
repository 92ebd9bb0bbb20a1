// Sends the fuzz run's requests (fuzz-cases.ts) and says what came back, within a deadline: an answer (status,
// headers, and the body if it ended), a closed connection, or nothing (a hang). undici for what it can send, raw
// sockets for the rest.
import { connect } from "node:net";
import { request, type Dispatcher } from "undici";
import { bodyBytes, REAL_SESSION, type HttpCase, type RawCase } from "./fuzz-cases.js";

export interface Outcome {
  /** answered: a status came; closed: the connection closed with none; hang: neither within the deadline. */
  kind: "answered" | "closed" | "hang" | "not sent";
  status?: number | undefined;
  headers?: Record<string, string | string[] | undefined> | undefined;
  /** The whole body, when it ended (event streams are read for a while, then left). */
  body?: Buffer | undefined;
  /** complete; open: an event stream still going when the client left it; stalled: a body that did not end in time; cut. */
  bodyState?: "complete" | "open" | "stalled" | "cut" | undefined;
  error?: string | undefined;
}

export interface SendLimits {
  /** For the status (and the whole body, unless it is an event stream). */
  deadlineMs: number;
  /** How long an event stream is read before the client leaves it. */
  streamReadMs: number;
  /** Most body bytes kept (the rest is read and dropped). */
  keepBytes: number;
}

function codeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  if (typeof e.code === "string") return e.code;
  if (typeof e.cause?.code === "string") return e.cause.code;
  return typeof e.name === "string" ? e.name : "unknown";
}

const NOT_SENT = new Set(["UND_ERR_INVALID_ARG", "UND_ERR_NOT_SUPPORTED", "ERR_INVALID_ARG_TYPE", "ERR_INVALID_CHAR"]);

const isEventStream = (headers: Record<string, string | string[] | undefined>): boolean =>
  String(headers["content-type"] ?? "")
    .toLowerCase()
    .startsWith("text/event-stream");

export async function sendHttp(
  c: HttpCase,
  origin: string,
  session: string,
  dispatcher: Dispatcher,
  limits: SendLimits,
): Promise<Outcome> {
  const deadline = AbortSignal.timeout(limits.deadlineMs);
  const headers = c.headers.flatMap(([name, value]) => [name, value === REAL_SESSION ? session : value]);
  let res: Dispatcher.ResponseData;
  try {
    res = await request(origin + c.path, {
      method: c.method,
      headers,
      body: c.body === undefined ? undefined : bodyBytes(c.body),
      signal: deadline,
      dispatcher,
    });
  } catch (err) {
    const code = codeOf(err);
    if (deadline.aborted) return { kind: "hang", error: code };
    if (NOT_SENT.has(code)) return { kind: "not sent", error: code };
    // Connection closed (or a response undici could not read, noted by its code).
    return { kind: "closed", error: code };
  }
  const answered = { kind: "answered" as const, status: res.statusCode, headers: res.headers };
  const stream = isEventStream(res.headers);
  const leave = stream ? setTimeout(() => res.body.destroy(), limits.streamReadMs) : undefined;
  const chunks: Buffer[] = [];
  let kept = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (kept < limits.keepBytes) chunks.push(chunk);
      kept += chunk.length;
    }
    return { ...answered, body: Buffer.concat(chunks), bodyState: "complete" };
  } catch (err) {
    if (stream && !deadline.aborted) return { ...answered, bodyState: "open" };
    if (deadline.aborted) return { ...answered, bodyState: stream ? "open" : "stalled", error: codeOf(err) };
    return { ...answered, bodyState: "cut", error: codeOf(err) };
  } finally {
    clearTimeout(leave);
  }
}

interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** The first final (non-1xx) response in `bytes`; body undefined until it is all there. */
function parseResponse(bytes: Buffer, closed: boolean): ParsedResponse | undefined {
  let at = 0;
  for (;;) {
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end === -1) return undefined;
    const lines = bytes.subarray(at, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? NaN);
    if (Number.isNaN(status)) return undefined;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = bytes.subarray(end + 4);
    if (status < 200) {
      at = end + 4;
      continue;
    }
    const length = headers["content-length"];
    if (length !== undefined) {
      const n = Number(length);
      return { status, headers, body: rest.length >= n ? rest.subarray(0, n) : undefined };
    }
    if ((headers["transfer-encoding"] ?? "").toLowerCase().includes("chunked")) {
      return { status, headers, body: dechunk(rest) };
    }
    if (status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
    return { status, headers, body: closed ? rest : undefined };
  }
}

function dechunk(bytes: Buffer): Buffer | undefined {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = bytes.indexOf("\r\n", at);
    if (eol === -1) return undefined;
    const size = parseInt(bytes.subarray(at, eol).toString("latin1"), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(out);
    if (bytes.length < eol + 2 + size + 2) return undefined;
    out.push(bytes.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** A raw request on its own connection: read until the first answer is whole, the connection closes, or the deadline. */
export function sendRaw(c: RawCase, port: number, session: string, limits: SendLimits): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (closed: boolean, timedOut: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(leave);
      socket.destroy();
      const bytes = Buffer.concat(chunks);
      const parsed = parseResponse(bytes, closed);
      if (!parsed) {
        if (timedOut) resolve({ kind: size > 0 ? "answered" : "hang", error: `${size} bytes, no status line` });
        else resolve({ kind: "closed", error: size > 0 ? `${size} bytes, no status line` : undefined });
        return;
      }
      const stream = isEventStream(parsed.headers);
      resolve({
        kind: "answered",
        status: parsed.status,
        headers: parsed.headers,
        body: parsed.body,
        bodyState: parsed.body ? "complete" : stream ? "open" : timedOut ? "stalled" : "cut",
      });
    };
    const timer = setTimeout(() => finish(false, true), limits.deadlineMs);
    let leave: NodeJS.Timeout | undefined;
    socket.on("data", (chunk: Buffer) => {
      if (size < limits.keepBytes) chunks.push(chunk);
      size += chunk.length;
      const parsed = parseResponse(Buffer.concat(chunks), false);
      if (parsed?.body) finish(false, false);
      // An event stream is read for a while, then left.
      else if (parsed && isEventStream(parsed.headers))
        leave ??= setTimeout(() => finish(false, false), limits.streamReadMs);
    });
    socket.once("error", () => finish(true, false));
    socket.once("close", () => finish(true, false));
    socket.once("connect", () => {
      socket.write(c.build(`127.0.0.1:${port}`, session));
      if (c.halfClose) socket.end();
    });
  });
}
