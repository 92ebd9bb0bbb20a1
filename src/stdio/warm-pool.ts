// upstream.warmProcesses: stdio server processes started ahead of any session, so a session starts in the time
// of one initialize rather than the time of a spawn. A warm process is proven ready without being bound to a
// client: it answered a `ping` (which the spec allows before initialize); the client's own initialize then goes
// to it unchanged, so its capabilities and protocol version are the ones the server sees. A warm process serves
// one session only (taken out of the pool, it is the session's), and the pool starts its replacement at once.
// A warm process that dies, breaks the framing or never answers the ping is replaced, after a backoff that
// grows while the command keeps failing, so a broken command never spawns in a tight loop.
//
// When a take leaves another ready process behind, the replacement waits REFILL_DELAY_MS: starting a Node server
// costs a core for a few hundred ms, and started at once it competed with the very session it was taken for (its
// initialize, notifications/initialized and first calls ran beside the new process's start-up: 31 ms p50 on two
// cores instead of 15; issue 38). A take that empties the pool refills at once, so a burst never waits for it.
import type { Logger } from "../log/logger.js";
import type { ExitInfo, StdioListeners } from "./child.js";

/** What the pool needs of a process (StdioProcess; a fake in unit tests). */
export interface WarmChild {
  readonly pid: number;
  readonly alive: boolean;
  readonly exited: Promise<ExitInfo>;
  send(message: unknown): boolean;
  listen(listeners: StdioListeners): void;
  kill(): Promise<ExitInfo>;
  stop(): Promise<ExitInfo>;
  stderrTail(): string[];
}

export interface WarmTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface WarmPoolOptions<C extends WarmChild> {
  /** How many ready processes to keep (upstream.warmProcesses). */
  size: number;
  /** Spawns a process whose messages go to `listeners`; rejects when it cannot be started. */
  spawn(listeners: StdioListeners): Promise<C>;
  /** Whether one more process fits within upstream.maxProcesses now (this pool's spawns counted, see `spawning`). */
  room(): boolean;
  /** How long a new process has to answer the ping (upstream.spawnTimeoutMs). */
  readyTimeoutMs: number;
  /** The redacted command, for the log. */
  /** The upstream's configured name: every line names it (`upstream`), with the command line as `command`. */
  name: string;
  label: string;
  log: Logger;
  timers?: WarmTimers;
}

/** Delay before the next start after `failures` failed warm processes in a row: the first is replaced at once. */
export function warmBackoffMs(failures: number): number {
  return failures <= 1 ? 0 : Math.min(BACKOFF_BASE_MS * 2 ** (failures - 2), BACKOFF_MAX_MS);
}
const BACKOFF_BASE_MS = 1_000;
/** How long a replacement waits after a take that left a ready process (see the top of this file). */
export const REFILL_DELAY_MS = 250;
const BACKOFF_MAX_MS = 60_000;

const realTimers: WarmTimers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface Entry<C> {
  state: "spawning" | "pinging" | "ready";
  child: C | undefined;
  /** Given up by evict() or close(): whatever it is at, it is ended and never counted as a failure. */
  dropped: boolean;
  /** Settles once its start has run its course (ready, failed, or ended because it was dropped). */
  started: Promise<void>;
}

function exitDetail(info: ExitInfo): string {
  return info.signal ? `signal ${info.signal}` : `exit code ${info.code ?? "unknown"}`;
}

export class WarmPool<C extends WarmChild> {
  private readonly entries = new Set<Entry<C>>();
  private readonly timers: WarmTimers;
  /** Warm processes that failed since one was last handed to a session. */
  private failures = 0;
  private retry: unknown;
  /** A refill put off after a take (REFILL_DELAY_MS); fill() waits for it. */
  private deferred: unknown;
  private fillQueued = false;
  private closed = false;
  private seq = 0;

  constructor(private readonly opts: WarmPoolOptions<C>) {
    this.timers = opts.timers ?? realTimers;
  }

  /** Ready processes, waiting for a session. */
  get ready(): number {
    let n = 0;
    for (const e of this.entries) if (e.state === "ready") n++;
    return n;
  }

  /** Processes being spawned (not yet counted by the host as live processes). */
  get spawning(): number {
    let n = 0;
    for (const e of this.entries) if (e.state === "spawning") n++;
    return n;
  }

  /** Process ids of the ready processes (tests, operators). */
  readyPids(): number[] {
    return [...this.entries].flatMap((e) => (e.state === "ready" && e.child ? [e.child.pid] : []));
  }

  /** A ready process, now the caller's (its listeners are the caller's to set), or undefined; a replacement starts. */
  take(): C | undefined {
    for (const entry of this.entries) {
      if (entry.state !== "ready" || !entry.child?.alive) continue;
      this.entries.delete(entry);
      // It served its purpose: a command whose processes get used is not a failing one.
      this.failures = 0;
      this.refillAfterTake();
      return entry.child;
    }
    return undefined;
  }

