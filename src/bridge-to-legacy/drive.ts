// Reads one legacy upstream call's answer (JSON or SSE) message by message into
// a CallSink:
//   - the response to our (gateway-chosen) id ends the call, translated for the modern client;
//   - progress for our token goes to the sink (re-stamped or folded into a task);
//   - logs go to the sink (which passes them only on opt-in);
//   - a server→client request (elicitation, sampling, roots) becomes an input
//     request; the sink either parks the call (MRTR) or keeps reading (task).
// Input requests the upstream sends together (a tool awaiting several with
// Promise.all) are gathered into one round: after the first, drive() keeps
// reading for `gather.windowMs` (or until `gather.max` are in), then hands the
// sink all of them at once, so the client gets one input_required holding every
// request and answers them all in one retry (a task gets them in one update).
// The same LegacyCall survives across MRTR rounds; each round drives a new sink.
import { isRecord, type JsonObject } from "../protocol/json.js";
import { modernError, modernResult, type CacheHints } from "../protocol/era-translate.js";
import {
  inputRequestUnsupported,
  modernErrorStatus,
  upstreamBrokeStream,
  upstreamErrorOf,
  upstreamNoAnswer,
} from "../protocol/errors.js";
import { inputRequestFor } from "../protocol/input-requests.js";
import type { LegacyCall } from "./legacy-call.js";
import type { CallSink } from "../calls/call-sink.js";

/** What drive() uses of a LegacyCall. */
export type DrivenCall = Pick<
  LegacyCall,
  | "session"
  | "method"
  | "upstreamId"
  | "progressToken"
  | "messages"
  | "pending"
  | "nextInputKey"
  | "answer"
  | "cancel"
  | "end"
  | "detached"
>;

export type DriveOutcome = { kind: "done" } | { kind: "input_required" } | { kind: "abandoned" };

/** A timer that can be stopped; injected in tests. */
export type GatherTimer = (ms: number) => { elapsed: Promise<void>; cancel: () => void };

/**
 * Which input requests count as sent "together": those that arrive on the
 * call's stream within `windowMs` of the first one not yet announced, up to
 * `max` of them (reaching it announces at once).
 */
export interface InputGathering {
  windowMs: number;
  max: number;
  timer?: GatherTimer | undefined;
}

/** Every input request announced as it arrives. */
export const NO_GATHERING: InputGathering = { windowMs: 0, max: 1 };

const realTimer: GatherTimer = (ms) => {
  let handle: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    handle = setTimeout(resolve, ms);
    handle.unref();
  });
  return { elapsed, cancel: () => clearTimeout(handle) };
};

// A read still in flight when a round ended (its gathering window closed first) belongs to the next
// round: it is kept per stream, so the message it brings is never lost between two drive() calls.
const inFlight = new WeakMap<AsyncIterator<unknown>, Promise<IteratorResult<unknown>>>();

function read(stream: AsyncIterator<unknown>): Promise<IteratorResult<unknown>> {
  let next = inFlight.get(stream);
  if (!next) {
    next = stream.next();
    inFlight.set(stream, next);
  }
  return next;
}

function isNotification(m: JsonObject): boolean {
  return typeof m.method === "string" && !("id" in m);
}

function isRequest(m: JsonObject): boolean {
  return typeof m.method === "string" && "id" in m;
}

/** Reads the call until it answers, parks for input, or its consumer leaves. A call that ends is ended (its lease released). */
export async function drive(
  upstream: string,
  hints: CacheHints,
  call: DrivenCall,
  sink: CallSink,
  gather: InputGathering = NO_GATHERING,
): Promise<DriveOutcome> {
  let window: ReturnType<GatherTimer> | undefined;
  try {
    return await driveLoop(upstream, hints, call, sink, gather, (w) => (window = w));
  } finally {
    window?.cancel();
  }
}

async function driveLoop(
  upstream: string,
  hints: CacheHints,
  call: DrivenCall,
  sink: CallSink,
  gather: InputGathering,
  track: (window: ReturnType<GatherTimer> | undefined) => void,
): Promise<DriveOutcome> {
  const serverInfo = call.session.init.serverInfo;
  const gone = new Promise<"gone">((resolve) => sink.onGone(() => resolve("gone")));
  const stream = call.messages;
  // Input requests read since the sink last heard of them, and the window that closes their round.
  let gathered = 0;
  let window: { closed: Promise<"window">; cancel: () => void } | undefined;
  const announce = async (): Promise<boolean> => {
    window?.cancel();
    window = undefined;
    track(undefined);
    gathered = 0;
    return (await sink.inputRequired(call.pending)) === "park";
  };
  for (;;) {
    let next: IteratorResult<unknown> | "gone" | "window";
    try {
      next = await Promise.race(window ? [read(stream), gone, window.closed] : [read(stream), gone]);
      if (next !== "gone" && next !== "window") inFlight.delete(stream);
    } catch (err) {
      inFlight.delete(stream);
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
    if (next === "window") {
      if (await announce()) return { kind: "input_required" };
      continue;
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
        const error = modernError(upstreamErrorOf(m.error));
        // The status a modern server would answer with (if nothing was streamed yet): -32601 is 404,
        // -32020/-32021/-32022 are 400 (a tool that needs a capability the client did not declare).
        sink.error(error, modernErrorStatus(error.code));
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
        void call.answer(id, { error: inputRequestUnsupported(mapped.reason) });
        continue;
      }
      call.pending.set(call.nextInputKey(), { upstreamRequestId: id, request: mapped.request });
      gathered += 1;
      if (gathered >= gather.max || gather.windowMs <= 0) {
        if (await announce()) return { kind: "input_required" };
      } else if (!window) {
        const timer = (gather.timer ?? realTimer)(gather.windowMs);
        window = { closed: timer.elapsed.then(() => "window" as const), cancel: timer.cancel };
        track(timer);
      }
    }
  }
}
