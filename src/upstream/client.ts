// Connection management to the upstream, kept apart from request logic (as in
// undici's dispatcher/API split). One keep-alive Pool per upstream origin;
// `request` is used on the hot path because undici's fetch costs ~4x the CPU.
import type { EventEmitter } from "node:events";
import { Pool, type Dispatcher } from "undici";
import type { GatewayConfig } from "../config/schema.js";

export interface UpstreamRequest {
  method: "GET" | "POST" | "DELETE" | "OPTIONS";
  /** Query string from the client ("" or "?a=b"), merged with the upstream URL's own. */
  search: string;
  headers: string[];
  body?: Buffer | undefined;
  /** An AbortSignal, or (on the hot path) an EventEmitter that emits "abort". */
  signal: AbortSignal | EventEmitter;
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
  private readonly pool: Pool;

  constructor(config: GatewayConfig["upstream"]) {
    // A stdio upstream (upstream.command) gets its URL from the stdio host's internal listener.
    if (config.url === undefined) throw new Error("upstream.url is not set (a stdio upstream needs a started stdio host)");
    this.url = new URL(config.url);
    this.displayUrl = this.url.origin;
    this.pool = new Pool(this.url.origin, {
      // undici: null = as many connections as there are requests in flight (bounded by the clients' own concurrency).
      connections: config.connections === 0 ? null : config.connections,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      bodyTimeout: config.idleTimeoutMs,
      connect: { timeout: config.connectTimeoutMs },
    });
  }

  private pathFor(search: string): string {
    const own = this.url.search;
    if (!search || search === "?") return `${this.url.pathname}${own}`;
    return own ? `${this.url.pathname}${own}&${search.slice(1)}` : `${this.url.pathname}${search}`;
  }

  request(req: UpstreamRequest): Promise<Dispatcher.ResponseData> {
    return this.pool.request({
      path: this.pathFor(req.search),
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: req.signal,
    });
  }

  /** Any HTTP answer means the upstream is reachable; OPTIONS opens no session or stream. */
  async probe(timeoutMs: number): Promise<ProbeResult> {
    try {
      const res = await this.pool.request({
        path: this.pathFor(""),
        method: "OPTIONS",
        headersTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
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
