// The undici dispatcher a stdio upstream's client uses: it hands each request to the stdio host in process
// (host.serve: a web Request in, a web Response out) instead of writing it to a socket. Everything above the
// client (pass-through, the era bridge, tasks, the readiness probe) keeps calling undici's request() as for an
// HTTP upstream, and the stdio path loses a loopback hop: two socket writes and reads, an HTTP parse on each
// side and two conversions between Node and web streams per message (issue 27).
//
// It speaks the handler protocol undici's request() drives (onConnect, onHeaders, onData, onComplete,
// onError): the answer's body is read as the consumer takes it (onData false pauses until resume), the
// consumer's abort cancels the body (the session sees its client leave), and upstream.headersTimeoutMs and
// upstream.idleTimeoutMs keep their meaning, failing with undici's own errors so failures map as before.
import { Dispatcher, errors } from "undici";
import type { StdioHost } from "./host.js";
import type { InProcessExtras } from "../upstream/client.js";

export interface StdioDispatcherOptions {
  /** upstream.headersTimeoutMs: the answer must start within it. */
  headersTimeoutMs: number;
  /** upstream.idleTimeoutMs: a body silent this long is cut; 0 never. */
  idleTimeoutMs: number;
}

type Handler = Dispatcher.DispatchHandler;

/** The flat header list of a request (undici accepts a flat array, an object, or nothing). */
function requestHeaders(given: Dispatcher.DispatchOptions["headers"]): Headers {
  const headers = new Headers();
  if (!given) return headers;
  if (Array.isArray(given)) {
    for (let i = 0; i + 1 < given.length; i += 2) headers.append(String(given[i]), String(given[i + 1]));
    return headers;
  }
  for (const [name, value] of Object.entries(given as Record<string, string | string[] | undefined>)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** The body as the upstream client gives it: a Buffer (or a string); nothing else is sent to a stdio upstream. */
function bodyOf(body: Dispatcher.DispatchOptions["body"]): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("a stdio upstream takes a request body as a Buffer or a string");
}

export class StdioDispatcher extends Dispatcher {
  constructor(
    private readonly host: StdioHost,
    private readonly opts: StdioDispatcherOptions,
  ) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Handler): boolean {
    void this.exchange(options, handler);
    return true;
  }

  /** The host is closed by its owner (the gateway), after the clients that use it. */
  override close(): Promise<void> {
    return Promise.resolve();
  }

  override destroy(): Promise<void> {
    return Promise.resolve();
  }

  private async exchange(options: Dispatcher.DispatchOptions, handler: Handler): Promise<void> {
    const aborter = new AbortController();
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let over = false;
    let settle = (): void => {};
    /** Settles when the answer has been read to its end or given up: the session counts it open until then. */
    const done = new Promise<void>((resolve) => (settle = resolve));
    let timer: NodeJS.Timeout | undefined;
    let paused = false;
    let wake: (() => void) | undefined;
    const resume = (): void => {
      paused = false;
      const w = wake;
      wake = undefined;
      w?.();
    };
    const fail = (err: Error): void => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      resume();
      aborter.abort(err);
      reader?.cancel(err).catch(() => {});
      settle();
      handler.onError?.(err);
    };
    handler.onConnect?.((err) => fail(err ?? new errors.RequestAbortedError()));
    if (over) return;
    timer = setTimeout(() => fail(new errors.HeadersTimeoutError()), this.opts.headersTimeoutMs);
    let response: Response;
    try {
      // Without body or signal: the host takes both from the exchange, a cheaper Request to build.
      const request = new Request(`http://stdio.invalid${options.path}`, {
        method: options.method,
        headers: requestHeaders(options.headers),
      });
      response = await this.host.serve(request, {
        body: bodyOf(options.body),
        // The upstream client hands the body's parsed message and the caller over as `opaque` (InProcessExtras).
        message: (options as { opaque?: InProcessExtras | null }).opaque?.message,
        caller: (options as { opaque?: InProcessExtras | null }).opaque?.caller,
        done,
        signal: aborter.signal,
      });
    } catch (err) {
      fail(err as Error);
      return;
    }
    clearTimeout(timer);
    if (over) {
      await response.body?.cancel().catch(() => {});
      return;
    }
    const raw: string[] = [];
    response.headers.forEach((value, name) => raw.push(name, value));
    handler.onHeaders?.(response.status, raw as unknown as Buffer[], resume, response.statusText);
    if (over) return;
    if (!response.body) {
      over = true;
      settle();
      handler.onComplete?.([]);
      return;
    }
    reader = response.body.getReader();
    const idleMs = this.opts.idleTimeoutMs;
    const arm = (): void => {
      if (idleMs > 0) timer = setTimeout(() => fail(new errors.BodyTimeoutError()), idleMs);
    };
    arm();
    try {
      for (;;) {
        if (paused) await new Promise<void>((resolve) => (wake = resolve));
        if (over) return;
        const next = await reader.read();
        if (over) return;
        if (next.done) break;
        clearTimeout(timer);
        arm();
        const chunk = next.value;
        if (handler.onData?.(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)) === false) paused = true;
      }
    } catch (err) {
      fail(err as Error);
      return;
    }
    over = true;
    clearTimeout(timer);
    settle();
    handler.onComplete?.([]);
  }
}
