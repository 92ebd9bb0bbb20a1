// One client session in front of a stdio server: its own child process, and the
// official SDK's web-standard Streamable HTTP transport (stateful, with a bounded
// event store for Last-Event-ID) facing the client, called in process (Request in,
// Response out: no socket between the gateway and the session). Messages are relayed unchanged in
// both directions; the session only decides on which HTTP stream a message the
// child starts (a request or a notification) goes, which stdio does not say:
//
//   1. notifications/progress whose progressToken belongs to a client request
//      in flight → that request's POST stream;
//   2. session-wide notifications (…/list_changed, notifications/resources/updated)
//      → the standalone GET stream;
//   3. anything else while client requests are in flight → the one in flight,
//      or, with several, the most recent one (a request on a call's stream is
//      what the era bridge turns into MRTR; a stream of the same session
//      is never another client's);
//   4. nothing in flight → the standalone GET stream (a request waits until one
//      is open, so it is never silently lost).
import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { noClientStream, upstreamProcessFailed, type Fault } from "../protocol/errors.js";
import { isRecord } from "../protocol/json.js";
import type { JsonRpcErrorObject } from "../protocol/jsonrpc.js";
import type { Logger } from "../log/logger.js";
import { StdioProcess, type ExitInfo, type StdioListeners, type StdioProcessOptions } from "./child.js";
import { BoundedEventStore } from "./event-store.js";
import type { LineTooLongError } from "./framing.js";

type Id = string | number;
type Message = Record<string, unknown>;

export interface SessionSettings {
  /** The upstream's configured name: how clients are told which upstream failed (never its command line). */
  name: string;
  /** The redacted command line, e.g. "stdio: npx -y …": for the gateway's own logs only. */
  label: string;
  argv: readonly string[];
  env: Record<string, string>;
  cwd: string | undefined;
  maxLineBytes: number;
  stopTimeoutMs: number;
  spawnTimeoutMs: number;
  replayBytes: number;
  log: Logger;
  now: () => number;
}

export interface SessionHooks {
  /** A process was spawned (it counts against maxProcesses until it has exited). */
  spawned(proc: StdioProcess): void;
  /** The session ended (its id answers 404 from now on). */
  ended(session: StdioSession): void;
}

/** A session could not be opened: the answer to the client's initialize. */
export class SessionStartError extends Error {
  override readonly name = "SessionStartError";
  constructor(readonly fault: Fault) {
    super(fault.error.message);
  }
}

/** The child answered initialize with an error: passed on as it is, no session. */
export class SessionRefused extends Error {
  override readonly name = "SessionRefused";
  constructor(readonly response: Message) {
    super("initialize refused");
  }
}

const MAX_HELD_REQUESTS = 100;
/**
 * A client that drops a call's stream and resumes it at once (GET with Last-Event-ID) can be read before its old
 * connection is seen closing, and the transport refuses a second connection to one stream (409). The resume waits
 * this long, at most a few times, for an open answer of the session to be given up, then tries again.
 */
const RESUME_GRACE_MS = 250;
const RESUME_TRIES = 3;
const STDERR_IN_MESSAGE = 5;

function isRequest(m: Message): m is Message & { id: Id; method: string } {
  return typeof m.method === "string" && (typeof m.id === "string" || typeof m.id === "number");
}
function isResponse(m: Message): m is Message & { id: Id } {
  return typeof m.method !== "string" && (typeof m.id === "string" || typeof m.id === "number");
}
function progressTokenOf(m: Message): unknown {
  const params = m.params;
  return isRecord(params) && isRecord(params._meta) ? params._meta.progressToken : undefined;
}

function exitDetail(info: ExitInfo): string {
  return info.signal ? `signal ${info.signal}` : `exit code ${info.code ?? "unknown"}`;
}

/**
 * A child's failure as a client sees it: the upstream by its configured name, and how it failed (exit code,
 * signal, timeout). What the child printed and its command line stay in the gateway's log, where they are
 * redacted: a client never sees them, since a server's stderr and arguments can hold secrets.
 */
