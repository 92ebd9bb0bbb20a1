// The transparent pass-through for the MCP endpoint: POST, GET and DELETE (and
// OPTIONS, for CORS preflights the upstream may answer) go to the upstream as
// they came, and its answer streams back byte for byte.
//
// When served by @hono/node-server (the normal case) the handler reads the body
// straight from Node's IncomingMessage and pipes the upstream body into the
// ServerResponse itself. That skips two web-stream conversions on the hot path
// and sidesteps Node 20's `Readable.toWeb` "Controller is already closed" crash
// when clients drop mid-response (nodejs/node#64529). Elsewhere (app.fetch in
// tests or other runtimes) it builds a guarded web ReadableStream instead.
import type { ServerResponse } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";
import { RESPONSE_ALREADY_SENT } from "../server/node-server.js";
import type { Dispatcher } from "undici";
import { clientResponseHeaders, headerValue, isEventStream, upstreamRequestHeaders } from "../protocol/headers.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import { modernOnlySupported } from "../protocol/era-translate.js";
import { MODERN_VERSION } from "../protocol/modern-request.js";
import {
  answerTooLarge,
  refusalTooLarge,
  shuttingDown,
  upstreamBrokeStream,
  upstreamCredentialsRejected,
  upstreamFault,
  upstreamModernOnly,
  type Fault,
} from "../protocol/errors.js";
import type { ResultEdit } from "../protocol/answer-edit.js";
import { faultResponse } from "../web/json-response.js";
import { AnswerTooLargeError, editResponse } from "../web/edit-response.js";
import type { UpstreamClient, UpstreamRequest } from "../upstream/client.js";
import type { Logger } from "../log/logger.js";
import type { InFlight } from "./inflight.js";
import { Aborter } from "../upstream/aborter.js";
import type { Exchange } from "../server/exchange.js";
import { pumpBody, type Pump, type PumpSink } from "./pump.js";

export interface ProxyDeps {
  upstream: UpstreamClient;
  inflight: InFlight;
  log: Logger;
  maxBodyBytes: number;
  sseKeepAliveMs: number;
  now: () => number;
  /** Headers added to a proxied request (name, value, …): the replica forwarder's credential for it. */
  extraHeaders?: ((ex: Exchange) => string[]) | undefined;
  /**
   * Send the client's own headers rather than what the auth gate made of them for the upstream: the
   * replica forwarder's target is another gateway, which authenticates the request again.
   */
  clientHeaders?: boolean | undefined;
  /** The caller's digest for an in-process upstream's per-caller share (a stdio initialize); undefined otherwise. */
  caller?: ((ex: Exchange) => string | undefined) | undefined;
  /** What a failure to reach the target answers; default: the upstream failure mapping. */
  failure?: ((err: unknown) => Fault) | undefined;
  /** How long the body of a refused initialize may take to arrive (upstream.controlTimeoutMs); default 10 s. */
  refusalReadMs?: number | undefined;
}

type ProxiedMethod = UpstreamRequest["method"];

/** Bound on an answer read whole to be edited: a tools/list page, never a call's stream. */
export const MAX_EDITED_ANSWER_BYTES = 16 * 1024 * 1024;

