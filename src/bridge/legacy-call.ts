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
 * Where a call's messages go: a client leg (answer, stream, or MRTR park) or,
 * once promoted, a task. drive() knows nothing about either.
 */
export interface CallSink {
  /** Capabilities declared by the request that started the call: input is asked only for these. */
  readonly clientCapabilities: JsonObject;
  /** Registers a listener for a consumer that went away (a client that disconnected before its answer). */
  onGone(listener: () => void): void;
  progress(params: JsonObject): void;
  log(params: JsonObject): void;
  /** A new input request is in call.pending. "park": stop reading until the answers come (MRTR); "continue": keep reading (tasks). */
  inputRequired(call: UpstreamCall): "park" | "continue";
  result(result: JsonObject): void;
  error(error: JsonRpcErrorObject, status: number): void;
}

/** A plain client leg: progress re-stamped with the leg's token, logs by opt-in level, input parked as MRTR. */
export class LegSink implements CallSink {
  constructor(
    private readonly leg: ClientLeg,
    private readonly opts: LegOptions,
    private readonly park: (call: UpstreamCall, leg: ClientLeg) => void,
  ) {}

  get clientCapabilities(): JsonObject {
    return this.opts.clientCapabilities;
  }

  onGone(listener: () => void): void {
    this.leg.onClose(listener);
  }

  progress(params: JsonObject): void {
    if (this.leg.progressToken === undefined) return;
    this.leg.notify({ jsonrpc: "2.0", method: "notifications/progress", params: { ...params, progressToken: this.leg.progressToken } });
  }

  log(params: JsonObject): void {
    if (logPasses(params.level, this.opts.logLevel)) this.leg.notify({ jsonrpc: "2.0", method: "notifications/message", params });
  }

  inputRequired(call: UpstreamCall): "park" {
    this.park(call, this.leg);
    return "park";
  }

  result(result: JsonObject): void {
    this.leg.result(result);
  }

  error(error: JsonRpcErrorObject, status: number): void {
    this.leg.error(error, status);
  }
}

/** Reads the upstream call until it answers, parks for input, or its consumer leaves. */
export async function drive(ctx: BridgeContext, call: UpstreamCall, sink: CallSink): Promise<DriveOutcome> {
  const serverInfo = call.session.init.serverInfo;
  const gone = new Promise<"gone">((resolve) => sink.onGone(() => resolve("gone")));
  for (;;) {
    let next: IteratorResult<unknown> | "gone";
    try {
      next = await Promise.race([call.messages.next(), gone]);
    } catch (err) {
      sink.error(
        {
          code: JSONRPC_INTERNAL_ERROR,
          message: `Upstream MCP server ${ctx.upstream.displayUrl} broke the stream of ${call.method}: ${(err as Error).message}`,
          data: { reason: "upstream_reset" },
        },
        200,
      );
      return { kind: "done" };
    }
    if (next === "gone") {
      cancelUpstream(ctx, call, "client disconnected");
      return { kind: "abandoned" };
    }
    if (next.done) {
      sink.error(
        {
          code: JSONRPC_INTERNAL_ERROR,
          message: `Upstream MCP server ${ctx.upstream.displayUrl} ended the stream of ${call.method} without answering`,
          data: { reason: "upstream_no_answer" },
        },
        200,
      );
      return { kind: "done" };
    }
    const m = next.value;
    if (!isRecord(m)) continue;

    if (m.id === call.upstreamId && ("result" in m || "error" in m)) {
      call.abort();
      if ("result" in m) sink.result(modernResult(call.method, m.result, ctx.hints, serverInfo));
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
      if (m.method === "notifications/progress" && params.progressToken === call.upstreamProgressToken) sink.progress(params);
      else if (m.method === "notifications/message") sink.log(params);
      // Everything else on a call's stream (list changes, legacy task status, …) has no modern home here.
      continue;
    }

    if (isRequest(m)) {
      const id = m.id as string | number;
      if (m.method === "ping") {
        void answerUpstream(ctx, call.session, id, { result: {} });
        continue;
      }
      const mapped = inputRequestFor(m, sink.clientCapabilities);
      if (mapped.kind === "unsupported") {
        void answerUpstream(ctx, call.session, id, { error: { code: JSONRPC_METHOD_NOT_FOUND, message: mapped.reason } });
        continue;
      }
      call.keySeq += 1;
      call.pending.set(`input-${call.keySeq}`, { upstreamRequestId: id, request: mapped.request });
      if (sink.inputRequired(call) === "park") return { kind: "input_required" };
    }
  }
}
