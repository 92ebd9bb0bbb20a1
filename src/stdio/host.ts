// A stdio upstream served as Streamable HTTP inside the gateway, one child process per Mcp-Session-Id. The rest
// of the gateway (pass-through, the era bridge, tasks, policy) talks to it exactly as to an HTTP upstream, through
// an undici dispatcher (dispatcher.ts) that hands each request to serve() in process: no listener, no socket, no
// second HTTP parse (issue 27: that loopback hop cost more CPU than the child's own work). Nothing outside the
// gateway can reach it, so it needs no secret. The command comes from the config only.
import { DEFAULT_UPSTREAM_NAME, type UpstreamConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import {
  noValidSession,
  parseError,
  sessionIdRequired,
  sessionNotFound,
  shuttingDown,
  stdioBodyTooLarge,
  tooManyProcesses,
  tooManyProcessesForCaller,
  upstreamProcessFailed,
  type Fault,
} from "../protocol/errors.js";
import { isRecord } from "../protocol/json.js";
import type { HeldSessions } from "../protocol/held-sessions.js";
import type { ProbeResult } from "../upstream/client.js";
import { StdioProcess, type StdioListeners } from "./child.js";
import { checkCommand, childEnv, commandLabel } from "./command.js";
import { processOptions, SessionRefused, SessionStartError, StdioSession, type SessionSettings } from "./session.js";
import { WarmPool } from "./warm-pool.js";

export type StdioUpstreamConfig = UpstreamConfig & { command: string[] };

export interface StdioHostOptions {
  log: Logger;
  /** The upstream's configured name: what clients are told when its process fails (never the command line). */
  name?: string | undefined;
  /**
   * Most processes one caller may hold (upstream.maxProcessesPerCaller, or its default once callers are verified);
   * undefined: no share, only upstream.maxProcesses.
   */
  callerShare?: number | undefined;
  now?: () => number;
  /** The gateway's environment, of which only upstream.inheritEnv is passed on (default process.env). */
  parentEnv?: NodeJS.ProcessEnv;
}

/** The URL the upstream client names requests by: never dialled (dispatcher.ts serves it in process). */
const STDIO_URL = "http://stdio.invalid/mcp";

const ALLOW = "GET, POST, DELETE, OPTIONS";

function noop(): void {}

/** One request's side of an exchange with the host (dispatcher.ts makes it). */
export interface Exchange {
  /** The request's body, read whole (the gateway bounded it by server.maxBodyBytes); undefined: none. */
  body: Buffer | undefined;
  /** The body's JSON-RPC message, when the gateway parsed it already: the body is not parsed again. */
  message?: unknown;
  /** The caller's identity digest, when the gateway knows it: its processes count against its share. */
  caller?: string | undefined;
  /** Settles when the answer has been read to its end or given up. */
  done: Promise<void>;
  /** Aborts when the consumer gives the request up. */
  signal: AbortSignal;
}

const NOT_JSON = Symbol("not JSON");

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return NOT_JSON;
  }
}

function withBody(request: Request, body: Buffer): Request {
  return new Request(request.url, { method: request.method, headers: request.headers, body });
}

function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

function faultAnswer(fault: Fault, id: unknown = null): Response {
  return jsonAnswer(fault.status, { jsonrpc: "2.0", id, error: fault.error }, fault.headers);
}