export function createProxyHandler(deps: ProxyDeps) {
  const { upstream, log } = deps;

  /**
   * The request goes on as it came, with the body the pipeline read (`ex.post`; other methods have none).
   * `edit`: rewrite the answer to the POST's request (tools/list under access rules); the answer is then
   * read whole instead of streamed.
   */
  return async (ex: Exchange, edit?: ResultEdit): Promise<Response> => {
    const method = ex.method as ProxiedMethod;
    const env = ex.node;
    // The forwarder (clientHeaders) sends the request as the client sent it: the replica it reaches runs the
    // catalog step again on it.
    const post = deps.clientHeaders ? (ex.clientPost ?? ex.post) : ex.post;
    const id: JsonRpcId = post?.parsed?.id ?? null;

    // Registered (below) before the upstream answers, so shutdown also sees calls still waiting for headers.
    const proxied = new ProxiedExchange(method === "GET");
    if (env) {
      // One listener on the Node path for the client leaving, before and after the answer streams (it was two,
      // each a closure in a `once` wrapper, on every request). `on`: a response closes once.
      const { outgoing } = env;
      outgoing.on("close", () => {
        if (!outgoing.writableFinished) proxied.clientClosed();
      });
    } else ex.onClientLeft(() => proxied.clientLeft());

    proxied.release = deps.inflight.add(proxied);

    let res: Dispatcher.ResponseData;
    // The access log's upstream_ms (log.access or tracing on); undefined otherwise, and nothing is timed.
    const observed = ex.observed;
    const sentAt = observed ? performance.now() : 0;
    try {
      res = await send(deps, ex, method, post, proxied.controller);
      // The upstream refused the token the gateway obtained for it (upstreams.<name>.oauth): one fresh token,
      // then a clear error rather than the upstream's challenge, which names a server the client has no business with.
      if (res.statusCode === 401 && ex.renewCredential) {
        await res.body.dump();
        res = (await ex.renewCredential()) ? await send(deps, ex, method, post, proxied.controller) : res;
        if (res.statusCode === 401) {
          await res.body.dump();
          proxied.release();
          return faultResponse(id, upstreamCredentialsRejected(upstream.name));
        }
      }
      if (observed) observed.upstreamMs = performance.now() - sentAt;
    } catch (err) {
      proxied.release();
      if (proxied.clientGone) return new Response(null, { status: 499 });
      if (proxied.stoppedByGateway) return faultResponse(id, shuttingDown());
      if (deps.failure) return faultResponse(id, deps.failure(err));
      const fault = upstreamFault(err, upstream.name);
      log.warn("upstream request failed", {
        upstream: upstream.name,
        origin: upstream.displayUrl,
        method,
        reason: fault.failure.reason,
        cause: fault.failure.cause,
      });
      return faultResponse(id, fault);
    }

    // A session the upstream issued to a verified caller's initialize is bound to that caller before the client
    // learns its id (replicas/session-steps.ts), so no other caller can use it, on any replica.
    const issued = ex.onSessionIssued && res.statusCode < 300 ? headerValue(res.headers, "mcp-session-id") : undefined;
    const refused = issued === undefined ? undefined : await ex.sessionIssued(issued);
    if (refused) {
      proxied.release();
      res.body.destroy();
      return faultResponse(id, refused);
    }

    if (post?.parsed?.method === "initialize" && res.statusCode === 400) {
      // A legacy client in front of a modern-only upstream: name the mismatch instead of relaying a bare -32022.
      proxied.release();
      return explainInitializeRejection(res, id, upstream.name, log, deps.refusalReadMs ?? 10_000);
    }

    const contentType = headerValue(res.headers, "content-type");
    const encoding = headerValue(res.headers, "content-encoding");
    // Comments can only be spliced into an uncompressed event stream.
    const eventStream = isEventStream(contentType);
    const keepAliveMs = eventStream && (!encoding || encoding === "identity") ? deps.sseKeepAliveMs : 0;
    const responseHeaders = clientResponseHeaders(res.headers, keepAliveMs > 0);

    if (edit) {
      try {
        return await editResponse(
          streamToWeb(res, responseHeaders, 0, proxied, deps),
          id,
          edit,
          MAX_EDITED_ANSWER_BYTES,
        );
      } catch (err) {
        if (err instanceof AnswerTooLargeError) return faultResponse(id, answerTooLarge(err.limit));
        throw err;
      }
    }
    if (env) {
      streamToNode(env.outgoing, res, responseHeaders, eventStream, keepAliveMs, proxied, deps);
      return RESPONSE_ALREADY_SENT;
    }
    return streamToWeb(res, responseHeaders, keepAliveMs, proxied, deps);
  };
}

/**
 * Sends the request upstream as it came, with the body the pipeline read (`post`). A function of its arguments
 * rather than closures in the handler: it runs once a request (twice when a credential is renewed).
 */
