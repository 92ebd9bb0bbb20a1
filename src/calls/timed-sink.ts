// A CallSink that times the call for the latency history (adaptive promotion,
// tasks/latency-history.ts) and passes everything on unchanged: an answer (result
// or error) is a sample; input requests mark the call as one whose time is the
// client's; a client that leaves a plain call ends it as cut. Cancellation through
// a task (tasks/cancel, eviction, shutdown) reaches the timing from the task's runtime.
import type { JsonObject } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { CallTiming } from "../tasks/latency-history.js";
import type { PendingInput } from "../protocol/input-requests.js";
import type { CallSink, InputVerdict } from "./call-sink.js";

type Inner = CallSink & { readonly taskId?: string | undefined; readonly promotionSettled?: Promise<void> };

export class TimedSink implements CallSink {
  constructor(
    private readonly inner: Inner,
    private readonly timing: CallTiming,
  ) {
    // Only a call that is still the client's is cut when the client leaves. Once it is a task (its handle
    // answered the request) the task keeps running and its upstream answer must stay a sample: a promoted
    // call that counted as cut would never teach the history that its tool turned fast (issue 26). This
    // must not depend on whether the inner sink still forwards close events after it answered.
    inner.onGone(() => {
      if (inner.taskId === undefined) timing.cancelled();
    });
  }

  get clientCapabilities(): JsonObject {
    return this.inner.clientCapabilities;
  }

  /** The inner sink's task, if the call is (or became) one. */
  get taskId(): string | undefined {
    return this.inner.taskId;
  }

  get promotionSettled(): Promise<void> {
    return this.inner.promotionSettled ?? Promise.resolve();
  }

  onGone(listener: () => void): void {
    this.inner.onGone(listener);
  }

  progress(params: JsonObject): void {
    this.inner.progress(params);
  }

  log(params: JsonObject): void {
    this.inner.log(params);
  }

  inputRequired(pending: ReadonlyMap<string, PendingInput>): InputVerdict | Promise<InputVerdict> {
    const next = this.inner.inputRequired(pending);
    if (typeof next === "string") {
      this.timing.inputRequested(next === "park");
      return next;
    }
    return next.then((verdict) => {
      this.timing.inputRequested(verdict === "park");
      return verdict;
    });
  }

  result(result: JsonObject): void {
    this.timing.answered();
    this.inner.result(result);
  }

  error(error: JsonRpcErrorObject, status: number, headers?: Record<string, string>): void {
    this.timing.answered();
    this.inner.error(error, status, headers);
  }
}

/** `sink` timed by `timing`, or `sink` itself without one. */
export function timed<S extends Inner>(sink: S, timing: CallTiming | undefined): S | TimedSink {
  return timing ? new TimedSink(sink, timing) : sink;
}
