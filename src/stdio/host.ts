// A stdio upstream served as Streamable HTTP on an internal loopback listener,
// so the rest of the gateway (pass-through, the era bridge, tasks, policy) talks
// to it exactly as to an HTTP upstream. One child process per Mcp-Session-Id;
// the listener's path carries 128 random bits, so nothing else on the host can
// use it to start processes. The command comes from the config only.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { UpstreamConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import {
  noValidSession,
  parseError,
  sessionIdRequired,
  sessionNotFound,
  shuttingDown,
  stdioBodyTooLarge,
  stdioHostStarting,
  tooManyProcesses,
  upstreamProcessFailed,
  type Fault,
} from "../protocol/errors.js";
import { isRecord } from "../protocol/json.js";
import type { HeldSessions } from "../protocol/held-sessions.js";
import type { ProbeResult } from "../upstream/client.js";
import type { StdioProcess } from "./child.js";
import { checkCommand, childEnv, commandLabel } from "./command.js";
import { SessionRefused, SessionStartError, StdioSession, type SessionSettings } from "./session.js";

export type StdioUpstreamConfig = UpstreamConfig & { command: string[] };

export interface StdioHostOptions {
  log: Logger;
  now?: () => number;
  /** The gateway's environment, of which only upstream.inheritEnv is passed on (default process.env). */
  parentEnv?: NodeJS.ProcessEnv;
}

