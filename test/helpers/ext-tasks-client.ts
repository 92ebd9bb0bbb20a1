// The official MCP Tasks requester, `@modelcontextprotocol/ext-tasks`, over an
// `@modelcontextprotocol/client` 2.x Client pinned to 2026-07-28.
//
// ext-tasks drives a 2026-07-28 Tasks server only through a host-supplied
// `rawDispatch` (the SDK Client's result codecs reject `resultType: "task"`)
// plus `v2RequestFraming` (the `_meta` envelope it stamps on those requests).
// Our rawDispatch sends the framed request over the Client's own
// StreamableHTTPClientTransport with a private JSON-RPC id, so the transport
// still derives MCP-Protocol-Version / Mcp-Method / Mcp-Name from the body
// exactly as it does for its own requests, and picks the matching response
// out of the transport's message stream before the Client sees it. The same
// tap opens a raw subscriptions/listen for task ids (the Client's listen()
// filter cannot carry notifications.taskIds), whose notifications/tasks then
// reach the Client's handlers and so ext-tasks.
//
// Also here: a recording HTTP proxy to put between the gateway and an
// upstream, which shows what the gateway sent upstream (e.g. the
// notifications/cancelled that must follow tasks/cancel).
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { JSONRPCMessage, JSONRPCRequest, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  DispatchError,
  type ApplicationCreateMessageResult,
  type ApplicationElicitResult,
  type ApplicationInputRequest,
  type JsonRpcResponse,
  type RawClientDispatch,
  type ResolvedInputExchangeContext,
  type TaskEnabledSession,
  type V2RequestFraming,
} from "@modelcontextprotocol/ext-tasks/client";
import { isJsonValue, type JsonValue } from "@modelcontextprotocol/ext-tasks/core";
import { readAcceptedTaskIdsV2 } from "@modelcontextprotocol/ext-tasks/core/v2";
import { createModernClient, MODERN_PROTOCOL_VERSION, type ModernClientHandle } from "./modern-client.js";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** What the requester declares: form elicitation, sampling, roots, and the Tasks extension. */
export const EXT_TASKS_CLIENT_CAPABILITIES = {
  elicitation: { form: {} },
  sampling: {},
  roots: {},
  extensions: { [TASKS_EXTENSION]: {} },
} as const;

const EXT_TASKS_CLIENT_INFO = { name: "gateway-ext-tasks-test", version: "1.0.0" } as const;

/** One input request ext-tasks handed to the application, with where it came from. */
interface RecordedInput {
  request: ApplicationInputRequest;
  /** "task" when it came from a task's inputRequests; "request" for an MRTR retry. */
  scope: ResolvedInputExchangeContext["scope"];
  /** "task-update" when the answer goes back through tasks/update. */
  delivery: ResolvedInputExchangeContext["delivery"];
  taskId: string | undefined;
  inputId: string | undefined;
}

/** One request that went through rawDispatch, and how it ended. */
interface RawDispatchRecord {
  request: JSONRPCRequest;
  headers: Readonly<Record<string, string>> | undefined;
  response?: JsonRpcResponse;
  failure?: string;
}

export interface ExtTasksClientOptions {
  /** Answer to an elicitation (task input or MRTR). Default: accept `{ name: "Ada" }`. */
  onElicit?: (
    params: Readonly<Record<string, JsonValue>>,
  ) => ApplicationElicitResult | Promise<ApplicationElicitResult>;
  /** Answer to a sampling request. Default: a fixed assistant text. */
  onSample?: () => ApplicationCreateMessageResult | Promise<ApplicationCreateMessageResult>;
}

export interface ExtTasksClientHandle {
  modern: Omit<ModernClientHandle, "close" | "waitForEvent">;
  session: TaskEnabledSession;
  /** Every input request ext-tasks routed to the application, in order. */
  inputs: RecordedInput[];
  /** Background errors ext-tasks reported (schema rejections of what the server sent, among others). */
  errors: Error[];
  /** Every request ext-tasks sent through rawDispatch (tools/call, tasks/*). */
  dispatched: RawDispatchRecord[];
  /** Opens subscriptions/listen for these task ids (closed by close()). */
  listenTasks(taskIds: readonly string[]): Promise<TaskListen>;
  /** Closes the session, then the client. Idempotent; never throws. */
  close(): Promise<void>;
}

const DEFAULT_ELICIT_ANSWER: ApplicationElicitResult = { action: "accept", content: { name: "Ada" } };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

type Waiter = (message: JSONRPCMessage) => void;

