// A Response with one JSON-RPC answer in its body edited (protocol/answer-edit.ts).
// The body is read whole: this serves tools/list pages, which are short and
// finite, never a call's open-ended stream. A body past the bound is refused
// (AnswerTooLargeError) rather than passed on unedited, so a denied tool can
// never slip through.
import { editAnswerBody, sseAnswerComplete, type ResultEdit } from "../protocol/answer-edit.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";

export class AnswerTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the upstream's answer exceeds ${limit} bytes`);
    this.name = "AnswerTooLargeError";
  }
}

/**
 * Reads a web body into text, up to `limit` bytes. `complete` says when the
 * text already holds all that is needed (an event stream left open after its
 * answer); the rest of the stream is then cancelled.
 */
async function readText(body: ReadableStream<Uint8Array>, limit: number, complete?: (text: string) => boolean): Promise<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new AnswerTooLargeError(limit);
    }
    text += decoder.decode(value, { stream: true });
    if (complete?.(text)) {
      await reader.cancel();
      return text;
    }
  }
  return text + decoder.decode();
}

/** The same status and headers (less the length, which changes), with the answer to `id` edited. */
export async function editResponse(res: Response, id: JsonRpcId, edit: ResultEdit, limit: number): Promise<Response> {
  if (!res.body) return res;
  const contentType = res.headers.get("content-type") ?? undefined;
  const sse = (contentType ?? "").toLowerCase().startsWith("text/event-stream");
  const text = editAnswerBody(await readText(res.body, limit, sse ? (t) => sseAnswerComplete(t, id) : undefined), contentType, id, edit);
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(text, { status: res.status, headers });
}