function processFault(
  settings: SessionSettings,
  detail: string,
  status: number,
  data: Record<string, unknown> = {},
  logged: { stderr?: string[]; cause?: string } = {},
): Fault {
  settings.log.warn(`stdio server ${detail}`, {
    upstream: settings.name,
    command: settings.label,
    ...(logged.cause !== undefined && { cause: logged.cause }),
    ...(logged.stderr && { stderr: withStderr("", logged.stderr).replace(/^; /, "") }),
  });
  return upstreamProcessFailed(settings.name, detail, status, data);
}

function withStderr(detail: string, tail: string[]): string {
  const last = tail.slice(-STDERR_IN_MESSAGE);
  return last.length === 0
    ? `${detail}; it wrote nothing to stderr`
    : `${detail}; last stderr lines: ${last.join(" | ")}`;
}

/** How a child of these settings is started, with `listeners` for what it writes (a session's, or a warm pool's). */
export function processOptions(settings: SessionSettings, listeners: StdioListeners): StdioProcessOptions {
  return {
    argv: settings.argv,
    env: settings.env,
    cwd: settings.cwd,
    maxLineBytes: settings.maxLineBytes,
    stopTimeoutMs: settings.stopTimeoutMs,
    log: settings.log,
    ...listeners,
  };
}

export class StdioSession {
  readonly id: string = randomUUID();
  private readonly transport: WebStandardStreamableHTTPServerTransport;
  /** Client requests the child has not answered yet, in the order they came. */
  private readonly inflight = new Map<Id, { method: string; progressToken: unknown }>();
  /** Child requests for the standalone stream while none is open. */
  private readonly held: Message[] = [];
  private openResponses = 0;
  /** Told when an open answer of this session ends (a resume waiting for its stream's old connection to go). */
  private readonly releases = new Set<() => void>();
  private getStreams = 0;
  private lastActivity: number;
  private initAnswered = false;
  private ending: Promise<void> | undefined;

