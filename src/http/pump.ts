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

export interface PumpOptions {
  /** Insert keep-alive comments (SSE only). 0 disables. */
  keepAliveMs: number;
  now: () => number;
  onDone: (outcome: "ended" | "failed" | "stopped", err?: Error) => void;
}

export interface Pump {
  resume(): void;
  /** Stop reading (client gone or shutdown); the caller aborts the upstream. */
  stop(): void;
}

export function pumpBody(body: Readable, sink: PumpSink, opts: PumpOptions): Pump {
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  let lastActivity = opts.now();
  // While the client is not keeping up there is data queued, so no keep-alive is needed.
  let clientFull = false;
  const tracker = opts.keepAliveMs > 0 ? new SseBoundaryTracker() : undefined;

  const finish = (outcome: "ended" | "failed" | "stopped", err?: Error): void => {
    if (done) return;
    done = true;
    if (timer) clearTimeout(timer);
    body.removeListener("data", onData);
    opts.onDone(outcome, err);
  };

  const onData = (chunk: Buffer): void => {
    if (done) return;
    tracker?.observe(chunk);
    lastActivity = opts.now();
    if (!sink.write(chunk)) {
      clientFull = true;
      body.pause();
    }
  };

  // One self-rescheduling timer per stream instead of re-arming on every chunk.
  const tick = (): void => {
    if (done || !tracker) return;
    const idle = opts.now() - lastActivity;
    if (idle >= opts.keepAliveMs) {
      if (tracker.atBoundary && !clientFull) {
        sink.write(SSE_KEEPALIVE);
        lastActivity = opts.now();
      }
      schedule(opts.keepAliveMs);
    } else {
      schedule(opts.keepAliveMs - idle);
    }
  };
  const schedule = (ms: number): void => {
    timer = setTimeout(tick, ms);
    timer.unref();
  };
  if (tracker) schedule(opts.keepAliveMs);

  body.on("data", onData);
  body.once("end", () => {
    if (done) return;
    sink.end();
    finish("ended");
  });
  // Always listen for errors: aborting the upstream destroys the body with one.
  body.on("error", (err: Error) => {
    if (done) return;
    sink.fail(err);
    finish("failed", err);
  });

  return {
    resume: () => {
      clientFull = false;
      if (!done) body.resume();
    },
    stop: () => finish("stopped"),
  };
}
