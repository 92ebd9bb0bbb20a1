// An `@modelcontextprotocol/client` 2.x Client pinned to MCP 2026-07-28 ("modern"):
// connects with server/discover (no initialize, no session), declares
// elicitation (form), sampling and roots, answers the embedded input requests of
// MRTR `input_required` results with canned (or per-test) answers, and records
// every notification and handled input request plus every HTTP exchange.
import { EventLog, recordingFetch, type HttpExchange } from "./recording.js";
import {
  Client,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
  type Root,
} from "@modelcontextprotocol/client";

export const MODERN_PROTOCOL_VERSION = "2026-07-28";

/** Something the server sent to the client outside of a final result, in arrival order. */
interface ModernServerEvent {
  /** `notification`: a JSON-RPC notification; `request`: an input request the client's handler answered. */
  kind: "notification" | "request";
  method: string;
  params: unknown;
}

/** One HTTP exchange made by the client transport, as the client saw it. */
/** The same record as the 1.x helper's (see recording.ts). */
export type ModernHttpExchange = HttpExchange;

export interface ModernClientOptions {
  /** Answer to `elicitation/create`. Default: accept with `{ name: "Ada" }`. */
  onElicit?: (params: ElicitRequest["params"]) => ElicitResult | Promise<ElicitResult>;
  /** Answer to `sampling/createMessage`. Default: {@link DEFAULT_MODERN_SAMPLE_RESULT}. */
  onSample?: (params: CreateMessageRequest["params"]) => CreateMessageResult | Promise<CreateMessageResult>;
  /** Roots returned for `roots/list`. Default: {@link DEFAULT_MODERN_ROOTS}. */
  roots?: Root[];
  /** Replaces the declared capabilities (default: elicitation form, sampling, roots). */
  capabilities?: ClientCapabilities;
  /** Extra headers on every request (e.g. Authorization). */
  headers?: Record<string, string>;
  clientName?: string;
}

export interface ModernClientHandle {
  url: string;
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** Notifications (progress excluded: see `onprogress`) and answered input requests, in arrival order. */
  events: ModernServerEvent[];
  http: ModernHttpExchange[];
  /** Resolves with the first event (already received or future) that matches. */
  waitForEvent(match: (e: ModernServerEvent) => boolean, timeoutMs?: number): Promise<ModernServerEvent>;
  /** Closes the client. Idempotent; never throws. */
  close(): Promise<void>;
}

export const DEFAULT_MODERN_ELICIT_RESULT: ElicitResult = { action: "accept", content: { name: "Ada" } };

export const DEFAULT_MODERN_SAMPLE_RESULT: CreateMessageResult = {
  role: "assistant",
  model: "test-model",
  stopReason: "endTurn",
  content: { type: "text", text: "Paris" },
};

const DEFAULT_MODERN_ROOTS: Root[] = [{ uri: "file:///tmp/gateway-modern-root", name: "modern root" }];

const DEFAULT_MODERN_CAPABILITIES: ClientCapabilities = { elicitation: { form: {} }, sampling: {}, roots: {} };

