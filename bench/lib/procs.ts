// Child processes of the harness: spawn, wait until ready, and make sure every
// one of them dies with the harness (normal end, error, SIGINT, SIGTERM).
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { findBinary } from "./binaries.js";

export interface Child {
  readonly name: string;
  /** Root of the child's process tree (the `timeout` wrapper when there is one). */
  readonly pid: number;
  readonly process: ChildProcess;
  /** Kills the child and all its descendants at once, synchronously. */
  kill(signal: NodeJS.Signals): void;
  /** Last lines of stdout+stderr, for error messages. */
  recentOutput(): string;
  stop(): Promise<void>;
}

export interface SpawnOptions<T> {
  name: string;
  command: string;
  args: readonly string[];
  cwd?: string;
  env?: Record<string, string>;
  /**
   * How to tell the child is ready: `line` looks at each output line (stdout
   * and stderr) and returns a value once it sees the one it waits for; `probe`
   * is polled for programs that announce nothing (nginx).
   */
  ready: { line: (line: string) => T | undefined } | { probe: () => Promise<T | undefined> };
  timeoutMs?: number;
  /** Runs once the child has exited (e.g. removes its temp directory). */
  cleanup?: () => void;
  /** Sees every line of output (stdout and stderr), before and after ready (e.g. --trace-gc-nvp's lines). */
  onLine?: (line: string) => void;
}

const live = new Set<Child>();
/** Set once the harness is shutting down; nothing new is started after that. */
let stopping = false;
let lifetimeSec = 3600;

/** The longest any child may live, even if the harness itself is SIGKILLed. */
export function setChildLifetime(seconds: number): void {
  lifetimeSec = Math.ceil(seconds);
}

/**
 * Every long-lived child runs under coreutils `timeout`, for two reasons:
 * it puts the child in a process group of its own, so one kill(-pid) reaches
 * grandchildren too (the nginx worker, tsx's esbuild), and it bounds the
 * child's life if the harness dies without cleaning up. Its pid is the root
 * of the tree whose CPU we read; timeout itself uses none.
 */
function guarded(command: string, args: readonly string[]): { command: string; args: string[]; group: boolean } {
  const timeout = findBinary("timeout");
  if (timeout === undefined) return { command, args: [...args], group: false };
  return { command: timeout, args: ["--kill-after=5", `${lifetimeSec}s`, command, ...args], group: true };
}

/** Signals the child's whole process group if it has one, else the child. */
function killTree(proc: ChildProcess, group: boolean, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    if (group) process.kill(-proc.pid, signal);
    else proc.kill(signal);
  } catch {
    // already gone
  }
}