function send(
  deps: ProxyDeps,
  ex: Exchange,
  method: ProxiedMethod,
  post: Exchange["post"],
  controller: Aborter,
): Promise<Dispatcher.ResponseData> {
  const headers = upstreamRequestHeaders(deps.clientHeaders ? ex.clientHeaders() : ex.upstreamHeaders(), {
    clientIp: ex.clientAddress(),
    proto: ex.scheme(),
    host: ex.host(),
  });
  if (deps.extraHeaders) headers.push(...deps.extraHeaders(ex));
  return deps.upstream.request({
    method,
    search: ex.search(),
    headers,
    body: post?.body,
    signal: controller,
    message: post?.parsed?.message,
    caller: deps.caller?.(ex),
  });
}

/**
 * How long an event stream's headers wait for its first event, so that a call answered within it leaves in one
 * write; past it they go alone. Nothing a client does depends on an event stream's headers coming before its first
 * event (the answer is in the events), and 25 ms covers a quick tool call on a loaded host (a stdio echo with 8
 * sessions on 2 cores takes 10–20 ms), where the saved write matters most.
 */
const HEADERS_WAIT_MS = 25;

/** Statuses a web Response must not carry a body with (the Fetch standard's null body statuses). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * The proxied call's state, and its entry in the in-flight registry: one object per request with its steps as
 * methods. Once the answer streams, its pieces go in declared fields for the shared stop(): a per-request closure
 * stored here instead (`stop = () => …` over the stream) set off V8's pretenuring on the pass-through, and every
 * request's objects were promoted to old space (≈4.5 KB each; bench/investigations/gc-promotions.sh).
 */
class ProxiedExchange {
  readonly controller = new Aborter();
  clientGone = false;
  stoppedByGateway = false;
  release: () => void = noop;
  pump: Pump | undefined = undefined;
  /** The Node path's response, or the web path's stream: what stop() ends. */
  outgoing: ServerResponse | undefined = undefined;
  web: ReadableStreamDefaultController<Uint8Array> | undefined = undefined;

  constructor(readonly longLived: boolean) {}

  stop(): void {
    this.stoppedByGateway = true;
    this.pump?.stop();
    this.controller.abort();
    // An idle event stream ends cleanly (the client may resume elsewhere); a call is cut.
    const { outgoing, web } = this;
    if (outgoing) {
      if (this.longLived) outgoing.end();
      else outgoing.destroy();
    } else if (web) {
      try {
        if (this.longLived) web.close();
        else web.error(new Error("gateway shutting down"));
      } catch {
        // The consumer already cancelled.
      }
    }
  }

  clientLeft(): void {
    this.clientGone = true;
    this.controller.abort();
  }

  /** The Node path's response closed unfinished: the client left; an answer streaming to it stops too. */
  clientClosed(): void {
    this.clientLeft();
    if (this.outgoing) {
      this.pump?.stop();
      this.controller.abort();
    }
  }
}

function noop(): void {}

/**
 * The client's side of a pass-through on the Node path. Writes leave in as few packets as they can: on loopback and
 * in VMs a socket write costs more CPU than the proxying around it. The headers go out with the first body bytes,
 * and bytes written in one turn of the event loop leave together (corked until setImmediate; end() uncorks at
 * once), so a quick answer is one write. An event stream whose first event is slow still gets its headers after
 * HEADERS_WAIT_MS. A class, not closures: one per request, its methods shared.
 */
class NodeSink implements PumpSink {
  private headersTimer: NodeJS.Timeout | undefined;
  private corked = false;

  constructor(
    private readonly outgoing: ServerResponse,
    eventStream: boolean,
  ) {
    if (eventStream) {
      // Cleared by the first write (which carries the headers); writeHead alone already counts as headersSent.
      this.headersTimer = setTimeout(flushHeaders, HEADERS_WAIT_MS, this);
      this.headersTimer.unref();
    }
  }

  write(chunk: Uint8Array): boolean {
    if (this.headersTimer) {
      clearTimeout(this.headersTimer);
      this.headersTimer = undefined;
    }
    if (!this.corked) {
      this.corked = true;
      this.outgoing.cork();
      setImmediate(uncork, this);
    }
    return this.outgoing.write(chunk);
  }

