// One stdio MCP server process: spawned without a shell in its own process
// group, messages framed as NDJSON both ways (stdout lines bounded by
// maxLineBytes, stdin writes that wait for 'drain'), stderr to the debug log
// (prefixed, rate-bounded, redacted) with its last lines kept for error
// messages, and a stop that closes stdin, waits, then SIGTERMs and SIGKILLs
// the whole group. Node reaps the child itself once 'exit' is emitted, so a
// stopped process never lingers as a zombie.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import type { Logger } from "../log/logger.js";
import { LineReader, LineTooLongError, parseLine } from "./framing.js";
import { redactLine } from "../log/redact.js";

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StdioProcessOptions {
  argv: readonly string[];
  env: Record<string, string>;
  cwd: string | undefined;
  maxLineBytes: number;
  stopTimeoutMs: number;
  log: Logger;
  /** Each JSON-RPC message the process writes to stdout. */
  onMessage: (message: Record<string, unknown>) => void;
  /** The process broke the framing (a line over maxLineBytes): it is being stopped. */
  onFramingError: (err: LineTooLongError) => void;
}

/** Where a process's messages and framing errors go; a warm process changes hands once (pool, then session). */
export type StdioListeners = Pick<StdioProcessOptions, "onMessage" | "onFramingError">;

/** What stdin may hold beyond what the pipe took, before a write is refused. */
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
const STDERR_TAIL = 20;
const STDERR_MAX_LINE = 4_096;
/** stderr lines logged per second per process (after a burst of the same size); the rest are counted. */
const STDERR_LINES_PER_SECOND = 50;

class SpawnError extends Error {
  override readonly name = "SpawnError";
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

export class StdioProcess {
  readonly pid: number;
  /** Resolves once the process exited and its pipes closed. */
  readonly exited: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private waitingForDrain = false;
  private stopping: Promise<ExitInfo> | undefined;
  private readonly tail: string[] = [];
  private stderrPartial = "";
  private tokens = STDERR_LINES_PER_SECOND;
  private tokensAt = Date.now();
  private dropped = 0;
  private listeners: StdioListeners;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly opts: StdioProcessOptions,
  ) {
    this.pid = child.pid as number;
    this.listeners = { onMessage: opts.onMessage, onFramingError: opts.onFramingError };
    const reader = new LineReader(opts.maxLineBytes);
    let framingBroken = false;
    child.stdout.on("data", (chunk: Buffer) => {
      if (framingBroken) return;
      let lines: string[];
      try {
        lines = reader.push(chunk);
      } catch (err) {
        if (!(err instanceof LineTooLongError)) throw err;
        framingBroken = true;
        this.listeners.onFramingError(err);
        return;
      }
      for (const line of lines) {
        const parsed = parseLine(line);
        if (parsed.kind === "message") this.listeners.onMessage(parsed.message);
        else if (parsed.kind === "garbage") {
          opts.log.warn("stdio server wrote a line that is not a JSON-RPC message; skipped", {
            child: this.name,
            why: parsed.why,
            line: redactLine(line.slice(0, 200)),
          });
        }
      }
    });
    child.stderr.on("data", (chunk: Buffer) => this.onStderr(chunk.toString("utf8")));
    // A process that exits leaves its pipes broken: writes then fail with EPIPE, which must not throw.
    child.stdin.on("error", () => {});
    child.stdout.on("error", () => {});
    child.stderr.on("error", () => {});
    child.stdin.on("drain", () => this.flush());
    this.exited = new Promise<ExitInfo>((resolve) => {
      // 'close' comes after 'exit' and the pipes' end, so every line written before exiting was read.
      child.once("close", (code, signal) => {
        this.exitInfo = { code, signal };
        if (this.stderrPartial) this.keepStderrLine(this.stderrPartial);
        resolve(this.exitInfo);
      });
    });
    // The group leader is gone but its pipes stay open (a grandchild holds them): the rest of the group goes too.
    // One that left the group (setsid) cannot be signalled: its ends of the pipes are then let go, so 'close' comes.
    child.once("exit", () => {
      const timer = setTimeout(() => {
        this.signalGroup("SIGKILL");
        child.stdin.destroy();
        child.stdout.destroy();
        child.stderr.destroy();
      }, opts.stopTimeoutMs);
      timer.unref();
      void this.exited.then(() => clearTimeout(timer));
    });
  }