/** Creates the pinned client and its recording transport without connecting. */
export function createModernClient(url: string, opts: ModernClientOptions = {}): Omit<ModernClientHandle, "close"> {
  const log = new EventLog<ModernServerEvent>();
  const { events } = log;
  const push = (e: ModernServerEvent): void => log.push(e);
  const http: ModernHttpExchange[] = [];

  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch(http),
    ...(opts.headers ? { requestInit: { headers: opts.headers } } : {}),
    reconnectionOptions: {
      initialReconnectionDelay: 50,
      maxReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 0,
    },
  });
  const client = new Client(
    { name: opts.clientName ?? "gateway-modern-test", version: "1.0.0" },
    {
      capabilities: opts.capabilities ?? DEFAULT_MODERN_CAPABILITIES,
      versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } },
    },
  );

  const caps = opts.capabilities ?? DEFAULT_MODERN_CAPABILITIES;
  // The client refuses a handler for a capability it did not declare.
  if (caps.elicitation !== undefined) {
    client.setRequestHandler("elicitation/create", async (req) => {
      push({ kind: "request", method: req.method, params: req.params });
      return opts.onElicit ? await opts.onElicit(req.params) : DEFAULT_MODERN_ELICIT_RESULT;
    });
  }
  if (caps.sampling !== undefined) {
    client.setRequestHandler("sampling/createMessage", async (req) => {
      push({ kind: "request", method: req.method, params: req.params });
      return opts.onSample ? await opts.onSample(req.params) : DEFAULT_MODERN_SAMPLE_RESULT;
    });
  }
  if (caps.roots !== undefined) {
    client.setRequestHandler("roots/list", async (req) => {
      push({ kind: "request", method: req.method, params: req.params });
      return { roots: opts.roots ?? DEFAULT_MODERN_ROOTS };
    });
  }
  client.fallbackNotificationHandler = async (n) => {
    push({ kind: "notification", method: n.method, params: n.params });
  };

  return {
    url,
    client,
    transport,
    events,
    http,
    waitForEvent: (match, timeoutMs) => log.waitFor(match, timeoutMs),
  };
}

/**
 * Connects a 2.x Client pinned to 2026-07-28 (server/discover, no initialize).
 * Rejects when the server does not offer 2026-07-28.
 */
export async function connectModernClient(url: string, opts: ModernClientOptions = {}): Promise<ModernClientHandle> {
  const h = createModernClient(url, opts);
  await h.client.connect(h.transport);
  let closing: Promise<void> | undefined;
  return { ...h, close: () => (closing ??= h.client.close().catch(() => undefined)) };
}

// ---- Readers shared by the modern-client integration tests ----

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `{ttlMs, cacheScope}` as found on a result object (undefined when absent). */
export function cacheHintsOf(result: object): { ttlMs: unknown; cacheScope: unknown } {
  return { ttlMs: Reflect.get(result, "ttlMs"), cacheScope: Reflect.get(result, "cacheScope") };
}

/** True when `result` carries spec-valid cache hints (integer ttlMs ≥ 0, public|private scope). */
export function hasValidCacheHints(result: object): boolean {
  const { ttlMs, cacheScope } = cacheHintsOf(result);
  return (
    Number.isSafeInteger(ttlMs) &&
    typeof ttlMs === "number" &&
    ttlMs >= 0 &&
    (cacheScope === "public" || cacheScope === "private")
  );
}

/** The text parts of a tool result, joined with newlines. */
export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
}

/** JSON-RPC messages carried in an HTTP response body (plain JSON or SSE `data:` lines). */
function messagesIn(exchange: ModernHttpExchange): unknown[] {
  const text = exchange.responseText.trim();
  if (text === "") return [];
  if (exchange.contentType?.includes("text/event-stream")) {
    const out: unknown[] = [];
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data !== "") out.push(JSON.parse(data));
    }
    return out;
  }
  return [JSON.parse(text)];
}

/** The parsed JSON-RPC body the client POSTed, or undefined. */
export function requestBodyOf(exchange: ModernHttpExchange): Record<string, unknown> | undefined {
  if (exchange.requestBody === undefined) return undefined;
  const parsed: unknown = JSON.parse(exchange.requestBody);
  return isRecord(parsed) ? parsed : undefined;
}

/** POSTs of `tools/call` for tool `name`, in order. */
export function toolCallExchanges(http: readonly ModernHttpExchange[], name: string): ModernHttpExchange[] {
  return http.filter((x) => {
    const body = requestBodyOf(x);
    return body?.["method"] === "tools/call" && isRecord(body["params"]) && body["params"]["name"] === name;
  });
}

/** The `result` of the first JSON-RPC response in an exchange, if any. */
export function resultIn(exchange: ModernHttpExchange): Record<string, unknown> | undefined {
  for (const m of messagesIn(exchange)) {
    if (isRecord(m) && isRecord(m["result"])) return m["result"];
  }
  return undefined;
}

/** The message of an error, or its string form. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
