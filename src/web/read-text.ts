// Reading a web body whole, as text, under a byte bound: for the few answers
// the gateway must read to the end (a tools/list page to filter, a JWKS).
// Anything past the bound is refused, never truncated.

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the body exceeds ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * The body as UTF-8 text, up to `limit` bytes (BodyTooLargeError past it).
 * `complete` says when the text already holds all that is needed (an event
 * stream left open after its answer); the rest of the stream is then cancelled.
 */
export async function readBodyText(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  complete?: (text: string) => boolean,
): Promise<string> {
  if (!body) return "";
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLargeError(limit);
    }
    text += decoder.decode(value, { stream: true });
    if (complete?.(text)) {
      await reader.cancel().catch(() => {});
      return text;
    }
  }
  return text + decoder.decode();
}