  /** Spawns the process; rejects with a SpawnError when it cannot be started (ENOENT, EACCES, a bad cwd). */
  static start(opts: StdioProcessOptions): Promise<StdioProcess> {
    const [program, ...args] = opts.argv;
    if (program === undefined) return Promise.reject(new SpawnError("upstream.command is empty", "EINVAL"));
    return new Promise((resolve, reject) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(program, args, {
          cwd: opts.cwd,
          env: opts.env,
          stdio: ["pipe", "pipe", "pipe"],
          shell: false,
          // Its own process group: a stop reaches what it started too (npx → node, docker → the CLI).
          detached: process.platform !== "win32",
          windowsHide: true,
        });
      } catch (err) {
        reject(new SpawnError((err as Error).message, (err as NodeJS.ErrnoException).code ?? "UNKNOWN"));
        return;
      }
      child.once("error", (err: NodeJS.ErrnoException) => {
        if (child.pid === undefined) reject(new SpawnError(err.message, err.code ?? "UNKNOWN"));
      });
      child.once("spawn", () => resolve(new StdioProcess(child, opts)));
    });
  }

  get name(): string {
    return `stdio[${this.pid}]`;
  }

  /** From now on its messages and framing errors go to `listeners` (a warm process handed to its session). */
  listen(listeners: StdioListeners): void {
    this.listeners = listeners;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** The last stderr lines, redacted. */
  stderrTail(): string[] {
    return [...this.tail];
  }

  /**
   * Writes one message as a line. Respects the pipe's backpressure: while stdin is full, lines wait
   * in order for 'drain'. False when the process is gone or has not read MAX_QUEUED_BYTES already.
   */
  send(message: unknown): boolean {
    if (!this.alive || this.stopping || this.child.stdin.destroyed || this.child.stdin.writableEnded) return false;
    const line = Buffer.from(`${JSON.stringify(message)}\n`, "utf8");
    if (this.waitingForDrain || this.queue.length > 0) {
      if (this.queuedBytes + line.length > MAX_QUEUED_BYTES) return false;
      this.queue.push(line);
      this.queuedBytes += line.length;
      return true;
    }
    this.waitingForDrain = !this.child.stdin.write(line);
    return true;
  }

  private flush(): void {
    this.waitingForDrain = false;
    while (this.queue.length > 0 && !this.waitingForDrain) {
      const line = this.queue.shift() as Buffer;
      this.queuedBytes -= line.length;
      this.waitingForDrain = !this.child.stdin.write(line);
    }
  }

  /**
   * The stdio spec's shutdown: close stdin, wait stopTimeoutMs, SIGTERM the group, wait again,
   * SIGKILL it. Resolves once the process is reaped. Idempotent.
   */
  stop(): Promise<ExitInfo> {
    this.stopping ??= (async () => {
      if (this.exitInfo) return this.afterExit();
      this.queue.length = 0;
      this.child.stdin.end();
      if (await this.exitsWithin(this.opts.stopTimeoutMs)) return this.afterExit();
      this.signalGroup("SIGTERM");
      if (await this.exitsWithin(this.opts.stopTimeoutMs)) return this.afterExit();
      this.signalGroup("SIGKILL");
      // SIGKILL cannot be caught: 'close' follows once the kernel tore the group down.
      await this.exited;
      return this.afterExit();
    })();
    return this.stopping;
  }

  /** Whatever the leader left behind in its group (a grandchild) is killed, and gone before this resolves. */
  private async afterExit(): Promise<ExitInfo> {
    const deadline = Date.now() + this.opts.stopTimeoutMs;
    while (this.signalGroup("SIGKILL") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.exitInfo as ExitInfo;
  }

  /** Ends the process at once (SIGKILL to the group), e.g. when it never answered initialize. */
  async kill(): Promise<ExitInfo> {
    this.signalGroup("SIGKILL");
    return this.exited;
  }

  private async exitsWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([this.exited.then(() => true as const), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** False when nothing is left to signal. */
  private signalGroup(signal: NodeJS.Signals): boolean {
    try {
      // Negative pid: the whole process group the child leads.
      if (process.platform !== "win32") process.kill(-this.pid, signal);
      else return this.child.kill(signal);
      return true;
    } catch {
      return false;
    }
  }

  private onStderr(text: string): void {
    const parts = (this.stderrPartial + text).split("\n");
    this.stderrPartial = parts.pop() ?? "";
    if (this.stderrPartial.length > STDERR_MAX_LINE) {
      this.keepStderrLine(this.stderrPartial);
      this.stderrPartial = "";
    }
    for (const line of parts) this.keepStderrLine(line);
  }

  private keepStderrLine(raw: string): void {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") return;
    const redacted = redactLine(line.length > STDERR_MAX_LINE ? line.slice(0, STDERR_MAX_LINE) : line);
    this.tail.push(redacted);
    if (this.tail.length > STDERR_TAIL) this.tail.shift();
    if (this.opts.log.level !== "debug") return;
    const now = Date.now();
    this.tokens = Math.min(
      STDERR_LINES_PER_SECOND,
      this.tokens + ((now - this.tokensAt) / 1000) * STDERR_LINES_PER_SECOND,
    );
    this.tokensAt = now;
    if (this.tokens < 1) {
      this.dropped++;
      return;
    }
    this.tokens--;
    if (this.dropped > 0) {
      this.opts.log.debug(
        `${this.name} stderr: (${this.dropped} lines not logged: over ${STDERR_LINES_PER_SECOND} lines/s)`,
        { child: this.name },
      );
      this.dropped = 0;
    }
    this.opts.log.debug(`${this.name} stderr: ${redacted}`, { child: this.name });
  }
}
