// One JSON-RPC POST to the upstream, with its answer read as a sequence of
// JSON-RPC messages whether the upstream replied with JSON or with SSE. Used by
// the era bridge, which (unlike the pass-through) must understand the answer.
import type { Dispatcher } from "undici";
import { headerValue, isEventStream } from "../protocol/headers.js";
import { isRecord } from "../protocol/json.js";
import type { UpstreamClient } from "./client.js";
import { SseMessages } from "./sse-messages.js";

export interface RpcAnswer {
  status: number;
  headers: Dispatcher.ResponseData["headers"];
  /** The JSON-RPC messages of the answer, in order (none for 202). Unparsable SSE data is skipped. */
  messages: AsyncIterableIterator<unknown>;
  /** Stops reading and releases the connection. */
  discard(): void;
  /**
   * The id of the SSE event that carried the last message read (or of a later
   * event without one): where a GET with Last-Event-ID resumes the stream.
   * Undefined for a JSON answer, or a stream whose events carry no ids.
   */
  lastEventId(): string | undefined;
}

/** Largest non-streamed answer the bridge reads into memory (errors, JSON results). */
const MAX_JSON_ANSWER = 64 * 1024 * 1024;

async function* jsonMessages(body: Dispatcher.ResponseData["body"]): AsyncGenerator<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > MAX_JSON_ANSWER) throw new Error(`upstream JSON answer exceeds ${MAX_JSON_ANSWER} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) return;
  const parsed: unknown = JSON.parse(Buffer.concat(chunks, size).toString("utf8"));
  if (Array.isArray(parsed)) yield* parsed;
  else yield parsed;
}

export async function postRpc(
  upstream: UpstreamClient,
  headers: string[],
  message: unknown,
  signal: AbortSignal,
): Promise<RpcAnswer> {
  const own: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = (headers[i] as string).toLowerCase();
    // The body is ours, so its media types are too.
    // The bridge parses what comes back, so it asks for it unencoded.
    if (name !== "content-type" && name !== "accept" && name !== "accept-encoding" && name !== "content-length") {
      own.push(name, headers[i + 1] as string);
    }
  }
  const res = await upstream.request({
    method: "POST",
    search: "",
    headers: [
      ...own,
      "content-type",
      "application/json",
      "accept",
      "application/json, text/event-stream",
      "accept-encoding",
      "identity",
    ],
    body: Buffer.from(JSON.stringify(message)),
    signal,
    message,
  });
  return answerOf(res);
}

/**
 * Resumes a call's SSE answer on a new connection: GET with Last-Event-ID, on
 * the call's session (Streamable HTTP resumability). The upstream replays what
 * came after that event, then the rest of the call's messages, its response
 * included. Only for an upstream that gave its events ids.
 */
export async function resumeRpc(
  upstream: UpstreamClient,
  headers: string[],
  lastEventId: string,
  signal: AbortSignal,
): Promise<RpcAnswer> {
  const res = await upstream.request({
    method: "GET",
    search: "",
    headers: [...headers, "accept", "text/event-stream", "accept-encoding", "identity", "last-event-id", lastEventId],
    signal,
  });
  return answerOf(res);
}

const ignore = (): void => {};

function answerOf(res: Dispatcher.ResponseData): RpcAnswer {
  // Discarding destroys the body; without a listener that 'error' would crash the process.
  res.body.on("error", ignore);
  const contentType = headerValue(res.headers, "content-type");
  // SSE is read by callbacks (sse-messages.ts), which record the resume cursor as messages are handed on.
  const sse = isEventStream(contentType) ? new SseMessages(res.body) : undefined;
  const messages =
    sse ??
    (contentType?.toLowerCase().startsWith("application/json")
      ? jsonMessages(res.body)
      : (async function* () {
          await res.body.dump();
        })());
  return {
    status: res.statusCode,
    headers: res.headers,
    messages,
    discard: () => res.body.destroy(),
    lastEventId: () => sse?.cursor,
  };
}

/** The first message of a small answer (e.g. a JSON error body); undefined if there is none or it is unparsable. */
export async function firstMessage(answer: RpcAnswer): Promise<unknown> {
  try {
    for await (const m of answer.messages) return m;
  } catch {
    // An unparsable error body says nothing more than its status.
  }
  return undefined;
}

/** Reads an answer until the response with `id` (skipping notifications before it). */
export async function responseTo(answer: RpcAnswer, id: string | number): Promise<unknown> {
  let first: unknown;
  for await (const m of answer.messages) {
    first ??= m;
    if (isRecord(m) && m.id === id && ("result" in m || "error" in m)) {
      answer.discard();
      return m;
    }
  }
  // No matching response: an error body without id (e.g. 400 "No valid session ID"), or nothing.
  return first;
}
