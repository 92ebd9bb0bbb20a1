// Connection management to the upstream, kept apart from request logic (as in
// undici's dispatcher/API split). One keep-alive Pool per upstream origin;
// `request` is used on the hot path because undici's fetch costs ~4x the CPU.
import type { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { rootCertificates, type TLSSocket } from "node:tls";
import { Client, Pool, type buildConnector, type Dispatcher } from "undici";
import { DEFAULT_UPSTREAM_NAME, type UpstreamConfig } from "../config/schema.js";
import { ConfigError } from "../config/validate.js";
import { spanFailed, startUpstreamSpan, tracingOn, upstreamAnswered } from "../telemetry/trace.js";

export interface UpstreamRequest {
  method: "GET" | "POST" | "DELETE" | "OPTIONS";
  /** Query string from the client ("" or "?a=b"), merged with the upstream URL's own. */
  search: string;
  headers: string[];
  body?: Buffer | undefined;
  /** An AbortSignal, or (on the hot path) an EventEmitter that emits "abort". */
  signal: AbortSignal | EventEmitter;
  /**
   * The JSON-RPC message in the body, when the caller has it parsed (it must be the body's JSON): names the
   * upstream span (tracing), and an in-process upstream (stdio) takes it instead of parsing the body again.
   */
  message?: unknown;
  /**
   * The caller's identity digest, for an in-process upstream (stdio) that shares its processes out per caller
   * (upstream.maxProcessesPerCaller); never sent anywhere.
   */
  caller?: string | undefined;
}

/** What an in-process dispatcher (a stdio host) gets with a request, as undici's `opaque`. */
export interface InProcessExtras {
  message: unknown;
  caller: string | undefined;
}

/** Told about every upstream request (the metrics); set by the composition root (src/gateway/), absent when metrics are off. */
export interface UpstreamObserver {
  /** Response headers arrived after `seconds`. */
  answered(method: string, status: number, seconds: number): void;
  /** No response: `aborted` when the request's own signal stopped it (the client left, the gateway stopped it). */
  failed(method: string, err: unknown, aborted: boolean, seconds: number): void;
}

export interface ProbeResult {
  reachable: boolean;
  status?: number;
  cause?: string;
}

export class UpstreamClient {
  readonly url: URL;
  /**
   * How the upstream is named to clients and in logs: scheme, host and port only. Hosted MCP URLs
   * often carry a secret in the path or query, so neither ever leaves the gateway.
   */
  readonly displayUrl: string;
  private readonly pool: Dispatcher;
  /** The dispatcher serves requests in process (a stdio host): it gets the parsed message too, as undici's `opaque`. */
  private readonly inProcess: boolean;
  /**
   * true with upstream.http2 (else undefined, undici's own default): every request may share an h2
   * connection with others. undici's h2 client sends a request it deems non-idempotent (any POST) only
   * on a connection with nothing else in flight, so without this a POST queues behind a held call.
   * undici never replays a request on its own; on HTTP/1.1 (pipelining 1) the flag changes nothing.
   */
  private readonly multiplexed: true | undefined;
  /** Metrics hook; undefined (metrics off) costs one property read per request. */
  observer: UpstreamObserver | undefined;

  /**
   * Static headers of the upstream's block (upstream.headers), as a flat list, replacing a request's own
   * header of the same name; undefined without any, so the hot path pays one check.
   */
  private readonly fixed: { names: ReadonlySet<string>; flat: readonly string[] } | undefined;

  /**
   * `name`: the upstream's configured name (default for the single upstream): task ids, labels and logs carry it.
   * `replica`: another replica's internal listener. Its `tls` replaces the TLS settings of an https:// URL
   * (server.internalTls: verified against its own CA only, with this replica's client certificate); its
   * `socketPath` is a Unix socket to connect to instead of the URL's host (a replica of this host).
   * `dispatcher`: serves the requests instead of a connection pool (a stdio upstream's host, in process).
   */
  constructor(
    config: UpstreamConfig,
    readonly name: string = DEFAULT_UPSTREAM_NAME,
    replica?: { tls?: { ca: Buffer; cert: Buffer; key: Buffer } | undefined; socketPath?: string | undefined },
    dispatcher?: Dispatcher,
  ) {
    // A stdio upstream (upstream.command) gets its URL from the stdio host's internal listener.
    if (config.url === undefined)
      throw new Error("upstream.url is not set (a stdio upstream needs a started stdio host)");
    this.url = new URL(config.url);
    this.displayUrl = this.url.origin;
    const fixed = Object.entries(config.headers);
    this.fixed =
      fixed.length === 0
        ? undefined
        : { names: new Set(fixed.map(([h]) => h.toLowerCase())), flat: fixed.flatMap(([h, v]) => [h, v]) };
    // TLS settings apply to an https:// upstream only (the schema refuses them on any other; a stdio
    // upstream's internal listener is plain HTTP on loopback and gets neither).
    const tls = this.url.protocol === "https:";
    const ca = tls && config.caFile !== undefined ? readCaFile(config.caFile) : undefined;
    const http2 = tls && config.http2;
    this.multiplexed = http2 || undefined;
    this.inProcess = dispatcher !== undefined;
    this.pool =
      dispatcher ??
      new Pool(this.url.origin, {
        // undici: null = as many connections as there are requests in flight (bounded by the clients' own concurrency).
        // On h2 it caps connections, each carrying up to http2MaxStreams requests.
        connections: config.connections === 0 ? null : config.connections,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        headersTimeout: config.headersTimeoutMs,
        bodyTimeout: config.idleTimeoutMs,
        connect: {
          timeout: config.connectTimeoutMs,
          ...(ca !== undefined && { ca }),
          ...(tls && replica?.tls),
        },
        ...(replica?.socketPath !== undefined && { socketPath: replica.socketPath }),
        ...(http2 && {
          allowH2: true,
          maxConcurrentStreams: config.http2MaxStreams,
          factory: multiplexingClients(config.http2MaxStreams),
        }),
      });
  }

  private pathFor(search: string): string {
    const own = this.url.search;
    if (!search || search === "?") return `${this.url.pathname}${own}`;
    return own ? `${this.url.pathname}${own}&${search.slice(1)}` : `${this.url.pathname}${search}`;
  }

  request(req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    const observer = this.observer;
    if (tracingOn()) {
      const sent = this.tracedRequest(req);
      return observer ? observed(observer, req, sent) : sent;
    }
    const opts: Dispatcher.RequestOptions<null> = {
      path: this.pathFor(req.search),
      method: req.method,
      headers: this.headersOf(req.headers),
      body: req.body,
      signal: req.signal,
      idempotent: this.multiplexed,
      opaque: this.parsedFor(req),
    };
    if (!observer) return this.pool.request(opts);
    // Timed in undici's callback, inside the one promise its request() would build anyway: an async wrapper
    // around the request's promise (as `observed` is) cost a frame, a promise and a microtask hop per request
    // on the pass-through.
    const start = performance.now();
    return new Promise((resolve, reject) => {
      this.pool.request(opts, (err, res) => {
        const seconds = (performance.now() - start) / 1000;
        // Settled first: an observer that threw must neither strand the request nor throw into undici. The
        // caller's continuation runs after this callback, so the observation still comes before it.
        if (err) reject(err);
        else resolve(res);
        try {
          if (err) observer.failed(req.method, err, (req.signal as { aborted?: unknown }).aborted === true, seconds);
          else observer.answered(req.method, res.statusCode, seconds);
        } catch {
          // Metrics only: a request is never failed by its observation.
        }
      });
    });
  }

  /** The request's headers with the static ones in place of any of the same name. */
  private headersOf(headers: string[]): string[] {
    const fixed = this.fixed;
    if (!fixed) return headers;
    const out: string[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (!fixed.names.has((headers[i] as string).toLowerCase()))
        out.push(headers[i] as string, headers[i + 1] as string);
    }
    out.push(...fixed.flat);
    return out;
  }

  /**
   * An in-process dispatcher gets the parsed message and the caller as undici's `opaque` (nothing reads it back
   * from the answer); undici types `opaque` by the answer's generic, null here.
   */
  private parsedFor(req: UpstreamRequest): null {
    return (this.inProcess ? ({ message: req.message, caller: req.caller } satisfies InProcessExtras) : null) as null;
  }

  /**
   * With tracing on, every upstream request is a CLIENT span, child of the active context (the
   * client's request, or a task's span), and carries it upstream as traceparent/tracestate in
   * place of whatever the client sent. The span ends with the answer's body.
   */
  private async tracedRequest(req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    const { span, headers } = startUpstreamSpan(req.method, this.url, this.headersOf(req.headers), req.message);
    span.setAttribute("mcp_gateway.upstream", this.name);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        path: this.pathFor(req.search),
        method: req.method,
        headers,
        body: req.body,
        signal: req.signal,
        idempotent: this.multiplexed,
        opaque: this.parsedFor(req),
      });
    } catch (err) {
      spanFailed(span, err);
      span.end();
      throw err;
    }
    upstreamAnswered(span, res.statusCode);
    // An event stream may last long after its headers: the span covers the exchange until its body is done.
    res.body.once("close", () => span.end());
    return res;
  }

  /** Any HTTP answer means the upstream is reachable; OPTIONS opens no session or stream. */
  async probe(timeoutMs: number): Promise<ProbeResult> {
    try {
      const res = await this.pool.request({
        path: this.pathFor(""),
        method: "OPTIONS",
        headers: this.headersOf([]),
        headersTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
        idempotent: this.multiplexed,
      });
      await res.body.dump();
      return { reachable: true, status: res.statusCode };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      return { reachable: false, cause: typeof code === "string" ? code : (err as Error).name };
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }

  /** Closes once the requests in flight are done (undici Pool.close), new ones refused. */
  async drain(): Promise<void> {
    await this.pool.close();
  }
}