export class StdioHost {
  /** What the upstream client's requests are addressed to (STDIO_URL); served by serve(), never over a socket. */
  readonly url = STDIO_URL;
  /** The redacted command line, e.g. "stdio: npx -y @modelcontextprotocol/server-everything". */
  readonly label: string;
  private readonly sessions = new Map<string, StdioSession>();
  /** Processes each caller holds or is starting, for its share (only callers that hold one are kept). */
  private readonly byCaller = new Map<string, number>();
  /** New sessions refused, by why: the caller's share, or maxProcesses (a counter, read by metrics). */
  readonly refused = { callerShare: 0, maxProcesses: 0 };
  private readonly procs = new Set<StdioProcess>();
  private starting = 0;
  /** Sessions being opened (spawn + initialize), by their abort: a shutdown aborts them and waits for each. */
  private readonly opening = new Map<AbortController, Promise<void>>();
  private closing: Promise<void> | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private readonly settings: SessionSettings;
  /** Processes started ahead of their session (upstream.warmProcesses); undefined when it is 0. */
  private readonly pool: WarmPool<StdioProcess> | undefined;
  /**
   * Records each session as this process's, so other replicas and workers forward its requests here (issue 23);
   * set by the gateway that serves this host.
   */
  held: HeldSessions | undefined;

  private constructor(
    private readonly config: StdioUpstreamConfig,
    private readonly opts: StdioHostOptions,
  ) {
    this.label = commandLabel(config.command);
    const now = opts.now ?? Date.now;
    this.settings = {
      name: opts.name ?? DEFAULT_UPSTREAM_NAME,
      label: this.label,
      argv: config.command,
      env: childEnv(config, opts.parentEnv),
      cwd: config.cwd,
      maxLineBytes: config.maxLineBytes,
      stopTimeoutMs: config.stopTimeoutMs,
      spawnTimeoutMs: config.spawnTimeoutMs,
      replayBytes: config.replayBytes,
      log: opts.log,
      now,
    };
    this.sweeper = setInterval(
      () => this.reapIdle(),
      Math.max(25, Math.min(Math.floor(config.processIdleMs / 2), 30_000)),
    );
    this.sweeper.unref();
    if (config.warmProcesses > 0) {
      this.pool = new WarmPool({
        size: config.warmProcesses,
        spawn: (listeners) => this.spawnWarm(listeners),
        room: () => this.used() < config.maxProcesses,
        readyTimeoutMs: config.spawnTimeoutMs,
        name: this.settings.name,
        label: this.label,
        log: opts.log,
      });
      this.pool.fill();
    }
  }

  /** Processes alive or being started, warm ones included: what upstream.maxProcesses bounds. */
  private used(): number {
    return this.procs.size + this.starting + (this.pool?.spawning ?? 0);
  }

  /** Counts a spawned process until it has exited; its exit may leave room for a warm one. */
  private track(proc: StdioProcess): void {
    this.procs.add(proc);
    void proc.exited.then(() => {
      this.procs.delete(proc);
      this.pool?.queueFill();
    });
  }

  private async spawnWarm(listeners: StdioListeners): Promise<StdioProcess> {
    const proc = await StdioProcess.start(processOptions(this.settings, listeners));
    this.track(proc);
    return proc;
  }

  /** A session may start a process: there is room within maxProcesses, or a warm one not ready yet made room. */
  private async room(): Promise<boolean> {
    if (this.used() < this.config.maxProcesses) return true;
    return (await this.pool?.evict()) ?? false;
  }

  /** Asynchronous for the composition root's sake (a host may one day need set-up); binds nothing. */
  static start(config: StdioUpstreamConfig, opts: StdioHostOptions): Promise<StdioHost> {
    return Promise.resolve(new StdioHost(config, opts));
  }

