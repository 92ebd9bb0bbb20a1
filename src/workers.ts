// `--workers N`: N processes serve one port through node:cluster, sharing tasks
// in the store. The primary serves nothing itself: it checks the store once (so a
// wrong URL is one clear exit 2, not N), forks the workers, announces the start
// once, replaces a worker that dies (its tasks take the lapsed-lease path: another
// worker ends them failed), and on SIGINT/SIGTERM lets every worker shut down
// gracefully before it exits.
//
// Log lines: a worker's carry `worker`, its node:cluster id (1, 2, …; a replacement gets the next one); the
// primary's carry worker 0. /status lists the workers with the same ids.
import cluster, { type Worker } from "node:cluster";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayConfig } from "./config/schema.js";
import { createLogger, type LogFields } from "./log/logger.js";
import { serveClusterMetrics, serveClusterStatus } from "./metrics/cluster.js";
import { openSharedTasks, StoreStartError } from "./shared-tasks.js";
import { EXIT_USAGE, lifecycleLog, printStartLine, type CliIo } from "./cli.js";

/** The primary's `worker` in log lines (workers are numbered from 1). */
const PRIMARY = 0;

/** The fields every log line of this process carries: its `worker` under --workers, none otherwise. */
export function workerFields(): LogFields | undefined {
  if (cluster.isWorker) return { worker: cluster.worker?.id ?? null };
  return undefined;
}

/** What a worker tells the primary once it listens. */
interface ListeningMessage {
  type: "mcp-task-gateway:listening";
  url: string;
  /** Its Unix socket (server.internalSocketDir), removed by the primary should the worker die without closing it. */
  socket?: string | undefined;
}

/**
 * The environment variable through which the primary hands its workers the private directory it made for their
 * Unix sockets (when server.internalSocketDir is unset); read by a worker only (main.ts).
 */
const WORKER_SOCKETS_ENV = "MCP_TASK_GATEWAY_WORKER_SOCKETS";

/**
 * The config a worker runs: with the primary's socket directory when the config names none. A process that is no
 * cluster worker ignores the variable, so it is no setting of its own.
 */
export function workerConfig(config: GatewayConfig): GatewayConfig {
  const dir = process.env[WORKER_SOCKETS_ENV];
  if (!cluster.isWorker || dir === undefined || config.server.internalSocketDir !== undefined) return config;
  return { ...config, server: { ...config.server, internalSocketDir: dir } };
}

function isListeningMessage(m: unknown): m is ListeningMessage {
  return typeof m === "object" && m !== null && (m as { type?: unknown }).type === "mcp-task-gateway:listening";
}

/** What the primary tells every worker when it is asked to stop. */
export const SHUTDOWN = "mcp-task-gateway:shutdown";
/** The primary relays SIGHUP to its workers as this message: each reloads its own policy. */
export const RELOAD = "mcp-task-gateway:reload";

/** Pause before a crashed worker is replaced, so a worker that keeps crashing does not spin the CPU. */
const RESPAWN_DELAY_MS = 1_000;
/** Ceiling of the pause between tries at a replacement that keeps failing to start. */
const MAX_RESPAWN_DELAY_MS = 30_000;

export async function runPrimary(config: GatewayConfig, io: CliIo): Promise<number> {
  // One check of the store before forking: an unreachable Redis is one exit 2 with the URL named (no password).
  try {
    const probe = await openSharedTasks(config, createLogger("silent"), Date.now);
    await probe.store.close();
    await probe.events.close();
  } catch (err) {
    if (err instanceof StoreStartError) {
      io.stderr(`mcp-task-gateway: ${err.message} (--store / MCP_GATEWAY_STORE / tasks.store)\n`);
      return EXIT_USAGE;
    }
    throw err;
  }

  // The workers forward to each other over Unix sockets in a directory only this user can enter (mkdtemp: 0700),
  // removed when the primary is done; a configured server.internalSocketDir is used as it is instead.
  const socketDir =
    config.server.internalSocketDir === undefined ? mkdtempSync(join(tmpdir(), "mcp-task-gateway-")) : undefined;
  try {
    return await serveWorkers(config, io, socketDir);
  } finally {
    if (socketDir !== undefined) rmSync(socketDir, { recursive: true, force: true });
  }
}

