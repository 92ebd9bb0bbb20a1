// The SDK 1.x demo upstream (examples/demo-upstream.ts, the server startSdkUpstream starts in-process) as a
// child process of its own, so that a test can SIGSTOP it, as a hung server would be, without stopping itself.
import { signalGroup } from "./process-group.js";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const START_TIMEOUT_MS = 20_000;
const LISTENING = /listening on (http:\/\/\S+)/;

export interface DemoUpstreamProcess {
  /** Its MCP endpoint, http://127.0.0.1:PORT/mcp. */
  url: string;
  pid: number;
  /** SIGSTOP: the process stops reading and answering; its sockets stay open (the kernel still accepts). */
  stop(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL to its process group, as a crash or the OOM killer would: no goodbye on any socket. Waits for the exit. */
  kill(): Promise<void>;
  /** SIGCONT, then SIGTERM (SIGKILL after 2 s) to its process group, and waits for the exit. Idempotent. */
  close(): Promise<void>;
}

/**
 * The SDK 1.x demo upstream (examples/demo-upstream.ts, the same server as startSdkUpstream) in a process of its
 * own, on `port` (default: one the kernel picks; a given one restarts a server where it was); resolves once it
 * says where it listens.
 */
export async function spawnDemoUpstream(port = 0): Promise<DemoUpstreamProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "examples/demo-upstream.ts", "--port", String(port)], {
    cwd: ROOT,
    env: { ...process.env },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killAtExit = (): void => signalGroup(child, "SIGKILL");
  process.once("exit", killAtExit);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      process.off("exit", killAtExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup(child, "SIGCONT");
      signalGroup(child, "SIGTERM");
      const timer = setTimeout(() => signalGroup(child, "SIGKILL"), 2_000);
      await exited;
      clearTimeout(timer);
    })());
  let output = "";
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the demo upstream did not start within ${START_TIMEOUT_MS} ms:\n${output}`)),
        START_TIMEOUT_MS,
      );
      const onData = (chunk: Buffer): void => {
        output += chunk.toString("utf8");
        const found = LISTENING.exec(output);
        if (found?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(found[1]);
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the demo upstream exited early (code ${code}, signal ${signal}):\n${output}`));
      });
    });
    // Keep draining its output so a full pipe never blocks it.
    child.stdout.resume();
    child.stderr.resume();
    const pid = child.pid as number;
    return {
      url,
      pid,
      stop: () => signalGroup(child, "SIGSTOP"),
      resume: () => signalGroup(child, "SIGCONT"),
      async kill() {
        process.off("exit", killAtExit);
        if (child.exitCode === null && child.signalCode === null) signalGroup(child, "SIGKILL");
        await exited;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
