// A private redis-server of a test's own, on a free loopback port, for what the
// shared one at 127.0.0.1:6379 must not suffer: being stopped and started again
// mid-test (the gateway's Redis-outage behaviour). Nothing is kept on disk.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { getFreePort } from "./ports.js";

export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGKILL: as abrupt as a crash) and waits until it is gone. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty, and waits until it answers. */
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a Redis that hangs rather than refuses). */
  pause(): void;
  /** SIGCONT: it answers again, what was sent meanwhile included. */
  resume(): void;
}

async function answers(port: number): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let reply = "";
    socket.setTimeout(500, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (d: Buffer) => {
      reply += d.toString();
      if (reply.includes("\r\n")) {
        socket.end();
        resolve(reply.startsWith("+PONG"));
      }
    });
  });
}

async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`private redis-server: ${what} within ${ms} ms`);
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await getFreePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
    await until(() => answers(port), "did not answer PING");
  };
  const stop = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = once(c, "exit");
    c.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
  };
}
