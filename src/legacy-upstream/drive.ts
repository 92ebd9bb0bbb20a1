// Reads one legacy upstream call's answer (JSON or SSE) message by message into
// a CallSink:
//   - the response to our (gateway-chosen) id ends the call, translated for the modern client;
//   - progress for our token goes to the sink (re-stamped or folded into a task);
//   - logs go to the sink (which passes them only on opt-in);
//   - a server→client request (elicitation, sampling, roots) becomes an input
//     request; the sink either parks the call (MRTR) or keeps reading (task).
// The same LegacyCall survives across MRTR rounds; each round drives a new sink.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { modernError, modernResult, type CacheHints } from "../protocol/era-translate.js";
import { upstreamBrokeStream, upstreamNoAnswer } from "../protocol/errors.js";
import { JSONRPC_INTERNAL_ERROR, JSONRPC_METHOD_NOT_FOUND, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import { inputRequestFor } from "../protocol/input-requests.js";
import type { LegacyCall } from "../upstream/legacy-call.js";
import type { CallSink } from "../calls/call-sink.js";

/** What drive() uses of a LegacyCall. */
export type DrivenCall = Pick<
  LegacyCall,
  "session" | "method" | "upstreamId" | "progressToken" | "messages" | "pending" | "nextInputKey" | "answer" | "cancel" | "end" | "detached"
>;

export type DriveOutcome = { kind: "done" } | { kind: "input_required" } | { kind: "abandoned" };

function isNotification(m: JsonObject): boolean {
  return typeof m.method === "string" && !("id" in m);
}

function isRequest(m: JsonObject): boolean {
  return typeof m.method === "string" && "id" in m;
}

/** Reads the call until it answers, parks for input, or its consumer leaves. A call that ends is ended (its lease released). */
export async function drive(upstream: string, hints: CacheHints, call: DrivenCall, sink: CallSink): Promise<DriveOutcome> {
  const serverInfo = call.session.init.serverInfo;
  const gone = new Promise<"gone">((resolve) => sink.onGone(() => resolve("gone")));
  for (;;) {
    let next: IteratorResult<unknown> | "gone";
    try {
      next = await Promise.race([call.messages.next(), gone]);
    } catch (err) {
      // Handed on to another instance: the stream was closed on purpose, the call goes on there.
      if (call.detached) return { kind: "abandoned" };
      call.end();
      const fault = upstreamBrokeStream(upstream, call.method, err);
      sink.error(fault.error, fault.status);
      return { kind: "done" };
    }
    if (next === "gone") {
      call.cancel("client disconnected");
      return { kind: "abandoned" };
    }
    if (next.done) {
      if (call.detached) return { kind: "abandoned" };
      call.end();
      const fault = upstreamNoAnswer(upstream, call.method);
      sink.error(fault.error, fault.status);
      return { kind: "done" };
    }
    const m = next.value;
    if (!isRecord(m)) continue;

    if (m.id === call.upstreamId && ("result" in m || "error" in m)) {
      call.end();
      if ("result" in m) sink.result(modernResult(call.method, m.result, hints, serverInfo));
      else {
        const error = modernError(
          isRecord(m.error) ? (m.error as unknown as JsonRpcErrorObject) : { code: JSONRPC_INTERNAL_ERROR, message: "Upstream error" },
        );
        // A method the upstream does not serve is HTTP 404 on the modern surface (if nothing was streamed yet).
        sink.error(error, error.code === JSONRPC_METHOD_NOT_FOUND ? 404 : 200);
      }
      return { kind: "done" };
    }

    if (isNotification(m)) {
      const params = isRecord(m.params) ? m.params : {};
      if (m.method === "notifications/progress" && params.progressToken === call.progressToken) sink.progress(params);
      else if (m.method === "notifications/message") sink.log(params);
      // Everything else on a call's stream (list changes, legacy task status, …) has no modern home here.
      continue;
    }

    if (isRequest(m)) {
      const id = m.id as string | number;
      if (m.method === "ping") {
        void call.answer(id, { result: {} });
        continue;
      }
      const mapped = inputRequestFor(m, sink.clientCapabilities);
      if (mapped.kind === "unsupported") {
        void call.answer(id, { error: { code: JSONRPC_METHOD_NOT_FOUND, message: mapped.reason } });
        continue;
      }
      call.pending.set(call.nextInputKey(), { upstreamRequestId: id, request: mapped.request });
      if (sink.inputRequired(call.pending) === "park") return { kind: "input_required" };
    }
  }
}