  /**
   * Ends one warm process that is not ready yet (spawning or answering its ping), to make room for a session
   * within maxProcesses; resolves once it is gone (true), or false when there is none.
   */
  async evict(): Promise<boolean> {
    const entries = [...this.entries];
    const victim = entries.find((e) => e.state === "pinging") ?? entries.find((e) => e.state === "spawning");
    if (!victim) return false;
    victim.dropped = true;
    this.entries.delete(victim);
    if (victim.child) await victim.child.kill();
    else await victim.started;
    return true;
  }

  /** The replacement of a taken process: put off while another is ready, at once when none is. */
  private refillAfterTake(): void {
    if (this.ready === 0) {
      if (this.deferred !== undefined) this.timers.clear(this.deferred);
      this.deferred = undefined;
      this.queueFill();
      return;
    }
    if (this.deferred !== undefined) return;
    this.deferred = this.timers.set(() => {
      this.deferred = undefined;
      this.fill();
    }, REFILL_DELAY_MS);
  }

  /**
   * Starts processes until `size` are ready or starting, as far as maxProcesses, the backoff and a put-off refill
   * allow.
   */
  fill(): void {
    if (this.closed || this.retry !== undefined || this.deferred !== undefined) return;
    while (this.entries.size < this.opts.size && this.opts.room()) this.startOne();
  }

  /** A fill after the current turn: the caller that made room (a session ending, a take) is done by then. */
  queueFill(): void {
    if (this.fillQueued || this.closed) return;
    this.fillQueued = true;
    setImmediate(() => {
      this.fillQueued = false;
      this.fill();
    });
  }

  /** Stops starting processes and stops the warm ones (stdin closed, then signals); resolves once they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== undefined) this.timers.clear(this.retry);
    if (this.deferred !== undefined) this.timers.clear(this.deferred);
    this.retry = undefined;
    this.deferred = undefined;
    const all = [...this.entries];
    this.entries.clear();
    for (const e of all) e.dropped = true;
    await Promise.all(all.map((e) => (e.child ? e.child.stop().then(() => e.started) : e.started)));
  }

  private startOne(): void {
    let settle = (): void => {};
    const entry: Entry<C> = {
      state: "spawning",
      child: undefined,
      dropped: false,
      started: new Promise<void>((resolve) => (settle = resolve)),
    };
    this.entries.add(entry);
    void this.start(entry).finally(settle);
  }

  private async start(entry: Entry<C>): Promise<void> {
    const { log } = this.opts;
    const about = { upstream: this.opts.name, command: this.opts.label };
    const pingId = `mcp-task-gateway-warm-${++this.seq}`;
    let answer: (outcome: true | string) => void = () => {};
    const outcome = new Promise<true | string>((resolve) => (answer = resolve));
    let child: C;
    try {
      child = await this.opts.spawn({
        onMessage: (m) => {
          if (m.id === pingId && typeof m.method !== "string") answer(true);
          else log.debug("stdio message from a warm process before its session; dropped", about);
        },
        onFramingError: (err) => answer(`broke the framing: ${err.message}`),
      });
    } catch (err) {
      this.entries.delete(entry);
      if (!entry.dropped) this.failed(`could not be started: ${(err as Error).message}`);
      return;
    }
    entry.child = child;
    if (entry.dropped) {
      await child.kill();
      return;
    }
    entry.state = "pinging";
    void child.exited.then((info) => answer(`exited before answering ping (${exitDetail(info)})`));
    const timer = this.timers.set(
      () => answer(`did not answer ping within upstream.spawnTimeoutMs (${this.opts.readyTimeoutMs} ms)`),
      this.opts.readyTimeoutMs,
    );
    if (!child.send({ jsonrpc: "2.0", id: pingId, method: "ping" })) answer("did not accept ping on its stdin");
    const result = await outcome;
    this.timers.clear(timer);
    // Dropped meanwhile: evict() or close() ends it.
    if (entry.dropped) return;
    if (result !== true) {
      this.entries.delete(entry);
      await child.kill();
      this.failed(result, child.stderrTail());
      return;
    }
    entry.state = "ready";
    log.debug("stdio warm process ready", { ...about, pid: child.pid });
    const lost = (why: string): void => {
      // Taken by a session (or dropped) meanwhile: no longer the pool's.
      if (!this.entries.delete(entry)) return;
      void child.kill();
      this.failed(why, child.stderrTail());
    };
    child.listen({
      onMessage: () => log.debug("stdio message from a warm process before its session; dropped", about),
      onFramingError: (err) => lost(`broke the framing while warm: ${err.message}`),
    });
    void child.exited.then((info) => lost(`exited while warm (${exitDetail(info)})`));
  }

  private failed(why: string, stderr: string[] = []): void {
    if (this.closed) return;
    this.failures++;
    const delay = warmBackoffMs(this.failures);
    this.opts.log.warn("stdio warm process failed; starting another", {
      upstream: this.opts.name,
      command: this.opts.label,
      cause: why,
      ...(stderr.length > 0 && { stderr: stderr.slice(-5).join(" | ") }),
      failuresInARow: this.failures,
      retryInMs: delay,
    });
    if (delay === 0) {
      this.queueFill();
      return;
    }
    if (this.retry !== undefined) return;
    this.retry = this.timers.set(() => {
      this.retry = undefined;
      this.fill();
    }, delay);
  }
}
