// One JSON-RPC answer edited in a response that may be a call's open-ended event stream: each SSE event is
// passed on as soon as it is complete (progress, logs and input requests arrive as they happen), the answer
// edited on its way. A JSON body is read whole (bounded) and edited, as web/edit-response.ts does.
// Used by a federated endpoint to put its task handles in place of an upstream's own task ids.
import { editAnswerBody, type ResultEdit } from "../protocol/answer-edit.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { editResponse } from "../web/edit-response.js";

const SSE = "text/event-stream";
/** The end of an SSE event: a blank line, in any of the three line-ending styles. */
const EVENT_END = /\r\n\r\n|\n\n|\r\r/g;

/** The end of the last complete event in `text` (0 when none is complete yet). */
function completeUpTo(text: string): number {
  let end = 0;
  for (const m of text.matchAll(EVENT_END)) end = m.index + m[0].length;
  return end;
}

export function editAnswerStream(res: Response, id: JsonRpcId, edit: ResultEdit, limit: number): Promise<Response> {
  const contentType = res.headers.get("content-type") ?? "";
  if (!contentType.toLowerCase().startsWith(SSE) || !res.body) return editResponse(res, id, edit, limit);
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = "";
  const events = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      const end = completeUpTo(pending);
      if (end === 0) {
        // One event larger than the bound is passed on unedited rather than held without end.
        if (pending.length > limit) {
          controller.enqueue(encoder.encode(pending));
          pending = "";
        }
        return;
      }
      controller.enqueue(encoder.encode(editAnswerBody(pending.slice(0, end), SSE, id, edit)));
      pending = pending.slice(end);
    },
    flush(controller) {
      // An unterminated last event (a stream cut short) goes as it came.
      pending += decoder.decode();
      if (pending !== "") controller.enqueue(encoder.encode(pending));
    },
  });
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return Promise.resolve(new Response(res.body.pipeThrough(events), { status: res.status, headers }));
}