function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function writeFault(res: ServerResponse, fault: Fault, id: unknown = null): void {
  writeJson(res, fault.status, { jsonrpc: "2.0", id, error: fault.error }, fault.headers);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too_large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return "too_large";
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export class StdioHost {
  /** The internal endpoint, with its secret path: http://127.0.0.1:PORT/<secret>/mcp. */
  readonly url: string;
  /** The redacted command line, e.g. "stdio: npx -y @modelcontextprotocol/server-everything". */
  readonly label: string;
  private readonly sessions = new Map<string, StdioSession>();
  private readonly procs = new Set<StdioProcess>();
  private starting = 0;
  /** Sessions being opened (spawn + initialize), by their abort: a shutdown aborts them and waits for each. */
  private readonly opening = new Map<AbortController, Promise<void>>();
  private closing: Promise<void> | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private readonly settings: SessionSettings;
  /**
   * Records each session as this process's, so other replicas and workers forward its requests here (issue 23);
   * set by the gateway that serves this host.
   */
  held: HeldSessions | undefined;

  private constructor(
    private readonly server: Server,
    private readonly path: string,
    port: number,
    private readonly config: StdioUpstreamConfig,
    private readonly opts: StdioHostOptions,
  ) {
    this.url = `http://127.0.0.1:${port}${path}`;
    this.label = commandLabel(config.command);
    const now = opts.now ?? Date.now;
    this.settings = {
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
  }

  /** Listens on 127.0.0.1, port 0 (exclusive, so cluster workers each get their own). */
  static async start(config: StdioUpstreamConfig, opts: StdioHostOptions): Promise<StdioHost> {
    const path = `/${randomBytes(16).toString("hex")}/mcp`;
    let host: StdioHost | undefined;
    const server = createServer((req, res) => {
      if (!host) return writeFault(res, stdioHostStarting());
      host.serve(req, res).catch((err: unknown) => {
        opts.log.error("stdio host failed to serve a request", { cause: (err as Error).message });
        if (!res.headersSent)
          writeFault(res, upstreamProcessFailed(commandLabel(config.command), "could not be reached"));
        else res.destroy();
      });
    });
    // Long calls and idle SSE streams are normal here: no request or header timeouts on this loopback hop.
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ port: 0, host: "127.0.0.1", exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    host = new StdioHost(server, path, (server.address() as AddressInfo).port, config, opts);
    return host;
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

  /** For /readyz: whether the command can be started. Spawns nothing. */
  async probe(): Promise<ProbeResult> {
    const check = await checkCommand(this.config.command, this.config, this.opts.parentEnv);
    return check.ok ? { reachable: true } : { reachable: false, cause: check.cause ?? "cannot be started" };
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = (req.url ?? "/").split("?")[0];
    if (pathname !== this.path) {
      writeJson(res, 404, { error: "not found" });
      return;
    }
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const session = this.sessions.get(sid);
      // Unknown, ended (DELETE, idle, crashed): 404, and clients start a new session.
      if (!session) return writeFault(res, sessionNotFound());
      await session.handle(req, res);
      return;
    }
    switch (req.method) {
      case "POST":
        return this.initialize(req, res);
      case "OPTIONS":
        res.writeHead(204, { allow: "GET, POST, DELETE, OPTIONS" });
        res.end();
        return;
      case "GET":
      case "DELETE":
        return writeFault(res, sessionIdRequired());
      default:
        res.writeHead(405, { allow: "GET, POST, DELETE, OPTIONS" });
        res.end();
    }
  }

  private async initialize(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, this.config.maxLineBytes);
    if (body === "too_large") return writeFault(res, stdioBodyTooLarge(this.config.maxLineBytes));
    let message: unknown;
    try {
      message = JSON.parse(body.toString("utf8"));
    } catch {
      return writeFault(res, parseError("Invalid JSON"));
    }
    const id =
      isRecord(message) && (typeof message.id === "string" || typeof message.id === "number") ? message.id : undefined;
    if (!isRecord(message) || message.method !== "initialize" || id === undefined) {
      // What an SDK server says to a request outside a session (the era probe's server/discover reads it as "legacy").
      return writeFault(res, noValidSession(), id ?? null);
    }
    if (this.closing) return writeFault(res, shuttingDown(), id);
    if (this.procs.size + this.starting >= this.config.maxProcesses) {
      this.opts.log.warn("stdio session refused: upstream.maxProcesses reached", { limit: this.config.maxProcesses });
      return writeFault(res, tooManyProcesses(this.config.maxProcesses), id);
    }
    const left = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) left.abort();
    };
    res.once("close", onClose);
    let opened = (): void => {};
    this.opening.set(left, new Promise<void>((resolve) => (opened = resolve)));
    let session: StdioSession | undefined;
    try {
      session = await this.open(res, message, id, left, onClose);
    } finally {
      this.opening.delete(left);
      opened();
    }
    if (!session) return;
    await session.handle(req, res, message);
    // The transport refused the initialize (406, 415, 400…): no client holds this session id, so it ends now.
    if (!session.initialized)
      await session.end(undefined, "was refused by the transport before initialize was answered");
  }

  /** Spawns the child and has it answer initialize; the session, registered, or undefined once the answer is written. */
  private async open(
    res: ServerResponse,
    message: Record<string, unknown>,
    id: string | number,
    left: AbortController,
    onClose: () => void,
  ): Promise<StdioSession | undefined> {
    let session: StdioSession;
    this.starting++;
    let counted = true;
    try {
      session = await StdioSession.open(
        { ...message, id },
        this.settings,
        {
          spawned: (proc) => {
            this.starting--;
            counted = false;
            this.procs.add(proc);
            void proc.exited.then(() => this.procs.delete(proc));
          },
          ended: (s) => {
            if (this.sessions.get(s.id) === s) this.held?.release(s.id);
            this.sessions.delete(s.id);
          },
        },
        left.signal,
      );
    } catch (err) {
      if (err instanceof SessionStartError) {
        this.opts.log.warn("stdio session could not start", { upstream: this.label, cause: err.message });
        writeFault(res, this.closing ? shuttingDown() : err.fault, id);
        return undefined;
      }
      if (err instanceof SessionRefused) {
        writeJson(res, 200, err.response);
        return undefined;
      }
      throw err;
    } finally {
      if (counted) this.starting--;
      res.off("close", onClose);
    }
    if (this.closing || left.signal.aborted) {
      await session.end(undefined, this.closing ? "ended: the gateway is shutting down" : "ended: the client left");
      if (this.closing) writeFault(res, shuttingDown(), id);
      return undefined;
    }
    this.sessions.set(session.id, session);
    // Recorded before the client learns the id (the initialize answer is written after this): its next request
    // may reach another replica or worker.
    await this.held?.claim(session.id);
    return session;
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
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const stopped = upstreamProcessFailed(this.label, "was stopped: the gateway is shutting down", 503);
      // Sessions being opened (their process perhaps not spawned yet) are given up, and each process reaped, first.
      for (const left of this.opening.keys()) left.abort();
      await Promise.all(this.opening.values());
      await Promise.all([...this.sessions.values()].map((s) => s.end(stopped, "ended by shutdown")));
      // Processes still starting (or of sessions ended just now) are stopped too.
      await Promise.all([...this.procs].map((p) => p.stop()));
      this.server.closeAllConnections();
      await closed;
    })();
    return this.closing;
  }
}
