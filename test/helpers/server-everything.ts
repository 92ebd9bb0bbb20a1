import { spawn, type ChildProcess } from "node:child_process";
import { signalGroup } from "./process-group.js";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { getFreePort } from "./ports.js";

export interface SpawnedServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  port: number;
  /** Kills the whole process group and waits for the process to exit. Idempotent. */
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);
const EVERYTHING_ENTRY = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist",
  "index.js",
);

const START_TIMEOUT_MS = 15_000;
const MAX_ATTEMPTS = 5;

class PortInUseError extends Error {}

// Children run in their own process group (so one signal reaches all of them),
// which also means they would outlive a test worker that dies without running
// its afterAll. Kill whatever is still alive when this process exits.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) signalGroup(c, "SIGKILL");
    });
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), 2_000);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

async function spawnOnce(port: number): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [EVERYTHING_ENTRY, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    // stdout carries a line per request: discard it so a full pipe can never block the server.
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  track(child);
  let stderr = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`server-everything did not start within ${START_TIMEOUT_MS} ms:\n${stderr}`)),
        START_TIMEOUT_MS,
      );
      const done = (err?: Error): void => {
        clearTimeout(timer);
        child.stderr?.off("data", onData);
        child.off("exit", onExit);
        child.off("error", onError);
        if (err) reject(err);
        else resolve();
      };
      const onData = (chunk: Buffer): void => {
        stderr += chunk.toString("utf8");
        if (/EADDRINUSE|already in use/.test(stderr)) done(new PortInUseError(stderr));
        else if (/listening on port/i.test(stderr)) done();
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (/EADDRINUSE|already in use/.test(stderr)) done(new PortInUseError(stderr));
        else done(new Error(`server-everything exited early (code ${code}, signal ${signal}):\n${stderr}`));
      };
      const onError = (err: Error): void => done(err);
      child.stderr?.on("data", onData);
      child.once("exit", onExit);
      child.once("error", onError);
    });
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  // Keep draining stderr (it is also written synchronously to a pipe).
  child.stderr?.resume();
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: () => (closing ??= stopChild(child)),
  };
}

/**
 * Spawns the real `@modelcontextprotocol/server-everything` in streamableHttp mode
 * on a free port and resolves once it logs that it is listening.
 */
export async function startServerEverything(): Promise<SpawnedServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const port = await getFreePort();
    try {
      return await spawnOnce(port);
    } catch (err) {
      lastError = err;
      if (!(err instanceof PortInUseError)) throw err;
    }
  }
  throw new Error(`server-everything could not find a free port after ${MAX_ATTEMPTS} attempts`, {
    cause: lastError,
  });
}