/** Times a traced request to its response headers for the observer (the metrics). */
async function observed(
  observer: UpstreamObserver,
  req: UpstreamRequest,
  sent: Promise<Dispatcher.ResponseData>,
): Promise<Dispatcher.ResponseData> {
  const start = performance.now();
  try {
    const res = await sent;
    observer.answered(req.method, res.statusCode, (performance.now() - start) / 1000);
    return res;
  } catch (err) {
    const aborted = (req.signal as { aborted?: unknown }).aborted === true;
    observer.failed(req.method, err, aborted, (performance.now() - start) / 1000);
    throw err;
  }
}

/**
 * The Pool's connections with upstream.http2. undici's Client runs `pipelining` requests at once on
 * its connection, h2 or not (default 1: one connection per request in flight, h2 gains nothing), and
 * the Pool opens another connection only when every Client is full. So each connection's limit is set
 * from what ALPN chose: `streams` on h2, 1 on HTTP/1.1 (pipelining there would queue calls behind a
 * held one). A connection starts at 1 until it is up, because requests queued on a Client that turns
 * out to be HTTP/1.1 would wait behind the first; the price is that a burst before the first h2
 * connection is up opens one connection per request (later requests go to the first with room).
 * undici does not cap streams at the upstream's SETTINGS_MAX_CONCURRENT_STREAMS itself (Node's
 * http2 queues the excess), hence `streams` must not exceed it.
 */
