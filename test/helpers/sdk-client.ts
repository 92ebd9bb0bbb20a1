import { EventLog, recordingFetch, type HttpExchange } from "./recording.js";
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
interface ServerEvent {
  kind: "notification" | "request";
  method: string;
  params: unknown;
}

/** One HTTP exchange made by the client transport, as seen by the client. */
export type { HttpExchange } from "./recording.js";

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
  /** The fetch under the recording one (default: the global fetch). */
  fetch?: typeof fetch;
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

/**
 * Connects an `@modelcontextprotocol/sdk` 1.x Client over Streamable HTTP, declaring
 * elicitation, sampling and roots capabilities with handlers, and recording what the
 * server sends and every HTTP exchange the transport makes.
 */
export async function connectSdkClient(url: string, opts: SdkClientOptions = {}): Promise<SdkClientHandle> {
  const log = new EventLog<ServerEvent>();
  const { events } = log;
  const push = (e: ServerEvent): void => log.push(e);
  const http: HttpExchange[] = [];

  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch(http, opts.fetch),
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
    waitForEvent: (match, timeoutMs) => log.waitFor(match, timeoutMs),
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