  end(): void {
    clearTimeout(this.headersTimer);
    this.corked = false;
    this.outgoing.end();
  }

  fail(): void {
    clearTimeout(this.headersTimer);
    this.outgoing.destroy();
  }

  /** HEADERS_WAIT_MS passed with nothing written: the headers go alone. */
  flushHeaders(): void {
    this.headersTimer = undefined;
    const { outgoing } = this;
    if (!outgoing.writableEnded && !outgoing.destroyed) outgoing.flushHeaders();
  }

  /** The turn of the loop that wrote is over: what it wrote leaves now (end() may have sent it already). */
  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    const { outgoing } = this;
    if (!outgoing.writableEnded && !outgoing.destroyed) outgoing.uncork();
  }
}

function flushHeaders(sink: NodeSink): void {
  sink.flushHeaders();
}

function uncork(sink: NodeSink): void {
  sink.uncork();
}

function streamToNode(
  outgoing: ServerResponse,
  res: Dispatcher.ResponseData,
  headers: Record<string, string | string[]>,
  eventStream: boolean,
  keepAliveMs: number,
  proxied: ProxiedExchange,
  deps: ProxyDeps,
): void {
  const { controller } = proxied;
  outgoing.writeHead(res.statusCode, headers);
  const sink = new NodeSink(outgoing, eventStream);
  const pump = pumpBody(res.body, sink, {
    keepAliveMs,
    now: deps.now,
    onDone: (outcome, err) => {
      proxied.release();
      if (outcome === "failed" && !controller.aborted) {
        deps.log.warn("upstream stream broke", {
          upstream: deps.upstream.name,
          origin: deps.upstream.displayUrl,
          cause: err?.message,
        });
      }
    },
  });
  // The handler's close listener stops the pump once `outgoing` is set (ProxiedExchange.clientClosed).
  proxied.pump = pump;
  proxied.outgoing = outgoing;
  outgoing.on("drain", pump.resume);
}

function streamToWeb(
  res: Dispatcher.ResponseData,
  headers: Record<string, string | string[]>,
  keepAliveMs: number,
  proxied: ProxiedExchange,
  deps: ProxyDeps,
): Response {
  const { controller } = proxied;
  const h = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) h.append(name, v);
  }
  let pump: Pump | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(streamController) {
      // Every call into the controller is guarded: the consumer may cancel at any moment.
      const safe = (fn: () => void): void => {
        try {
          fn();
        } catch {
          pump?.stop();
          controller.abort();
        }
      };
      const sink: PumpSink = {
        write: (chunk) => {
          safe(() => streamController.enqueue(new Uint8Array(chunk)));
          return (streamController.desiredSize ?? 0) > 0;
        },
        end: () => safe(() => streamController.close()),
        fail: (err) => safe(() => streamController.error(err)),
      };
      pump = pumpBody(res.body, sink, {
        keepAliveMs,
        now: deps.now,
        onDone: () => proxied.release(),
      });
      proxied.pump = pump;
      proxied.web = streamController;
    },
    pull() {
      pump?.resume();
    },
    cancel() {
      pump?.stop();
      controller.abort();
    },
  });
  return new Response(NULL_BODY_STATUSES.has(res.statusCode) ? null : stream, {
    status: res.statusCode,
    headers: h,
  });
}

/**
 * The most of a refused initialize's body the gateway reads, and the most it inflates a compressed one to: a
 * modern-only refusal is a few hundred bytes.
 */
const MAX_REJECTION_BYTES = 64 * 1024;

