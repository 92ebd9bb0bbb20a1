// A modern request served over a legacy upstream session. The upstream's answer
// (JSON or SSE) is read message by message:
//   - the response to our (gateway-chosen) id ends the call, translated for the modern client;
//   - progress for our token is re-stamped with the current client leg's token;
//   - logs pass only if the request opted in with a level;
//   - a server→client request (elicitation, sampling, roots) becomes an MRTR
//     `input_required` answer, and the upstream call is parked until the retry.
// The same UpstreamCall object survives across MRTR rounds; each round is a new ClientLeg.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { logPasses, modernError, modernResult, type CacheHints } from "../protocol/era-bridge.js";
import { JSONRPC_INTERNAL_ERROR, JSONRPC_METHOD_NOT_FOUND, type JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { LogLevelName } from "../protocol/modern-request.js";
import { inputRequestFor } from "../protocol/input-requests.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { LegacySession } from "../upstream/legacy-sessions.js";
import { postRpc } from "../upstream/rpc.js";
import type { ClientLeg } from "./client-leg.js";

export interface UpstreamCall {
  readonly session: LegacySession;
  readonly method: string;
  readonly upstreamId: string;
  readonly upstreamProgressToken: string;
  readonly messages: AsyncIterator<unknown>;
  /** Aborts the upstream HTTP exchange. */
  readonly abort: () => void;
  /** Input requests sent to the client and not answered yet: key → upstream request id. */
  readonly pending: Map<string, { upstreamRequestId: string | number; request: JsonObject }>;
  keySeq: number;
}

export interface LegOptions {
  logLevel: LogLevelName | undefined;
  clientCapabilities: JsonObject;
}

export type DriveOutcome = { kind: "done" } | { kind: "input_required" } | { kind: "abandoned" };

export interface BridgeContext {
  upstream: UpstreamClient;
  hints: CacheHints;
}

function isNotification(m: JsonObject): boolean {
  return typeof m.method === "string" && !("id" in m);
}

function isRequest(m: JsonObject): boolean {
  return typeof m.method === "string" && "id" in m;
}

/** Fire-and-forget message to the upstream on the call's session (responses to its requests, cancellations). */
export function sendToUpstream(ctx: BridgeContext, session: LegacySession, message: unknown): Promise<void> {
  return postRpc(ctx.upstream, session.headers(), message, AbortSignal.timeout(10_000)).then(
    (answer) => answer.discard(),
    () => {
      // The upstream may be gone; the call's own stream reports that.
    },
  );
}

export function answerUpstream(
  ctx: BridgeContext,
  session: LegacySession,
  id: string | number,
  outcome: { result: unknown } | { error: JsonRpcErrorObject },
): Promise<void> {
  return sendToUpstream(ctx, session, { jsonrpc: "2.0", id, ...outcome });
}

/** Cancelling must reach the upstream with *its* request id, then we stop reading. */
export function cancelUpstream(ctx: BridgeContext, call: UpstreamCall, reason: string): void {
  void sendToUpstream(ctx, call.session, {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: call.upstreamId, reason },
  });
  call.abort();
}

/**
 * Reads the upstream call until it answers, needs input, or the client leaves.
 * `onInputRequired` parks the call and answers the leg with `input_required`.
 */
export async function drive(
  ctx: BridgeContext,
  call: UpstreamCall,
  leg: ClientLeg,
  opts: LegOptions,
  onInputRequired: (call: UpstreamCall, leg: ClientLeg) => void,
): Promise<DriveOutcome> {
  const serverInfo = call.session.init.serverInfo;
  const left = new Promise<"left">((resolve) => leg.onClose(() => resolve("left")));
  for (;;) {
    let next: IteratorResult<unknown> | "left";
    try {
      next = await Promise.race([call.messages.next(), left]);
    } catch (err) {
      leg.error({
        code: JSONRPC_INTERNAL_ERROR,
        message: `Upstream MCP server ${ctx.upstream.displayUrl} broke the stream of ${call.method}: ${(err as Error).message}`,
        data: { reason: "upstream_reset" },
      });
      return { kind: "done" };
    }
    if (next === "left") {
      cancelUpstream(ctx, call, "client disconnected");
      return { kind: "abandoned" };
    }
    if (next.done) {
      leg.error({
        code: JSONRPC_INTERNAL_ERROR,
        message: `Upstream MCP server ${ctx.upstream.displayUrl} ended the stream of ${call.method} without answering`,
        data: { reason: "upstream_no_answer" },
      });
      return { kind: "done" };
    }
    const m = next.value;
    if (!isRecord(m)) continue;

    if (m.id === call.upstreamId && ("result" in m || "error" in m)) {
      call.abort();
      if ("result" in m) leg.result(modernResult(call.method, m.result, ctx.hints, serverInfo));
      else {
        const error = modernError(
          isRecord(m.error) ? (m.error as unknown as JsonRpcErrorObject) : { code: JSONRPC_INTERNAL_ERROR, message: "Upstream error" },
        );
        // A method the upstream does not serve is HTTP 404 on the modern surface (if nothing was streamed yet).
        leg.error(error, error.code === JSONRPC_METHOD_NOT_FOUND ? 404 : 200);
      }
      return { kind: "done" };
    }

    if (isNotification(m)) {
      const params = isRecord(m.params) ? m.params : {};
      if (m.method === "notifications/progress" && params.progressToken === call.upstreamProgressToken) {
        if (leg.progressToken !== undefined) {
          leg.notify({ jsonrpc: "2.0", method: "notifications/progress", params: { ...params, progressToken: leg.progressToken } });
        }
      } else if (m.method === "notifications/message" && logPasses(params.level, opts.logLevel)) {
        leg.notify({ jsonrpc: "2.0", method: "notifications/message", params });
      }
      // Everything else on a call's stream (list changes, legacy task status, …) has no modern home here.
      continue;
    }

    if (isRequest(m)) {
      const id = m.id as string | number;
      if (m.method === "ping") {
        void answerUpstream(ctx, call.session, id, { result: {} });
        continue;
      }
      const mapped = inputRequestFor(m, opts.clientCapabilities);
      if (mapped.kind === "unsupported") {
        void answerUpstream(ctx, call.session, id, { error: { code: JSONRPC_METHOD_NOT_FOUND, message: mapped.reason } });
        continue;
      }
      call.keySeq += 1;
      call.pending.set(`input-${call.keySeq}`, { upstreamRequestId: id, request: mapped.request });
      onInputRequired(call, leg);
      return { kind: "input_required" };
    }
  }
}
