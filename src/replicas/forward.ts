// Forwarding to the replica that runs a task. tasks/update, tasks/cancel and
// MRTR retries may land on any replica, but only the one holding the upstream
// call can apply them. The request is proxied as it came (same credentials, so
// the target checks the caller itself) to that replica's internal listener,
// whose address it registered in the store, and its answer streams back. The
// client is answered only once the target has applied the change.
import type { GatewayConfig } from "../config/schema.js";
import { upstreamSchema } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { classifyUpstreamFailure, runnerUnreachable, sessionNotFound, type Fault } from "../protocol/errors.js";
import type { JsonRpcId } from "../protocol/jsonrpc.js";
import type { TaskLeases } from "../store/task-leases.js";
import { UpstreamClient } from "../upstream/client.js";
import { faultResponse } from "../web/json-response.js";
import type { InFlight } from "../http/inflight.js";
import type { Exchange } from "../server/exchange.js";
import { createProxyHandler } from "../http/proxy.js";
import { FORWARDED_HEADER, forwardToken } from "./forward-token.js";
import { UNIX_ADDRESS, type LocalSockets } from "./local-sockets.js";

/**
 * Most (replica, route) targets kept with an open connection pool: a forwarded request goes to the runner's
 * internal listener at the route it came to, so each upstream's route there is a target of its own.
 */
const MAX_TARGETS = 64;

export interface ForwarderOptions {
  leases: TaskLeases;
  /** See forwardingKey(). */
  key: Buffer;
  config: GatewayConfig;
  inflight: InFlight;
  log: Logger;
  now: () => number;
  /** server.internalTls: replicas speak HTTPS to each other, verified against this CA, with this client certificate. */
  tls?: { ca: Buffer; cert: Buffer; key: Buffer } | undefined;
  /** server.internalSocketDir: replicas of this host that listen there are reached through their Unix socket. */
  local?: LocalSockets | undefined;
}

type Handler = ReturnType<typeof createProxyHandler>;

export class ReplicaForwarder {
  private readonly targets = new Map<string, { client: UpstreamClient; handler: Handler }>();

  constructor(private readonly opts: ForwarderOptions) {}

  /**
   * The credential for one forwarded request: bound to its method, path and body, used once, with what was
   * decided here (rate limits), so the owner counts nothing twice and exempts nothing on a header alone.
   */
  private credential(ex: Exchange): string[] {
    const { key, leases, now } = this.opts;
    const req = { method: ex.method, path: ex.path, body: (ex.clientPost ?? ex.post)?.body };
    return [FORWARDED_HEADER, forwardToken(key, leases.replicaId, req, ex.limitsDecided, now())];
  }

  /**
   * Where to reach replica `replicaId`, registered at `registered`: its Unix socket when it shares this replica's
   * socket directory (a worker of this host), else the registered address. Only a registered replica is looked
   * for, so a replica whose registration lapsed is gone here as it is everywhere.
   */
  addressFor(replicaId: string, registered: string): string {
    return this.opts.local?.addressOf(replicaId) ?? registered;
  }

  /**
   * `path`: the route the request came to (an upstream's), served on the runner's internal listener as well.
   * `session`: the target holds a session (issue 23), and failing to reach it ends the session (404).
   */
  private target(address: string, path: string, headersTimeoutMs: number, session = false): Handler {
    const key = `${session ? "s" : "t"}${headersTimeoutMs} ${address}${path}`;
    const known = this.targets.get(key);
    if (known) {
      // Least recently used goes first: a hit moves to the end.
      this.targets.delete(key);
      this.targets.set(key, known);
      return known.handler;
    }
    if (this.targets.size >= MAX_TARGETS) {
      const [oldest] = this.targets.entries();
      if (oldest) {
        this.targets.delete(oldest[0]);
        // Requests already forwarded through it finish first.
        void oldest[1].client.drain();
      }
    }
    const { config } = this.opts;
    // One pool per target, kept: its keep-alive connections carry the next requests (idle ones close after
    // upstream.keepAliveTimeoutMs' default, 4 s, before the listener's own 5 s would). Not capped: a forwarded
    // event stream holds a connection as long as it lasts. A Unix socket's address names a file; the URL's host is
    // then only a label.
    const socketPath = address.startsWith(UNIX_ADDRESS) ? address.slice(UNIX_ADDRESS.length) : undefined;
    const client = new UpstreamClient(
      upstreamSchema.parse({
        url: socketPath === undefined ? `${address}${path}` : `http://localhost${path}`,
        headersTimeoutMs,
        connectTimeoutMs: config.tasks.forwardTimeoutMs,
      }),
      undefined,
      { tls: this.opts.tls, socketPath },
    );
    const handler = createProxyHandler({
      upstream: client,
      inflight: this.opts.inflight,
      log: this.opts.log,
      maxBodyBytes: config.server.maxBodyBytes,
      sseKeepAliveMs: 0,
      now: this.opts.now,
      extraHeaders: (ex) => this.credential(ex),
      // The other replica runs the auth gate again: it needs the client's token, not the upstream's view.
      clientHeaders: true,
      failure: (err): Fault => {
        const failure = classifyUpstreamFailure(err);
        this.opts.log.warn(
          session
            ? "forwarding to the replica holding a session failed"
            : "forwarding to the replica running a task failed",
          { reason: failure.reason, cause: failure.cause },
        );
        // A session whose owner cannot be reached is over: 404 is the legacy signal to start a new one.
        if (session) return sessionNotFound();
        return runnerUnreachable(failure.status === 504 ? "it did not answer in time" : "it is unreachable");
      },
    });
    this.targets.set(key, { client, handler });
    return handler;
  }

  /**
   * Proxies the request to replica `runner`. `headersTimeoutMs` bounds the wait
   * for its answer to start (tasks.forwardTimeoutMs for task control; longer for
   * an MRTR retry, whose answer is the upstream call's).
   */
  async forward(ex: Exchange, id: JsonRpcId, runner: string, headersTimeoutMs: number): Promise<Response> {
    let address: string | undefined;
    try {
      address = await this.opts.leases.addressOf(runner);
    } catch (err) {
      return faultResponse(id, runnerUnreachable(`the task store did not say where it is (${(err as Error).message})`));
    }
    if (!address) return faultResponse(id, runnerUnreachable("it is no longer registered"));
    return this.target(this.addressFor(runner, address), ex.path, headersTimeoutMs)(ex);
  }

  /**
   * Proxies a request on a session to the replica at `address` that holds it (replicas/session-routing.ts), as it
   * came: POST, GET (with Last-Event-ID) or DELETE; the answer streams back. Unreachable: 404.
   */
  session(ex: Exchange, address: string, headersTimeoutMs: number): Promise<Response> {
    return this.target(address, ex.path, headersTimeoutMs, true)(ex);
  }

  async close(): Promise<void> {
    await Promise.all([...this.targets.values()].map((t) => t.client.close()));
    this.targets.clear();
  }
}
