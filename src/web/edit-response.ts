// A Response with one JSON-RPC answer in its body edited (protocol/answer-edit.ts).
// The body is read whole: this serves tools/list pages, which are short and
// finite, never a call's open-ended stream. A body past the bound is refused
// (AnswerTooLargeError) rather than passed on unedited, so a denied tool can
// never slip through.
import { answerIn, editAnswerBody, sseAnswerComplete, type ResultEdit } from "../protocol/answer-edit.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import type { JsonObject } from "../protocol/json.js";
import { readBodyText } from "./read-text.js";

export { BodyTooLargeError as AnswerTooLargeError } from "./read-text.js";

/** The same status and headers (less the length, which changes), with the answer to `id` edited. */
export async function editResponse(res: Response, id: JsonRpcId, edit: ResultEdit, limit: number): Promise<Response> {
  if (!res.body) return res;
  const contentType = res.headers.get("content-type") ?? undefined;
  const sse = (contentType ?? "").toLowerCase().startsWith("text/event-stream");
  const text = editAnswerBody(
    await readBodyText(res.body, limit, sse ? (t) => sseAnswerComplete(t, id) : undefined),
    contentType,
    id,
    edit,
  );
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(text, { status: res.status, headers });
}

/** The answer to `id` in a response's body (JSON or SSE), read up to `limit` bytes; undefined when it holds none. */
export async function readAnswer(res: Response, id: JsonRpcId, limit: number): Promise<JsonObject | undefined> {
  const contentType = res.headers.get("content-type") ?? undefined;
  const sse = (contentType ?? "").toLowerCase().startsWith("text/event-stream");
  const text = await readBodyText(res.body, limit, sse ? (t) => sseAnswerComplete(t, id) : undefined);
  return answerIn(text, contentType, id);
}
