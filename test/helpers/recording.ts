// What both test clients (SDK 1.x and 2.x) record: every HTTP exchange their
// transport makes, and the events the server sends, with a way to wait for one.

export interface HttpExchange {
  method: string;
  /** The request body as sent (the SDKs send JSON text), or undefined for GET/DELETE. */
  requestBody: string | undefined;
  requestHeaders: Record<string, string>;
  status: number;
  contentType: string | null;
  /** Every byte of the response body that the client read, as text. */
  responseText: string;
  /** Settles once the response headers arrived (or the request failed). */
  responded: Promise<void>;
}

function headersToRecord(h: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(h).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

/** A fetch for a client transport that records each exchange into `http`, body included, as the client reads it. */
export function recordingFetch(
  http: HttpExchange[],
  base: typeof fetch = fetch,
): (input: string | URL, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const exchange: HttpExchange = {
      method: init?.method ?? "GET",
      requestBody: typeof init?.body === "string" ? init.body : undefined,
      requestHeaders: headersToRecord(init?.headers),
      status: 0,
      contentType: null,
      responseText: "",
      responded: Promise.resolve(),
    };
    http.push(exchange);
    const pending = base(input, init);
    exchange.responded = pending.then(
      () => undefined,
      () => undefined,
    );
    const res = await pending;
    exchange.status = res.status;
    exchange.contentType = res.headers.get("content-type");
    if (res.body === null) return res;
    const decoder = new TextDecoder();
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        exchange.responseText += decoder.decode(chunk, { stream: true });
        controller.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(tap), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}

/** Events in arrival order, and waiting for the first (past or future) that matches. */
export class EventLog<E> {
  readonly events: E[] = [];
  private readonly waiters = new Set<{ match: (e: E) => boolean; resolve: (e: E) => void }>();

  push(e: E): void {
    this.events.push(e);
    for (const w of this.waiters) {
      if (w.match(e)) {
        this.waiters.delete(w);
        w.resolve(e);
      }
    }
  }

  waitFor(match: (e: E) => boolean, timeoutMs = 10_000): Promise<E> {
    const found = this.events.find(match);
    if (found) return Promise.resolve(found);
    return new Promise<E>((resolve, reject) => {
      const waiter = {
        match,
        resolve: (e: E) => {
          clearTimeout(timer);
          resolve(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`no matching server event within ${timeoutMs} ms; got ${JSON.stringify(this.events)}`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }
}