/**
 * A legacy initialize the upstream refused with 400: a modern-only refusal (-32022 naming only modern versions) is
 * answered with the gateway's upstream_modern_only; any other refusal is relayed as the upstream sent it, its bytes
 * and Content-Encoding together (a compressed body is decoded only to be looked at, never relayed decoded).
 *
 * A refusal over MAX_REJECTION_BYTES as sent is not read further: the client gets the gateway's answer_too_large
 * with the upstream's status (see refusalTooLarge), never the first 64 KiB passed off as the whole body, and the
 * operator a log line. A client can rely on the status (the upstream said no) and on the body being either the
 * upstream's, whole, or the gateway's JSON-RPC error saying it is not.
 *
 * Nothing reaches the client before the body has ended, so the read is bounded in time too (`readMs`): a body still
 * arriving then (a trickle no idle timeout catches) is answered upstream_timeout, not waited for for ever.
 */
async function explainInitializeRejection(
  res: Dispatcher.ResponseData,
  id: JsonRpcId,
  upstreamName: string,
  log: Logger,
  readMs: number,
): Promise<Response> {
  const chunks: Buffer[] = [];
  let size = 0;
  const deadline = setTimeout(() => {
    const late = new Error(`the body of its refusal did not end within ${readMs} ms`);
    late.name = "TimeoutError";
    res.body.destroy(late);
  }, readMs);
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > MAX_REJECTION_BYTES) {
        res.body.destroy();
        log.warn("upstream refused initialize with a body too large to relay", {
          upstream: upstreamName,
          status: res.statusCode,
          limit: MAX_REJECTION_BYTES,
        });
        return faultResponse(id, refusalTooLarge(upstreamName, "initialize", res.statusCode, MAX_REJECTION_BYTES));
      }
      chunks.push(chunk);
    }
  } catch (err) {
    // The upstream broke the refusal's body (reset, timeout): a broken stream, as the pass-through says it.
    log.warn("upstream stream broke", { upstream: upstreamName, cause: (err as Error).message });
    return faultResponse(id, upstreamBrokeStream(upstreamName, "initialize", err));
  } finally {
    clearTimeout(deadline);
  }
  const raw = Buffer.concat(chunks, size);
  const text = decodeRefusal(raw, res.headers["content-encoding"]);
  let body: unknown;
  try {
    body = text === undefined ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const supported = modernOnlySupported(body);
  if (supported) {
    return faultResponse(id, upstreamModernOnly(upstreamName, supported, body, MODERN_VERSION));
  }
  const headers = clientResponseHeaders(res.headers, true);
  headers["content-length"] = String(raw.byteLength);
  return new Response(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength), { status: 400, headers });
}

/**
 * A refusal's body as text, decoded from its Content-Encoding (gzip, deflate or br, inflated to at most
 * MAX_REJECTION_BYTES: a decompression bomb stops there, in bounded memory and time); undefined when it cannot be
 * read: an unknown or stacked encoding, a corrupt stream, or one that inflates past the cap (no modern-only refusal
 * is that large). Synchronous: at most 64 KiB in and out, well under a millisecond.
 */
function decodeRefusal(raw: Buffer, contentEncoding: string | string[] | undefined): string | undefined {
  const codings = (Array.isArray(contentEncoding) ? contentEncoding.join(",") : (contentEncoding ?? ""))
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length === 0) return raw.toString("utf8");
  if (codings.length > 1) return undefined;
  const bounded = { maxOutputLength: MAX_REJECTION_BYTES };
  try {
    switch (codings[0]) {
      case "gzip":
      case "x-gzip":
        return gunzipSync(raw, bounded).toString("utf8");
      case "deflate":
        // HTTP's deflate is zlib-wrapped, but some servers send raw deflate (as browsers and undici accept).
        return (isZlibHeader(raw) ? inflateSync(raw, bounded) : inflateRawSync(raw, bounded)).toString("utf8");
      case "br":
        return brotliDecompressSync(raw, bounded).toString("utf8");
      default:
        return undefined;
    }
  } catch {
    // Corrupt, truncated, or past the cap (ERR_BUFFER_TOO_LARGE).
    return undefined;
  }
}

/** A zlib stream's two-byte header (RFC 1950): deflate method, and a check that makes it a multiple of 31. */
function isZlibHeader(raw: Buffer): boolean {
  return raw.length >= 2 && (raw[0]! & 0x0f) === 8 && ((raw[0]! << 8) | raw[1]!) % 31 === 0;
}
