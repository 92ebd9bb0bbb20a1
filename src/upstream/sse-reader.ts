// Reads an SSE body (undici's BodyReadable, or any Node Readable) with
// callbacks: the body's 'data' events feed an SseParser, and each complete
// event goes to a handler. A working task holds one of these per upstream call
// for as long as the call runs, so it keeps as little alive as it can: no async
// iterator over the body, no end-of-stream helper, no generators and no
// pending promise while it waits for bytes (issue 14, bench/RESULTS.md).
//
// Backpressure: a handler that returns a promise pauses the body until it
// settles; the rest of the chunk in hand waits in a small queue meanwhile.
//
// Ending, as a `for await` over the body ended: the body's own error (undici's
// when it was destroyed or aborted), "Premature close" when it closed without
// ending and without one, the parser's SseEventTooLargeError (the body is then
// destroyed). Events parsed before a failure are handed on before it.
import type { Readable } from "node:stream";
import { SseParser, type SseEvent, type SseParserOptions } from "./sse-parser.js";

export interface SseHandler {
  /**
   * One complete event. A returned promise pauses the body until it settles;
   * a rejection (or a throw) stops reading with its reason.
   */
  event(event: SseEvent): void | Promise<void>;
  /** Called once, when reading is over: no argument when the body ended, its failure otherwise. */
  end(error?: unknown): void;
}

/** The error Node's stream.finished() reports for a stream closed before its end (same message and code). */
function prematureClose(): Error {
  return Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
}

// The body's error is read from `body.errored` at 'close'; this listener only keeps an
// 'error' without other listeners from crashing the process. Shared: nothing per body.
const ignore = (): void => {};

class SseReader {
  private readonly parser: SseParser;
  /** Parsed events not handed on yet: the rest of a chunk while the handler is busy. */
  private queue: SseEvent[] = [];
  private next = 0;
  /** The handler's promise for the last event has not settled: the body is paused. */
  private busy = false;
  private closed = false;
  private failure: unknown = undefined;
  private over = false;

  constructor(
    private readonly body: Readable,
    private readonly handler: SseHandler,
    options: SseParserOptions,
  ) {
    this.parser = new SseParser(options);
    body.on("error", ignore);
    body.on("close", this.onClose);
    body.on("data", this.onData);
    // A body that closed before reading began ('close' fired already) ends here, as for-await over it did.
    if (body.closed) process.nextTick(this.onClose);
  }

  private readonly onData = (chunk: Uint8Array): void => {
    if (this.over) return;
    let events: SseEvent[];
    try {
      events = this.parser.push(chunk);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (events.length === 0) return;
    if (this.next >= this.queue.length) {
      this.queue = events;
      this.next = 0;
    } else {
      for (const e of events) this.queue.push(e);
    }
    this.drain();
  };

  private readonly onClose = (): void => {
    this.closed = true;
    const body = this.body;
    this.failure = body.errored ?? (body.readableEnded ? undefined : prematureClose());
    this.drain();
  };

  /** Hands queued events on while the handler keeps up; ends once the body closed and nothing is left. */
  private drain(): void {
    while (!this.busy && !this.over) {
      const event = this.queue[this.next];
      if (event === undefined) {
        this.queue = [];
        this.next = 0;
        if (this.closed) this.finish(this.failure);
        return;
      }
      this.next += 1;
      let pending: void | Promise<void>;
      try {
        pending = this.handler.event(event);
      } catch (err) {
        this.fail(err);
        return;
      }
      if (pending instanceof Promise) {
        this.busy = true;
        this.body.pause();
        pending.then(
          () => {
            this.busy = false;
            this.body.resume();
            this.drain();
          },
          (err: unknown) => this.fail(err),
        );
      }
    }
  }

  /** Stops reading on a failure of ours (parser, handler): the body is destroyed, which releases its connection. */
  private fail(err: unknown): void {
    if (this.over) return;
    this.body.destroy();
    this.finish(err);
  }

  private finish(error: unknown): void {
    if (this.over) return;
    this.over = true;
    this.queue = [];
    this.body.off("data", this.onData);
    this.body.off("close", this.onClose);
    if (error === undefined) this.handler.end();
    else this.handler.end(error);
  }
}

/** Starts reading `body` into `handler` (see the file's head); the body's owner stops it by destroying the body. */
export function readSseBody(body: Readable, handler: SseHandler, options: SseParserOptions = {}): void {
  new SseReader(body, handler, options);
}

/** Reads the whole body, calling `onEvent` for each event; settles as SseHandler.end() would be called. */
export function sseEvents(
  body: Readable,
  onEvent: (event: SseEvent) => void | Promise<void>,
  options: SseParserOptions = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    readSseBody(
      body,
      { event: onEvent, end: (error?: unknown) => (error === undefined ? resolve() : reject(error)) },
      options,
    );
  });
}