async function serveWorkers(config: GatewayConfig, io: CliIo, socketDir: string | undefined): Promise<number> {
  const wanted = config.server.workers;
  const life = lifecycleLog(io.stderr, { worker: PRIMARY });
  // A scrape of the shared port reaches one worker, which asks here for every worker's metrics.
  if (config.metrics.enabled) {
    serveClusterMetrics();
    serveClusterStatus();
  }
  let announced = false;
  let stopping = false;
  const listening = new Set<Worker>();
  /** Each worker's Unix socket: a worker that dies without closing it leaves the file, which goes then. */
  const sockets = new Map<Worker, string>();
  /** The exit code when a start failure stops every worker. */
  let failure: number | undefined;
  /** The next pause before another try at a replacement that did not start. */
  let retryMs = RESPAWN_DELAY_MS;

  return await new Promise<number>((resolve) => {
    // Not unref'd: when every worker is gone at once, this timer is all that keeps the primary alive to replace them.
    const replace = (delayMs: number): void => {
      setTimeout(() => {
        if (!stopping) fork();
      }, delayMs);
    };
    const fork = (): void => {
      const worker = cluster.fork(socketDir === undefined ? undefined : { [WORKER_SOCKETS_ENV]: socketDir });
      worker.on("message", (m: unknown) => {
        if (!isListeningMessage(m)) return;
        if (typeof m.socket === "string") sockets.set(worker, m.socket);
        listening.add(worker);
        retryMs = RESPAWN_DELAY_MS;
        if (!announced && listening.size === wanted) {
          announced = true;
          printStartLine(io, m.url, config, wanted);
        }
      });
    };
    cluster.on("exit", (worker, code, signal) => {
      const hadStarted = listening.delete(worker);
      const socket = sockets.get(worker);
      sockets.delete(worker);
      if (socket !== undefined) rmSync(socket, { force: true });
      const left = Object.keys(cluster.workers ?? {}).length;
      if (stopping) {
        // The last one out decides: a start failure keeps its exit code, a requested stop is 0.
        if (left === 0) resolve(failure ?? 0);
        return;
      }
      if (!hadStarted && !announced) {
        // It never listened, at the start: a failure (port in use, bad store) that every worker would repeat.
        stopping = true;
        failure = code || 1;
        for (const w of Object.values(cluster.workers ?? {})) w?.kill("SIGTERM");
        if (left === 0) resolve(failure);
        return;
      }
      if (!hadStarted) {
        // A replacement that could not start (say, the store is away for a moment): the workers still
        // running keep serving, and it is tried again, less and less often.
        life.warn(
          `mcp-task-gateway: replacement worker ${worker.process.pid ?? "?"} did not start (${signal ?? code}); trying again in ${retryMs} ms`,
          { exited: worker.id, pid: worker.process.pid ?? null, cause: String(signal ?? code), retryInMs: retryMs },
        );
        replace(retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RESPAWN_DELAY_MS);
        return;
      }
      life.warn(
        `mcp-task-gateway: worker ${worker.process.pid ?? "?"} exited (${signal ?? code}); starting a replacement`,
        {
          exited: worker.id,
          pid: worker.process.pid ?? null,
          cause: String(signal ?? code),
        },
      );
      replace(RESPAWN_DELAY_MS);
    });
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) {
        life.warn(`mcp-task-gateway: ${signal} again, exiting now`, { signal });
        for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGKILL");
        resolve(1);
        return;
      }
      stopping = true;
      life.info(`mcp-task-gateway: ${signal} received, shutting down ${wanted} workers`, { signal });
      // A message, not a signal: a terminal's Ctrl-C already signals the whole process group. A worker
      // still starting (a replacement, or a stop during the start) may not listen for messages yet and
      // would lose it, leaving the primary waiting forever: it gets SIGTERM as well (it runs no task
      // yet; a worker takes one stop request, whichever comes first, and ignores the rest).
      for (const w of Object.values(cluster.workers ?? {})) {
        if (!w) continue;
        if (w.isConnected()) w.send({ type: SHUTDOWN }, (err: Error | null) => void err);
        if (!listening.has(w)) w.process.kill("SIGTERM");
      }
      if (Object.keys(cluster.workers ?? {}).length === 0) resolve(0);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    process.on("SIGHUP", () => {
      for (const w of Object.values(cluster.workers ?? {}))
        if (w?.isConnected()) w.send({ type: RELOAD }, (err: Error | null) => void err);
    });
    for (let i = 0; i < wanted; i++) fork();
  });
}