/**
 * Private traffic on the Client's connected transport: responses to ids we
 * chose, and acknowledgements of listens we opened, are taken out of the
 * transport's message stream before the Client sees them; everything else
 * (notifications included) still goes to the Client. Create it after
 * `client.connect(transport)`, which installs the transport's onmessage.
 */
class TransportTap {
  private seq = 0;
  /** Response waiters by request id. */
  readonly responses = new Map<string, Waiter>();
  /** notifications/subscriptions/acknowledged waiters by subscription (listen request) id. */
  readonly acks = new Map<string, Waiter>();

  constructor(readonly transport: StreamableHTTPClientTransport) {
    const clientOnMessage = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      const id = "id" in message ? message.id : undefined;
      if (typeof id === "string" && ("result" in message || "error" in message)) {
        const waiter = this.responses.get(id);
        if (waiter !== undefined) {
          this.responses.delete(id);
          waiter(message);
          return;
        }
      }
      if (
        "method" in message &&
        message.method === "notifications/subscriptions/acknowledged" &&
        isRecord(message.params)
      ) {
        const meta = message.params._meta;
        const subscription = isRecord(meta) ? meta[SUBSCRIPTION_ID_META] : undefined;
        const waiter = typeof subscription === "string" ? this.acks.get(subscription) : undefined;
        if (waiter !== undefined && typeof subscription === "string") {
          this.acks.delete(subscription);
          waiter(message);
          return;
        }
      }
      clientOnMessage?.call(transport, message);
    };
  }

  nextId(prefix: string): string {
    return `${prefix}-${++this.seq}`;
  }
}

const SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId";

/** The JSON-RPC response message in the shape rawDispatch returns. */
function toDispatchResponse(message: JSONRPCMessage): JsonRpcResponse | Error {
  if ("error" in message) {
    const { code, message: text, data } = message.error;
    return { kind: "error", error: { code, message: text, ...(isJsonValue(data) ? { data } : {}) } };
  }
  if ("result" in message && isJsonValue(message.result)) return { kind: "result", result: message.result };
  return new DispatchError(`not a JSON-RPC response with a JSON result: ${JSON.stringify(message)}`);
}

/**
 * A RawClientDispatch over the Client's own transport, which derives
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name from the framed body.
 */
