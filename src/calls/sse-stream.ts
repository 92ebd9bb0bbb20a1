// The one writer of the event streams the gateway answers with itself: a
// client answer that outgrew JSON (client-leg.ts) and a legacy session's GET
// stream (bridge-to-modern/front.ts). Every such stream has the same headers,
// the same `message` frames and keep-alive comments, and notices a client that
// went away the same way (its body cancelled, or a write refused). When to
// stream, and what, stays with its users.
import { SSE_KEEPALIVE } from "../protocol/sse-boundary.js";

const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};

function sseFrame(message: unknown): Uint8Array {
  return Buffer.from(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

export class SseStream {
  /** 200, an event stream no intermediary caches or buffers. */
  readonly response: Response;
  private readonly controller: ReadableStreamDefaultController<Uint8Array>;
  private keepAlive: NodeJS.Timeout | undefined;

  /** `gone`: the client went away (it cancelled the body, or a write was refused); never called by `end()`. */
  constructor(private readonly gone: () => void) {
    // start() runs within ReadableStream's constructor: the controller is set before it returns.
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
      },
      cancel: () => this.gone(),
    });
    this.controller = controller;
    this.response = new Response(body, { status: 200, headers: SSE_HEADERS });
  }

  /** One JSON-RPC message, as a `message` event. */
  send(message: unknown): void {
    this.enqueue(sseFrame(message));
  }

  /** A comment, so that intermediaries do not time out a stream that has nothing to say yet. */
  ping(): void {
    this.enqueue(SSE_KEEPALIVE);
  }

  /** A keep-alive comment every `ms` until the stream ends (0: none). */
  keepAliveEvery(ms: number): void {
    if (ms <= 0 || this.keepAlive) return;
    this.keepAlive = setInterval(() => this.ping(), ms);
    this.keepAlive.unref();
  }

  /** The end of the stream: what was written is delivered, then the body closes. */
  end(): void {
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    try {
      this.controller.close();
    } catch {
      // The client already went away.
    }
  }

  private enqueue(bytes: Uint8Array): void {
    try {
      this.controller.enqueue(bytes);
    } catch {
      this.gone();
    }
  }
}
