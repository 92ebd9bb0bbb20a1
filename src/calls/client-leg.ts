// One modern client request being answered by the gateway itself (the era
// bridge). The answer is a single JSON object unless something must be streamed
// first (progress, opted-in logs, or a keep-alive on a long call), in which case
// it becomes an SSE stream ending with the response. The decision is made lazily,
// so quick calls cost no streaming at all. The stream itself is sse-stream.ts.
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { jsonResponse } from "../web/json-response.js";
import { SseStream } from "./sse-stream.js";

export class ClientLeg {
  readonly response: Promise<Response>;
  private resolve!: (r: Response) => void;
  private stream: SseStream | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private settled = false;
  private closedFlag = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(
    readonly id: string | number,
    readonly progressToken: string | number | undefined,
    signal: AbortSignal,
    private readonly keepAliveMs: number,
  ) {
    this.response = new Promise((r) => (this.resolve = r));
    if (signal.aborted) this.closedFlag = true;
    else signal.addEventListener("abort", () => this.markClosed(), { once: true });
    // A long call answered as JSON would show no bytes for minutes; switch to SSE to keep intermediaries happy.
    if (keepAliveMs > 0) {
      this.keepAlive = setTimeout(() => this.tickKeepAlive(), keepAliveMs);
      this.keepAlive.unref();
    }
  }

  /** True once the client went away (or the answer is complete). */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** Called if the client goes away before the answer is complete; never after a normal finish. */
  onClose(listener: () => void): void {
    if (this.settled) return;
    if (this.closedFlag) listener();
    else this.closeListeners.push(listener);
  }

  private markClosed(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    if (this.keepAlive) clearTimeout(this.keepAlive);
    for (const l of this.closeListeners.splice(0)) l();
  }

  private tickKeepAlive(): void {
    if (this.settled || this.closedFlag) return;
    this.startStream().ping();
    this.keepAlive = setTimeout(() => this.tickKeepAlive(), this.keepAliveMs);
    this.keepAlive.unref();
  }

  /** The answer as an event stream from now on (callers check `settled` first). */
  private startStream(): SseStream {
    if (!this.stream) {
      this.stream = new SseStream(() => this.markClosed());
      this.resolve(this.stream.response);
    }
    return this.stream;
  }

  /** A notification for this request (progress, log). Opens the SSE stream if needed. */
  notify(message: unknown): void {
    if (this.settled || this.closedFlag) return;
    this.startStream().send(message);
  }

  /** The final response: as JSON if nothing was streamed yet, else as the stream's last event. */
  finish(message: unknown, status = 200, headers: Record<string, string> = {}): void {
    if (this.settled) return;
    this.settled = true;
    if (this.keepAlive) clearTimeout(this.keepAlive);
    // Close listeners are for a client that went away; an answered leg is not abandoned.
    this.closeListeners.length = 0;
    if (this.stream) {
      this.stream.send(message);
      this.stream.end();
    } else {
      this.resolve(jsonResponse(status, message, headers));
    }
    this.markClosed();
  }

  result(result: unknown): void {
    this.finish({ jsonrpc: "2.0", id: this.id, result });
  }

  error(
    error: { code: number; message: string; data?: unknown },
    status = 200,
    headers: Record<string, string> = {},
  ): void {
    this.finish({ jsonrpc: "2.0", id: this.id as JsonRpcId, error }, status, headers);
  }
}