function transportRawDispatch(tap: TransportTap, log: RawDispatchRecord[]): RawClientDispatch {
  return async (request, options) => {
    if (!isRecord(request) || typeof request.method !== "string")
      throw new DispatchError("rawDispatch needs a request object with a method");
    if (request.params !== undefined && !isRecord(request.params))
      throw new DispatchError("rawDispatch needs object params");
    const id = tap.nextId("ext-tasks");
    const message: JSONRPCRequest = {
      jsonrpc: "2.0",
      id,
      method: request.method,
      ...(request.params === undefined ? {} : { params: request.params }),
    };
    const headers = options?.context?.headers;
    const record: RawDispatchRecord = { request: message, headers };
    log.push(record);
    const signal = options?.signal;
    return await new Promise<JsonRpcResponse>((resolve, reject) => {
      let done = false;
      const finish = (outcome: JsonRpcResponse | Error): void => {
        if (done) return;
        done = true;
        tap.responses.delete(id);
        signal?.removeEventListener("abort", onAbort);
        if (outcome instanceof Error) {
          record.failure = outcome.message;
          reject(outcome);
        } else {
          record.response = outcome;
          resolve(outcome);
        }
      };
      const onAbort = (): void => {
        finish(
          signal?.reason instanceof Error ? signal.reason : new DOMException("The operation was aborted", "AbortError"),
        );
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      tap.responses.set(id, (answer) => finish(toDispatchResponse(answer)));
      tap.transport
        .send(message, {
          ...(signal === undefined ? {} : { requestSignal: signal }),
          ...(headers === undefined ? {} : { headers: { ...headers } }),
          onRequestStreamEnd: () =>
            finish(new DispatchError(`the response stream of ${message.method} ended without an answer`)),
        })
        .then(undefined, (err: unknown) =>
          finish(
            new DispatchError(
              `sending ${message.method} failed: ${err instanceof Error ? err.message : String(err)}`,
              false,
              { cause: err },
            ),
          ),
        );
    });
  };
}

/** The `_meta` framing ext-tasks stamps on tools/call and tasks/* (it adds the Tasks extension itself). */
export function v2Framing(): V2RequestFraming {
  return {
    protocolVersion: MODERN_PROTOCOL_VERSION,
    clientInfo: { ...EXT_TASKS_CLIENT_INFO },
    clientCapabilities: {
      elicitation: { form: {} },
      sampling: {},
      roots: {},
      extensions: { [TASKS_EXTENSION]: {} },
    },
  };
}

/**
 * Connects a 2026-07-28 Client that declares the Tasks extension (server/discover,
 * no initialize) and wraps it in an ext-tasks session with rawDispatch and
 * v2RequestFraming. Session creation throws unless discover advertised
 * `extensions["io.modelcontextprotocol/tasks"]` as exactly `{}`.
 */
export async function connectExtTasksClient(
  url: string,
  opts: ExtTasksClientOptions = {},
): Promise<ExtTasksClientHandle> {
  const modern = createModernClient(url, {
    capabilities: EXT_TASKS_CLIENT_CAPABILITIES,
    clientName: EXT_TASKS_CLIENT_INFO.name,
  });
  await modern.client.connect(modern.transport);
  const tap = new TransportTap(modern.transport);
  const inputs: RecordedInput[] = [];
  const errors: Error[] = [];
  const dispatched: RawDispatchRecord[] = [];
  const record = (request: ApplicationInputRequest, context: ResolvedInputExchangeContext): void => {
    inputs.push({
      request,
      scope: context.scope,
      delivery: context.delivery,
      taskId: context.taskId,
      inputId: context.inputId,
    });
  };
  let session: TaskEnabledSession;
  try {
    session = createTaskSessionFromClient(modern.client, {
      endpointId: `mcp-task-gateway-test:${url}`,
      rawDispatch: transportRawDispatch(tap, dispatched),
      v2RequestFraming: v2Framing(),
      onError: (error) => {
        errors.push(error);
      },
      onInputRequest: createApplicationInputHandler({
        elicitation: async (request, context) => {
          record(request, context);
          return opts.onElicit ? await opts.onElicit(request.params) : DEFAULT_ELICIT_ANSWER;
        },
        sampling: async (request, context) => {
          record(request, context);
          return opts.onSample
            ? await opts.onSample()
            : { role: "assistant", model: "test-model", content: { type: "text", text: "sampled by ext-tasks" } };
        },
        roots: (request, context) => {
          record(request, context);
          return { roots: [{ uri: "file:///tmp/ext-tasks-root", name: "ext-tasks root" }] };
        },
      }),
    });
  } catch (err) {
    await modern.client.close().catch(() => undefined);
    throw err;
  }
  const listens = new Set<TaskListen>();
  let closing: Promise<void> | undefined;
  return {
    modern,
    session,
    inputs,
    errors,
    dispatched,
    listenTasks: async (taskIds) => {
      const listen = await openTaskListen(tap, taskIds);
      listens.add(listen);
      return listen;
    },
    close: () =>
      (closing ??= (async () => {
        for (const l of listens) l.close();
        await session.close().catch(() => undefined);
        await modern.client.close().catch(() => undefined);
      })()),
  };
}

/** An open subscriptions/listen for task ids. */
interface TaskListen {
  /** The task ids the server acknowledged (read with ext-tasks' readAcceptedTaskIdsV2). */
  acceptedTaskIds: string[];
  close(): void;
}

/**
 * Opens `subscriptions/listen` with `notifications.taskIds` on the Client's
 * transport (the 2.x Client's own listen() filter has no taskIds). Resolves at
 * the acknowledgement; the notifications/tasks that follow carry the
 * subscription id and reach the Client's handlers, and so ext-tasks.
 */
async function openTaskListen(tap: TransportTap, taskIds: readonly string[]): Promise<TaskListen> {
  const id = tap.nextId("ext-tasks-listen");
  const framing = v2Framing();
  const message: JSONRPCRequest = {
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: {
      notifications: { taskIds: [...taskIds] },
      _meta: {
        "io.modelcontextprotocol/protocolVersion": framing.protocolVersion,
        "io.modelcontextprotocol/clientInfo": framing.clientInfo,
        "io.modelcontextprotocol/clientCapabilities": framing.clientCapabilities,
      },
    },
  };
  const stop = new AbortController();
  const close = (): void => {
    tap.acks.delete(id);
    tap.responses.delete(id);
    stop.abort();
  };
  try {
    const accepted = await new Promise<string[]>((resolve, reject) => {
      tap.acks.set(id, (ack) => resolve([...readAcceptedTaskIdsV2("params" in ack ? ack.params : undefined)]));
      tap.responses.set(id, (answer) =>
        reject(new Error(`subscriptions/listen was answered before its acknowledgement: ${JSON.stringify(answer)}`)),
      );
      tap.transport
        .send(message, {
          requestSignal: stop.signal,
          onRequestStreamEnd: () =>
            reject(new Error("the subscriptions/listen stream ended before its acknowledgement")),
        })
        .then(undefined, (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))));
    });
    return { acceptedTaskIds: accepted, close };
  } catch (err) {
    close();
    throw err;
  }
}