/** Spawns a child and resolves once `ready` recognises a line of its output. */
export async function startChild<T>(opts: SpawnOptions<T>): Promise<{ child: Child; ready: T }> {
  if (stopping) throw new Error(`${opts.name}: not started, the bench is stopping`);
  const cmd = guarded(opts.command, opts.args);
  const proc = spawn(cmd.command, cmd.args, {
    cwd: opts.cwd,
    env: { ...process.env, BENCH_CHILD: "1", ...opts.env },
    // stdin stays a pipe: our own children exit when it closes (see child-lifetime.ts).
    stdio: ["pipe", "pipe", "pipe"],
  });
  if (proc.pid === undefined) {
    // spawn failed synchronously enough that there is no pid; the error event says why.
    const err = await new Promise<Error>((resolve) => proc.once("error", resolve));
    throw new Error(`${opts.name}: cannot start ${opts.command}: ${err.message}`);
  }
  const pid = proc.pid;
  const recent: string[] = [];
  let exited = false;
  const exitPromise = new Promise<void>((resolve) =>
    proc.once("exit", () => {
      exited = true;
      opts.cleanup?.();
      resolve();
    }),
  );

  const child: Child = {
    name: opts.name,
    pid,
    process: proc,
    recentOutput: () => recent.join("\n"),
    kill: (signal) => killTree(proc, cmd.group, signal),
    async stop() {
      live.delete(child);
      if (exited) return;
      // SIGTERM first so programs can shut down cleanly (nginx removes its pid file).
      child.kill("SIGTERM");
      const timer = setTimeout(() => {
        if (!exited) child.kill("SIGKILL");
      }, 2000);
      await exitPromise;
      clearTimeout(timer);
    },
  };
  live.add(child);

  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void child.stop();
      reject(new Error(`${opts.name}: ${why}\n--- last output ---\n${child.recentOutput()}`));
    };
    const succeed = (value: T): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ child, ready: value });
    };
    const timer = setTimeout(() => fail(`not ready after ${opts.timeoutMs ?? 20_000} ms`), opts.timeoutMs ?? 20_000);
    const ready = opts.ready;
    if ("probe" in ready) {
      const poll = (): void => {
        if (settled) return;
        ready.probe().then(
          (value) => (value === undefined ? setTimeout(poll, 50) : succeed(value)),
          () => setTimeout(poll, 50),
        );
      };
      poll();
    }
    const onLine = (line: string): void => {
      // Every line is read (and mostly dropped) so that a chatty child never
      // blocks on a full pipe; only the last few are kept for diagnostics.
      recent.push(line);
      if (recent.length > 30) recent.shift();
      opts.onLine?.(line);
      if (settled || !("line" in ready)) return;
      const value = ready.line(line);
      if (value !== undefined) succeed(value);
    };
    if (proc.stdout !== null) createInterface({ input: proc.stdout }).on("line", onLine);
    if (proc.stderr !== null) createInterface({ input: proc.stderr }).on("line", onLine);
    proc.once("error", (err) => fail(`failed: ${err.message}`));
    proc.once("exit", (code, signal) => {
      live.delete(child);
      fail(`exited before it was ready (code ${code}, signal ${signal})`);
    });
  });
}

const transient = new Set<ChildProcess>();

/**
 * Runs a short-lived command (wrk, nginx -v) to completion and returns its
 * output. It is killed after `timeoutMs` so that nothing can hang the harness,
 * and it is killed with the rest if the harness is interrupted.
 */
export function runToCompletion(
  command: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    if (stopping) {
      reject(new Error(`${command}: not started, the bench is stopping`));
      return;
    }
    const proc = spawn(command, [...args], { stdio: ["ignore", "pipe", "pipe"] });
    transient.add(proc);
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    proc.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    proc.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill("SIGKILL");
    }, timeoutMs);
    proc.once("error", (err) => {
      clearTimeout(timer);
      transient.delete(proc);
      reject(err);
    });
    proc.once("close", (code) => {
      clearTimeout(timer);
      transient.delete(proc);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

/** Stops every child still running, and refuses to start new ones. */
export async function stopAll(): Promise<void> {
  stopping = true;
  for (const proc of transient) proc.kill("SIGKILL");
  await Promise.all([...live].map((c) => c.stop()));
}

/** Whether any child has died since it was started (a crashed proxy invalidates a run). */
export function isAlive(child: Child): boolean {
  return child.process.exitCode === null && child.process.signalCode === null;
}

let installed = false;
/**
 * Cleans up on SIGINT/SIGTERM and, as a last resort, SIGKILLs whatever is left
 * when the harness exits. `exit` handlers must be synchronous, hence kill().
 */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping child processes…\n`);
    void stopAll().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  process.on("exit", () => {
    for (const proc of transient) proc.kill("SIGKILL");
    for (const c of live) c.kill("SIGKILL");
  });
}

/**
 * The harness's own deadline: past `seconds` it says so on stderr, stops every child and exits 2, so a run that
 * hangs (a child that never answers) ends by itself. Unref'd: a run that finishes is not held up by it.
 */
export function exitAfter(label: string, seconds: number): void {
  const watchdog = setTimeout(() => {
    process.stderr.write(`${label}: still running after ${seconds} s; giving up\n`);
    void stopAll().finally(() => process.exit(2));
  }, seconds * 1000);
  watchdog.unref();
}