  /** Live child processes (starting, serving a session, or being stopped). */
  get processes(): number {
    return this.procs.size;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Process ids of the live children (tests, operators). */
  pids(): number[] {
    return [...this.procs].map((p) => p.pid);
  }

  /**
   * Sessions whose process has nothing in flight now (no request, no open answer stream): each ends once it has
   * been so for upstream.processIdleMs (the status page: a one-shot client leaves one behind that long).
   */
  get idleProcesses(): number {
    let n = 0;
    for (const session of this.sessions.values()) if (session.idle(0)) n++;
    return n;
  }

  /** Warm processes ready for a session (upstream.warmProcesses). */
  get warmProcesses(): number {
    return this.pool?.ready ?? 0;
  }

  /** Process ids of the warm processes ready for a session (tests, operators). */
  warmPids(): number[] {
    return this.pool?.readyPids() ?? [];
  }

  /** No more warm processes (a reload replaced this upstream): the ready ones are stopped, sessions go on. */
  stopWarming(): Promise<void> {
    return this.pool?.close() ?? Promise.resolve();
  }

  /** For /readyz: whether the command can be started. Spawns nothing. */
  async probe(): Promise<ProbeResult> {
    const check = await checkCommand(this.config.command, this.config, this.opts.parentEnv);
    return check.ok ? { reachable: true } : { reachable: false, cause: check.cause ?? "cannot be started" };
  }

  /**
   * Serves one request (dispatcher.ts builds it from the upstream client's). The request carries no body: the
   * exchange has it, read already, and a JSON body goes to the transport parsed, so it is not streamed and parsed
   * again. `exchange.done` settles once the answer has been read to its end or given up: a session counts its open
   * answers by it, and a client that leaves while its initialize is being answered (`exchange.signal`) stops the
   * process being started.
   */
  async serve(request: Request, exchange: Exchange): Promise<Response> {
    const sid = request.headers.get("mcp-session-id");
    if (sid !== null) {
      const session = this.sessions.get(sid);
      // Unknown, ended (DELETE, idle, crashed): 404, and clients start a new session.
      if (!session) return faultAnswer(sessionNotFound());
      const body = exchange.body;
      if (body === undefined) return session.handle(request, exchange.done);
      const parsed = body.byteLength <= this.config.maxLineBytes ? (exchange.message ?? parseJson(body)) : NOT_JSON;
      // Not JSON, or too long for one line: the transport reads it and gives its own answer (400, 413).
      if (parsed === NOT_JSON) return session.handle(withBody(request, body), exchange.done);
      return session.handle(request, exchange.done, parsed);
    }
    switch (request.method) {
      case "POST":
        return this.initialize(request, exchange);
      case "OPTIONS":
        return new Response(null, { status: 204, headers: { allow: ALLOW } });
      case "GET":
      case "DELETE":
        return faultAnswer(sessionIdRequired());
      default:
        return new Response(null, { status: 405, headers: { allow: ALLOW } });
    }
  }

  private async initialize(request: Request, exchange: Exchange): Promise<Response> {
    const body = exchange.body ?? Buffer.alloc(0);
    if (body.byteLength > this.config.maxLineBytes) return faultAnswer(stdioBodyTooLarge(this.config.maxLineBytes));
    const message = exchange.message ?? parseJson(body);
    if (message === NOT_JSON) return faultAnswer(parseError("Invalid JSON"));
    const id =
      isRecord(message) && (typeof message.id === "string" || typeof message.id === "number") ? message.id : undefined;
    if (!isRecord(message) || message.method !== "initialize" || id === undefined) {
      // What an SDK server says to a request outside a session (the era probe's server/discover reads it as "legacy").
      return faultAnswer(noValidSession(), id ?? null);
    }
    if (this.closing) return faultAnswer(shuttingDown(), id);
    // A caller over its share is refused before a process is taken, so the others keep theirs.
    const { caller } = exchange;
    const share = this.opts.callerShare;
    if (caller !== undefined && share !== undefined && (this.byCaller.get(caller) ?? 0) >= share) {
      this.refused.callerShare++;
      this.opts.log.warn("stdio session refused: the caller holds its share of processes", {
        upstream: this.settings.name,
        limit: share,
      });
      return faultAnswer(tooManyProcessesForCaller(share), id);
    }
    const warm = this.pool?.take();
    if (!warm && !(await this.room())) {
      this.refused.maxProcesses++;
      this.opts.log.warn("stdio session refused: upstream.maxProcesses reached", { limit: this.config.maxProcesses });
      return faultAnswer(tooManyProcesses(this.config.maxProcesses), id);
    }
    const left = new AbortController();
    const onLeft = (): void => left.abort();
    exchange.signal.addEventListener("abort", onLeft, { once: true });
    let opened = (): void => {};
    this.opening.set(left, new Promise<void>((resolve) => (opened = resolve)));
    let outcome: StdioSession | Response;
    try {
      outcome = await this.open(message, id, left, warm, caller);
    } finally {
      exchange.signal.removeEventListener("abort", onLeft);
      this.opening.delete(left);
      opened();
    }
    if (outcome instanceof Response) return outcome;
    const session = outcome;
    const answer = await session.handle(request, exchange.done, message);
    // The transport refused the initialize (406, 415, 400…): no client holds this session id, so it ends now.
    if (!session.initialized)
      await session.end(undefined, "was refused by the transport before initialize was answered");
    return answer;
  }

  /** Spawns the child and has it answer initialize: the session, registered, or the answer that says why not. */
  private async open(
    message: Record<string, unknown>,
    id: string | number,
    left: AbortController,
    warm: StdioProcess | undefined,
    caller: string | undefined,
  ): Promise<StdioSession | Response> {
    let session: StdioSession;
    // The caller's share counts this session from now until it ends (or fails to start).
    const release = this.reserve(caller);
    // A warm process is counted already (in procs); a new one counts from now on, before it is spawned.
    let counted = warm === undefined;
    if (counted) this.starting++;
    try {
      session = await StdioSession.open(
        { ...message, id },
        this.settings,
        {
          spawned: (proc) => {
            this.starting--;
            counted = false;
            this.track(proc);
          },
          ended: (s) => {
            if (this.sessions.get(s.id) === s) this.held?.release(s.id);
            this.sessions.delete(s.id);
            release();
          },
        },
        left.signal,
        warm,
      );
    } catch (err) {
      release();
      if (err instanceof SessionStartError) {
        this.opts.log.warn("stdio session could not start", {
          upstream: this.settings.name,
          command: this.label,
          cause: err.message,
        });
        return faultAnswer(this.closing ? shuttingDown() : err.fault, id);
      }
      if (err instanceof SessionRefused) return jsonAnswer(200, err.response);
      throw err;
    } finally {
      if (counted) this.starting--;
    }
    if (this.closing || left.signal.aborted) {
      await session.end(undefined, this.closing ? "ended: the gateway is shutting down" : "ended: the client left");
      return faultAnswer(shuttingDown(), id);
    }
    this.sessions.set(session.id, session);
    // Recorded before the client learns the id (the initialize answer is returned after this): its next request
    // may reach another replica or worker.
    await this.held?.claim(session.id);
    return session;
  }

  /** Counts one process for `caller`; returns its release (once). */
  private reserve(caller: string | undefined): () => void {
    if (caller === undefined || this.opts.callerShare === undefined) return noop;
    this.byCaller.set(caller, (this.byCaller.get(caller) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.byCaller.set(caller, left);
      else this.byCaller.delete(caller);
    };
  }

  private reapIdle(): void {
    for (const session of this.sessions.values()) {
      if (session.idle(this.config.processIdleMs)) {
        this.opts.log.debug("stdio session idle; ending its process", { session: session.id, pid: session.pid });
        void session.end(undefined, `was idle for upstream.processIdleMs (${this.config.processIdleMs} ms)`);
      }
    }
  }

  /**
   * Ends every session (their calls in flight get an error), stops every process as the stdio spec says
   * (stdin closed, then SIGTERM, then SIGKILL) and waits until each is reaped; then closes the listener.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweeper);
      const stopped = upstreamProcessFailed(this.settings.name, "was stopped: the gateway is shutting down", 503);
      // Sessions being opened (their process perhaps not spawned yet) are given up, and each process reaped, first.
      for (const left of this.opening.keys()) left.abort();
      await Promise.all([...this.opening.values(), this.pool?.close()]);
      await Promise.all([...this.sessions.values()].map((s) => s.end(stopped, "ended by shutdown")));
      // Processes still starting (or of sessions ended just now) are stopped too.
      await Promise.all([...this.procs].map((p) => p.stop()));
    })();
    return this.closing;
  }
}
