// Streams an upstream response body to the client as it arrives, with
// backpressure, and inserts SSE keep-alive comments on idle event streams. Both
// the Node fast path and the web-standard path use this one pump, so the
// streaming rules live in one place.
import type { Readable } from "node:stream";
import { SSE_KEEPALIVE, SseBoundaryTracker } from "../protocol/sse-boundary.js";

export interface PumpSink {
  /** Returns false when the client is not keeping up; the pump pauses until resume(). */
  write(chunk: Uint8Array): boolean;
  end(): void;
  /** The upstream broke mid-body: cut the client off the same way. */
  fail(err: Error): void;
}

type PumpOutcome = "ended" | "failed" | "stopped";

export interface PumpOptions {
  /** Insert keep-alive comments (SSE only). 0 disables. */
  keepAliveMs: number;
  now: () => number;
  onDone: (outcome: PumpOutcome, err?: Error) => void;
}

export interface Pump {
  /** The client drained. A plain function, so that it can be the response's 'drain' listener as it is. */
  readonly resume: () => void;
  /** Stop reading (client gone or shutdown); the caller aborts the upstream. */
  readonly stop: () => void;
}

/**
 * Plain listeners over local state, the shape of the floor's pipe(), not a class: with the earlier class (its
 * constructor bound its listeners over `this`), V8 pretenured allocation sites of the pass-through, and the young
 * objects those old-space ones pointed at, every request's, were promoted before a mark-compact could free them:
 * ≈4.5 KB per request against the floor's ≈0.1 KB (bench/investigations/gc-promotions.sh; the same build under
 * --no-allocation-site-pretenuring promotes as little as the floor).
 */
export function pumpBody(body: Readable, sink: PumpSink, opts: PumpOptions): Pump {
  const { keepAliveMs, now, onDone } = opts;
  // An event stream only: JSON answers arm no timer and read no clock.
  const tracker = keepAliveMs > 0 ? new SseBoundaryTracker() : undefined;
  let done = false;
  // While the client is not keeping up there is data queued, so no keep-alive is needed.
  let clientFull = false;
  let lastActivity = tracker ? now() : 0;
  let timer: NodeJS.Timeout | undefined;

  const finish = (outcome: PumpOutcome, err?: Error): void => {
    if (done) return;
    done = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
    onDone(outcome, err);
  };

  // One self-rescheduling timer per stream instead of re-arming on every chunk.
  const tick = (): void => {
    if (done || !tracker) return;
    const idle = now() - lastActivity;
    if (idle < keepAliveMs) {
      timer = setTimeout(tick, keepAliveMs - idle).unref();
      return;
    }
    if (tracker.atBoundary && !clientFull) {
      sink.write(SSE_KEEPALIVE);
      lastActivity = now();
    }
    timer = setTimeout(tick, keepAliveMs).unref();
  };

  body.on("data", (chunk: Buffer) => {
    if (done) return;
    if (tracker) {
      tracker.observe(chunk);
      lastActivity = now();
    }
    if (!sink.write(chunk)) {
      clientFull = true;
      body.pause();
    }
  });
  body.on("end", () => {
    if (done) return;
    sink.end();
    finish("ended");
  });
  // Always listened for: aborting the upstream destroys the body with an error.
  body.on("error", (err: Error) => {
    if (done) return;
    sink.fail(err);
    finish("failed", err);
  });
  if (tracker) timer = setTimeout(tick, keepAliveMs).unref();

  return {
    resume: () => {
      clientFull = false;
      if (!done) body.resume();
    },
    stop: () => finish("stopped"),
  };
}