// ---- Recording proxy (gateway → proxy → upstream) ----

/** One HTTP exchange the gateway made with the upstream, seen from the middle. */
export interface ProxiedExchange {
  method: string;
  sessionId: string | undefined;
  /** The JSON-RPC message(s) in the request body (empty for GET/DELETE). */
  messages: unknown[];
  /** The request headers the gateway sent (Node's lowercase names). */
  headers: IncomingHttpHeaders;
  status: number;
  /** True once the upstream finished its response. */
  finished: boolean;
  /** True when the gateway closed the exchange before the upstream finished it. */
  closedByGateway: boolean;
}

export interface RecordingProxy {
  url: string;
  exchanges: ProxiedExchange[];
  /** JSON-RPC messages the gateway POSTed upstream, with the exchange that carried each. */
  posted(): Array<{ message: Record<string, unknown>; exchange: ProxiedExchange }>;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
  "te",
  "trailer",
  "host",
]);

function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())) out[name] = value;
  }
  return out;
}

function parseMessages(body: Buffer): unknown[] {
  if (body.length === 0) return [];
  try {
    const parsed: unknown = JSON.parse(body.toString("utf8"));
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    return [];
  }
}

/** A transparent HTTP proxy to `targetUrl` (same path) that records what passes through. */
export async function startRecordingProxy(targetUrl: string): Promise<RecordingProxy> {
  const target = new URL(targetUrl);
  const exchanges: ProxiedExchange[] = [];
  const open = new Set<{ destroy(): void }>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const session = req.headers["mcp-session-id"];
    const exchange: ProxiedExchange = {
      method: req.method ?? "GET",
      sessionId: typeof session === "string" ? session : undefined,
      messages: parseMessages(body),
      headers: req.headers,
      status: 0,
      finished: false,
      closedByGateway: false,
    };
    exchanges.push(exchange);
    const headers = forwardHeaders(req.headers);
    if (body.length > 0) headers["content-length"] = String(body.length);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: req.url ?? target.pathname,
        method: req.method,
        headers,
        agent: false,
      },
      (upRes) => {
        exchange.status = upRes.statusCode ?? 0;
        res.writeHead(exchange.status, forwardHeaders(upRes.headers));
        res.flushHeaders();
        upRes.on("data", (chunk: Buffer) => res.write(chunk));
        upRes.once("end", () => {
          exchange.finished = true;
          res.end();
        });
        upRes.once("error", () => res.destroy());
      },
    );
    open.add(upstream);
    upstream.once("close", () => open.delete(upstream));
    upstream.once("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    res.once("close", () => {
      if (!exchange.finished) {
        exchange.closedByGateway = true;
        upstream.destroy();
      }
    });
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    exchanges,
    posted() {
      const out: Array<{ message: Record<string, unknown>; exchange: ProxiedExchange }> = [];
      for (const exchange of exchanges) {
        for (const m of exchange.messages) if (isRecord(m)) out.push({ message: m, exchange });
      }
      return out;
    },
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const r of open) r.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** Polls `probe` until it returns a value (not undefined), or fails after `timeoutMs` with `what`. */
/** The upstream exchange that carried the first POSTed message of `method` matching `where` (the recording proxy's view). */
export function exchangeFor(
  proxy: RecordingProxy,
  method: string,
  where: (m: Record<string, unknown>) => boolean = () => true,
): ProxiedExchange | undefined {
  return proxy.posted().find((p) => p.message.method === method && where(p.message))?.exchange;
}

export async function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * An upstream behind a recording proxy, as gatewayInFrontOf starts one: the gateway is pointed at the proxy's
 * url, and one close ends both.
 */
export async function behindRecordingProxy<U extends { url: string; close(): Promise<unknown> }>(
  upstream: U,
): Promise<{ url: string; upstream: U; recorder: RecordingProxy; close(): Promise<void> }> {
  const recorder = await startRecordingProxy(upstream.url);
  return {
    url: recorder.url,
    upstream,
    recorder,
    close: async () => {
      await recorder.close();
      await upstream.close();
    },
  };
}
