import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
  type Root,
} from "@modelcontextprotocol/sdk/types.js";

/** A message the server sent to the client (outside of responses), in arrival order. */
export interface ServerEvent {
  kind: "notification" | "request";
  method: string;
  params: unknown;
}

/** One HTTP exchange made by the client transport, as seen by the client. */
export interface HttpExchange {
  method: string;
  /** The request body as sent (the SDK sends JSON text), or undefined for GET/DELETE. */
  requestBody: string | undefined;
  requestHeaders: Record<string, string>;
  status: number;
  contentType: string | null;
  /** Every byte of an SSE/JSON response body that the client read, as text. */
  responseText: string;
  /** Settles once the response headers arrived (or the request failed). */
  responded: Promise<void>;
}

export interface SdkClientOptions {
  /** Answer to `elicitation/create`. Default: accept with `{ name: "Ada Lovelace" }`. */
  onElicit?: (params: ElicitRequest["params"]) => ElicitResult | Promise<ElicitResult>;
  /** Answer to `sampling/createMessage`. Default: a fixed assistant text. */
  onSample?: (params: CreateMessageRequest["params"]) => CreateMessageResult | Promise<CreateMessageResult>;
  /** Roots returned for `roots/list`. */
  roots?: Root[];
  /** Extra headers on every request the transport makes (e.g. Authorization). */
  headers?: Record<string, string>;
  clientName?: string;
}

export interface SdkClientHandle {
  /** The MCP endpoint this client talks to. */
  url: string;
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Server→client notifications and requests, in arrival order. Progress notifications are not here (see `onprogress`). */
  events: ServerEvent[];
  http: HttpExchange[];
  sessionId(): string | undefined;
  /** Resolves with the first event (already received or future) that matches. */
  waitForEvent(match: (e: ServerEvent) => boolean, timeoutMs?: number): Promise<ServerEvent>;
  /**
   * Resolves once the transport's standalone GET event stream is open (the server
   * only delivers unrelated notifications while it is).
   */
  standaloneStream(timeoutMs?: number): Promise<HttpExchange>;
  /** Closes the client; does not terminate the session. Idempotent. */
  close(): Promise<void>;
}

export const DEFAULT_ROOTS: Root[] = [{ uri: "file:///tmp/gateway-test-root", name: "test root" }];

export const DEFAULT_ELICIT_RESULT: ElicitResult = {
  action: "accept",
  content: { name: "Ada Lovelace", check: true, integer: 7 },
};

export const DEFAULT_SAMPLE_RESULT: CreateMessageResult = {
  role: "assistant",
  model: "test-model",
  stopReason: "endTurn",
  content: { type: "text", text: "sampled answer from the test client" },
};

function headersToRecord(h: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(h).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

/**
 * Connects an `@modelcontextprotocol/sdk` 1.x Client over Streamable HTTP, declaring
 * elicitation, sampling and roots capabilities with handlers, and recording what the
 * server sends and every HTTP exchange the transport makes.
 */
export async function connectSdkClient(url: string, opts: SdkClientOptions = {}): Promise<SdkClientHandle> {
  const events: ServerEvent[] = [];
  const http: HttpExchange[] = [];
  const waiters = new Set<{ match: (e: ServerEvent) => boolean; resolve: (e: ServerEvent) => void }>();
  const push = (e: ServerEvent): void => {
    events.push(e);
    for (const w of waiters) {
      if (w.match(e)) {
        waiters.delete(w);
        w.resolve(e);
      }
    }
  };

  const recordingFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
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
    const pending = fetch(input, init);
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

  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    ...(opts.headers ? { requestInit: { headers: opts.headers } } : {}),
    // Fail fast instead of retrying for seconds when a stream breaks.
    reconnectionOptions: {
      initialReconnectionDelay: 50,
      maxReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 2,
    },
  });
  const client = new Client(
    { name: opts.clientName ?? "gateway-integration-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
  );

  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    push({ kind: "request", method: req.method, params: req.params });
    return opts.onElicit ? await opts.onElicit(req.params) : DEFAULT_ELICIT_RESULT;
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    push({ kind: "request", method: req.method, params: req.params });
    return opts.onSample ? await opts.onSample(req.params) : DEFAULT_SAMPLE_RESULT;
  });
  client.setRequestHandler(ListRootsRequestSchema, async (req) => {
    push({ kind: "request", method: req.method, params: req.params });
    return { roots: opts.roots ?? DEFAULT_ROOTS };
  });
  client.fallbackNotificationHandler = async (n) => {
    push({ kind: "notification", method: n.method, params: n.params });
  };

  await client.connect(transport);

  let closing: Promise<void> | undefined;
  return {
    url,
    client,
    transport,
    events,
    http,
    sessionId: () => transport.sessionId,
    waitForEvent(match, timeoutMs = 10_000) {
      const found = events.find(match);
      if (found) return Promise.resolve(found);
      return new Promise<ServerEvent>((resolve, reject) => {
        const waiter = {
          match,
          resolve: (e: ServerEvent) => {
            clearTimeout(timer);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`no matching server event within ${timeoutMs} ms; got ${JSON.stringify(events)}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    async standaloneStream(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const get = http.find((x) => x.method === "GET");
        if (get) {
          await get.responded;
          if (get.status === 200) return get;
          throw new Error(`the standalone GET stream was refused with status ${get.status}`);
        }
        if (Date.now() > deadline) throw new Error(`no standalone GET stream within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: () => (closing ??= client.close().catch(() => undefined)),
  };
}