  private constructor(
    private readonly proc: StdioProcess,
    private readonly initId: Id,
    private readonly initResponse: Message,
    private readonly settings: SessionSettings,
    private readonly hooks: SessionHooks,
  ) {
    this.lastActivity = settings.now();
    this.transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => this.id,
      ...(settings.replayBytes > 0 && { eventStore: new BoundedEventStore(settings.replayBytes) }),
      maxRequestBodySize: settings.maxLineBytes,
    });
    this.transport.onmessage = (m) => this.fromClient(m);
    this.transport.onclose = () => void this.end(undefined, "was ended by the client (DELETE)");
    this.transport.onerror = (err) =>
      settings.log.debug("stdio session transport", { child: proc.name, cause: err.message });
  }

  /**
   * Spawns the child and has it answer the client's initialize before any HTTP answer is given, so a
   * command that is missing, exits at once or hangs is one clear error (SessionStartError), not a session.
   * With `warm`, a process started ahead (upstream.warmProcesses, already counted) gets the initialize instead.
   */
  static async open(
    init: Message & { id: Id },
    settings: SessionSettings,
    hooks: SessionHooks,
    signal: AbortSignal,
    warm?: StdioProcess,
  ): Promise<StdioSession> {
    let deliver: (m: Message) => void = () => {};
    let framing: (err: LineTooLongError) => void = () => {};
    const options = processOptions(settings, {
      onMessage: (m) => deliver(m),
      onFramingError: (err) => framing(err),
    });
    let proc: StdioProcess;
    if (warm) {
      proc = warm;
      proc.listen(options);
    } else {
      try {
        proc = await StdioProcess.start(options);
      } catch (err) {
        const code = (err as { code?: string }).code ?? "UNKNOWN";
        const hint =
          code === "ENOENT" ? " (not found on the PATH the process gets, or upstream.cwd does not exist)" : "";
        throw new SessionStartError(
          processFault(
            settings,
            `could not be started (${code})${hint}`,
            502,
            { cause: code },
            {
              cause: (err as Error).message,
            },
          ),
        );
      }
      hooks.spawned(proc);
    }
    const early: Message[] = [];
    const started = settings.now();
    const outcome = await new Promise<{ response: Message } | { fault: Fault }>((resolve) => {
      const timer = setTimeout(
        () =>
          resolve({
            fault: processFault(
              settings,
              `did not answer initialize within upstream.spawnTimeoutMs (${settings.spawnTimeoutMs} ms)`,
              504,
              {},
              { stderr: proc.stderrTail() },
            ),
          }),
        settings.spawnTimeoutMs,
      );
      const done = (value: { response: Message } | { fault: Fault }): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      };
      const onAbort = (): void =>
        done({
          fault: upstreamProcessFailed(
            settings.name,
            "was stopped: the client left before initialize was answered",
            502,
          ),
        });
      signal.addEventListener("abort", onAbort, { once: true });
      // The client (or a gateway shutdown) may have left while the process was being spawned.
      if (signal.aborted) {
        onAbort();
        return;
      }
      deliver = (m) => {
        if (isResponse(m) && m.id === init.id) done({ response: m });
        // Bounded: a child that writes messages before it answers initialize must not grow this for spawnTimeoutMs.
        else if (early.length < MAX_HELD_REQUESTS) early.push(m);
        else settings.log.debug("stdio message before initialize was answered; dropped", { child: proc.name });
      };
      framing = (err) => done({ fault: processFault(settings, err.message, 502, { limit: err.limit }) });
      void proc.exited.then((info) => {
        done({
          fault: processFault(
            settings,
            `exited before answering initialize (${exitDetail(info)})`,
            502,
            { exitCode: info.code, signal: info.signal },
            { stderr: proc.stderrTail() },
          ),
        });
      });
      if (!proc.send(init))
        done({ fault: processFault(settings, "did not accept the initialize request on its stdin", 502) });
    });
    if ("fault" in outcome) {
      await proc.stop();
      throw new SessionStartError(outcome.fault);
    }
    if ("error" in outcome.response) {
      await proc.stop();
      throw new SessionRefused(outcome.response);
    }
    const session = new StdioSession(proc, init.id, outcome.response, settings, hooks);
    settings.log.debug("stdio session started", {
      child: proc.name,
      session: session.id,
      startMs: settings.now() - started,
      warm: warm !== undefined,
    });
    deliver = (m) => session.fromChild(m);
    framing = (err) =>
      void session.end(
        processFault(settings, `${err.message}; its session was ended`, 502, { limit: err.limit }),
        "broke the framing",
      );
    void proc.exited.then((info) => session.childExited(info));
    for (const m of early) session.fromChild(m);
    return session;
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** Whether the client's initialize got its answer through the transport (false after a 406, 415, 400…). */
  get initialized(): boolean {
    return this.initAnswered;
  }

  /**
   * Serves one HTTP request of this session (POST, GET, DELETE) through the SDK transport. `done` settles when
   * the answer's body has been read to its end or given up (the client left): until then the answer counts as
   * open, so an idle sweep never ends a session whose stream a client holds.
   */
  async handle(request: Request, done: Promise<void>, parsedBody?: unknown): Promise<Response> {
    this.touch();
    const isGet = request.method === "GET";
    this.openResponses++;
    if (isGet) this.getStreams++;
    void done.then(() => {
      this.openResponses--;
      if (isGet) this.getStreams--;
      this.touch();
      for (const release of this.releases) release();
      this.releases.clear();
    });
    const handled = this.transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody });
    // The transport registers a GET stream before its answer is returned: child requests held for one go out now.
    if (isGet && this.held.length > 0) setImmediate(() => this.flushHeld());
    let answer = await handled;
    if (!isGet || !request.headers.has("last-event-id")) return answer;
    for (let tries = 0; answer.status === 409 && tries < RESUME_TRIES; tries++) {
      await this.nextRelease();
      answer = await this.transport.handleRequest(request);
    }
    return answer;
  }

  /** Resolves when an open answer of the session ends, or after RESUME_GRACE_MS. */
  private nextRelease(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.releases.delete(release);
        resolve();
      }, RESUME_GRACE_MS);
      const release = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.releases.add(release);
    });
  }

  /** No call in flight, no open HTTP answer (POST stream, GET stream), and no client activity for idleMs. */
  idle(idleMs: number): boolean {
    return (
      this.ending === undefined &&
      this.inflight.size === 0 &&
      this.openResponses === 0 &&
      this.settings.now() - this.lastActivity >= idleMs
    );
  }

  private touch(): void {
    this.lastActivity = this.settings.now();
  }

  private fromClient(m: Message): void {
    this.touch();
    if (isRequest(m)) {
      if (!this.initAnswered && m.method === "initialize" && m.id === this.initId) {
        // Answered by the child already, while the session was being opened.
        this.initAnswered = true;
        void this.sendToClient(this.initResponse);
        return;
      }
      this.inflight.set(m.id, { method: m.method, progressToken: progressTokenOf(m) });
      if (!this.proc.send(m)) {
        this.inflight.delete(m.id);
        void this.sendToClient({
          jsonrpc: "2.0",
          id: m.id,
          error: upstreamProcessFailed(this.settings.name, "is not reading its stdin (or has exited)").error,
        });
      }
      return;
    }
    if (m.method === "notifications/cancelled" && isRecord(m.params)) {
      // The child must not answer a cancelled request: it no longer counts as in flight.
      const requestId = m.params.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") this.inflight.delete(requestId);
    }
    this.proc.send(m);
  }

  private fromChild(m: Message): void {
    if (this.ending) return;
    if (isResponse(m)) {
      this.inflight.delete(m.id);
      void this.sendToClient(m);
      return;
    }
    const related = this.relate(m);
    if (related === undefined && isRequest(m) && this.getStreams === 0) {
      if (this.held.length < MAX_HELD_REQUESTS) this.held.push(m);
      else this.proc.send({ jsonrpc: "2.0", id: m.id, error: noClientStream() });
      return;
    }
    void this.sendToClient(m, related);
  }

  /** The relatedRequestId rule (see the top of this file). */
  private relate(m: Message): Id | undefined {
    const method = m.method as string;
    if (method.endsWith("/list_changed") || method === "notifications/resources/updated") return undefined;
    if (method === "notifications/progress" && isRecord(m.params) && m.params.progressToken !== undefined) {
      for (const [id, call] of this.inflight) if (call.progressToken === m.params.progressToken) return id;
    }
    let last: Id | undefined;
    for (const id of this.inflight.keys()) last = id;
    return last;
  }

  private flushHeld(): void {
    if (this.getStreams === 0 || this.ending) return;
    for (const m of this.held.splice(0)) void this.sendToClient(m);
  }

  /** Never rejects: a message the client can no longer receive is dropped with a debug line. */
  private sendToClient(m: Message, relatedRequestId?: Id): Promise<void> {
    return this.transport
      .send(m as unknown as JSONRPCMessage, relatedRequestId === undefined ? undefined : { relatedRequestId })
      .catch((err: unknown) => {
        // The client's stream for it is gone (it left, or cancelled): nothing more to do.
        this.settings.log.debug("stdio message not delivered", {
          child: this.proc.name,
          cause: (err as Error).message,
        });
      });
  }

  private childExited(info: ExitInfo): void {
    if (this.ending) return;
    this.settings.log.warn("stdio server exited during its session", {
      child: this.proc.name,
      session: this.id,
      exit: exitDetail(info),
      inFlight: this.inflight.size,
    });
    void this.end(
      processFault(
        this.settings,
        `exited during the session (${exitDetail(info)})`,
        502,
        { exitCode: info.code, signal: info.signal },
        { stderr: this.proc.stderrTail() },
      ),
      "exited",
    );
  }

  /**
   * Ends the session: calls in flight get a JSON-RPC error naming the command, the streams close, the
   * id answers 404 from now on (clients re-initialize), and the process is stopped. Idempotent.
   */
  end(fault: Fault | undefined, why: string): Promise<void> {
    this.ending ??= (async () => {
      const error: JsonRpcErrorObject =
        fault?.error ?? upstreamProcessFailed(this.settings.name, `session ${why}`).error;
      this.hooks.ended(this);
      const answers = [...this.inflight.keys()].map((id) => this.sendToClient({ jsonrpc: "2.0", id, error }));
      this.inflight.clear();
      this.held.length = 0;
      await Promise.all(answers);
      await this.transport.close();
      await this.proc.stop();
    })();
    return this.ending;
  }
}
