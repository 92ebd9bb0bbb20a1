// Reads a client's request body with a hard byte limit, stopping as soon as the
// limit is passed so an oversized or endless body cannot grow memory.

import type { Readable } from "node:stream";

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: "too_large" | "aborted" };

export async function readLimitedBody(
  source: AsyncIterable<Uint8Array>,
  limit: number,
  declaredLength: string | undefined,
): Promise<BodyResult> {
  if (declaredLength !== undefined) {
    const n = Number(declaredLength);
    if (Number.isFinite(n) && n > limit) return { ok: false, reason: "too_large" };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source) {
      size += chunk.byteLength;
      if (size > limit) return { ok: false, reason: "too_large" };
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  } catch {
    return { ok: false, reason: "aborted" };
  }
  return { ok: true, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) };
}

/**
 * The same for a Node request stream, with plain events: a for-await loop over
 * a Readable builds an async iterator per request, which showed in CPU profiles.
 */
export function readNodeBody(
  incoming: Readable,
  limit: number,
  declaredLength: string | undefined,
): Promise<BodyResult> {
  return new Promise((resolve) => readNodeBodyThen(incoming, limit, declaredLength, resolve, undefined));
}

/** A body being read by readNodeBodyThen, kept on its stream. */
interface Reading<T> {
  chunks: Buffer[];
  size: number;
  limit: number;
  done: (result: BodyResult, context: T) => void;
  context: T;
}

const READING = Symbol("limited-body reading");
/** The stream has this module's listeners already (from an earlier read of it). */
const LISTENING = Symbol("limited-body listening");
type ReadStream = Readable & { [READING]?: Reading<unknown> | undefined; [LISTENING]?: true };

// The listeners are module functions, with the read's state on the stream: a poll creates no closures
// here (under tsx each closure also cost a __name call: 3.7 % of a poll's CPU in issue 27's profile).
// A finished read leaves them on the stream, where they find no read and return: removing four listeners
// was a fifth of this module's cost per poll, for a stream that is done with (and a later read of the same
// stream finds them there, so they are never added twice).
function finishRead(stream: ReadStream, result: BodyResult): void {
  const reading = stream[READING];
  if (reading === undefined) return;
  stream[READING] = undefined;
  reading.done(result, reading.context);
}

function onReadData(this: ReadStream, chunk: Buffer): void {
  const reading = this[READING];
  if (reading === undefined) return;
  reading.size += chunk.byteLength;
  if (reading.size > reading.limit) {
    // Stop reading: the rest of an oversized body is never buffered.
    this.pause();
    finishRead(this, { ok: false, reason: "too_large" });
    return;
  }
  reading.chunks.push(chunk);
}

function onReadEnd(this: ReadStream): void {
  const reading = this[READING];
  if (reading === undefined) return;
  const { chunks, size } = reading;
  finishRead(this, { ok: true, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) });
}

function onReadError(this: ReadStream): void {
  finishRead(this, { ok: false, reason: "aborted" });
}

function onReadClose(this: ReadStream): void {
  if (!this.readableEnded) finishRead(this, { ok: false, reason: "aborted" });
}

/**
 * readNodeBody with a callback, for the lean tasks/get path: no promise between the body's last chunk and
 * the answer, and no closure per request (`context` is handed back to `done`). `done` is called once, at
 * once when the declared length is already over the limit.
 */
export function readNodeBodyThen<T>(
  incoming: Readable,
  limit: number,
  declaredLength: string | undefined,
  done: (result: BodyResult, context: T) => void,
  context: T,
): void {
  if (declaredLength !== undefined) {
    const n = Number(declaredLength);
    if (Number.isFinite(n) && n > limit) {
      done({ ok: false, reason: "too_large" }, context);
      return;
    }
  }
  const stream = incoming as ReadStream;
  stream[READING] = { chunks: [], size: 0, limit, done: done as Reading<unknown>["done"], context };
  if (stream[LISTENING]) return;
  stream[LISTENING] = true;
  stream.on("data", onReadData);
  stream.on("end", onReadEnd);
  stream.on("error", onReadError);
  stream.on("close", onReadClose);
}
