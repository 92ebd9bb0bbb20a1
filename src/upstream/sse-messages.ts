// The JSON-RPC messages of an SSE answer, as the async iterator the bridge's
// consumers pull from (drive(), responseTo, for await), over the callback
// reader (sse-reader.ts). One small object per answer: a working task waits on
// it with one pending next() and nothing else (issue 14).
//
// The cursor rule: an event's id is recorded when its message is handed on (a
// next() resolves with it), never when it is merely parsed, so a call handed to
// another instance resumes right after the last message this one consumed.
// Events that carry no message (another event type, empty or malformed data)
// record their id when they are reached, as a message after them would.
//
// Backpressure: a message nobody asked for yet is held, and the body paused,
// until the next next() takes it.
import type { Readable } from "node:stream";
import { readSseBody, type SseHandler } from "./sse-reader.js";
import type { SseEvent } from "./sse-parser.js";

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

export class SseMessages implements AsyncIterableIterator<unknown>, SseHandler {
  /** The id of the event that carried the last message handed on (or of a later event with none). */
  cursor: string | undefined = undefined;
  private started = false;
  /** Reading is over: the body ended, failed (`failure`, reported once) or return() was called. */
  private over = false;
  private failure: unknown = undefined;
  /** A message read before anyone asked for it, and the reader's promise waiting for it to be taken. */
  private held: { message: unknown; id: string | undefined; taken: () => void } | undefined = undefined;
  /** A next() waiting for a message. */
  private waiting: { resolve: (r: IteratorResult<unknown>) => void; reject: (err: unknown) => void } | undefined =
    undefined;

  constructor(private readonly body: Readable) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<unknown>> {
    const held = this.held;
    if (held) {
      this.held = undefined;
      this.record(held.id);
      held.taken();
      return Promise.resolve({ done: false, value: held.message });
    }
    if (this.over) {
      const failure = this.failure;
      if (failure === undefined) return Promise.resolve(DONE);
      this.failure = undefined; // like a generator: it throws once, then it is done
      return Promise.reject(failure);
    }
    if (this.waiting) return Promise.reject(new Error("SseMessages: next() called while another is pending"));
    const pending = new Promise<IteratorResult<unknown>>((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
    if (!this.started) {
      // Lazily, as a generator would: the body is not read before someone asks for a message.
      this.started = true;
      readSseBody(this.body, this);
    }
    return pending;
  }

  /** Stops reading (a `break` out of `for await`): destroys the body, as returning a body's own iterator does. */
  return(): Promise<IteratorResult<unknown>> {
    if (!this.over) {
      this.over = true;
      this.failure = undefined;
      this.body.destroy();
    }
    this.held?.taken();
    this.held = undefined;
    this.settle(DONE);
    return Promise.resolve(DONE);
  }

  /** SseHandler: one parsed event. */
  event(event: SseEvent): void | Promise<void> {
    if (this.over) return;
    let message: unknown;
    try {
      // Only "message" events with data carry messages.
      message = event.event === "message" && event.data !== "" ? JSON.parse(event.data) : undefined;
    } catch {
      // A malformed frame is not a message; the stream goes on (as SDK clients behave).
    }
    if (message === undefined) {
      this.record(event.id);
      return;
    }
    if (this.waiting) {
      this.record(event.id);
      this.settle({ done: false, value: message });
      return;
    }
    return new Promise<void>((taken) => {
      this.held = { message, id: event.id, taken };
    });
  }

  /** SseHandler: the body ended or failed. */
  end(error?: unknown): void {
    if (this.over) return;
    this.over = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    if (error === undefined) waiting?.resolve(DONE);
    else if (waiting) waiting.reject(error);
    else this.failure = error;
  }

  private record(id: string | undefined): void {
    if (id !== undefined) this.cursor = id;
  }

  private settle(result: IteratorResult<unknown>): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve(result);
  }
}