function multiplexingClients(streams: number): (origin: URL, opts: object) => Dispatcher {
  return (origin, opts) => {
    const options = opts as Client.Options;
    // The Pool hands every Client the connector it built (TLS options, allowH2 → ALPN h2 and http/1.1).
    const connect = options.connect as buildConnector.connector;
    const client: Client = new Client(origin, {
      ...options,
      pipelining: 1,
      connect: (target, done) => {
        connect(target, (err, socket) => {
          // On a failure undici passes (err) alone, whatever its types say.
          if (err) {
            done(err, null);
            return;
          }
          client.pipelining = (socket as Partial<TLSSocket>).alpnProtocol === "h2" ? streams : 1;
          done(null, socket);
        });
      },
    });
    // A new connection may negotiate differently (the upstream was reconfigured): 1 until it is up.
    client.on("disconnect", () => {
      client.pipelining = 1;
    });
    return client;
  };
}

/**
 * upstream.caFile: Node's bundled roots plus the file's certificates. Read once, at start (and by --check, which
 * refuses the same files with the same messages). A ConfigError, so that the CLI exits 2 naming the file.
 */
export function readCaFile(file: string): string[] {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError([
      `upstream.caFile ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    ]);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----"))
    throw new ConfigError([`upstream.caFile ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`]);
  return [...rootCertificates, pem];
}
