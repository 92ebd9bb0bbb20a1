// `npm start` as an operator runs it: a SIGTERM sent to npm's process (what `kill PID`, a service manager or a
// container runtime sends) must reach the gateway. npm passes SIGTERM on to its child, the shell of the script; the
// script execs node, so that child is the gateway itself, which shuts down gracefully and frees its port. Without the
// exec, the shell dies and the gateway is left running, orphaned, on its port.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { signalGroup } from "../helpers/process-group.js";

const ROOT = new URL("../../", import.meta.url);
/** The gateway's address, from its start line (on stdout, whatever the line's format). */
const LISTENING = /http:\/\/127\.0\.0\.1:(\d+)\/mcp/;

const children: ChildProcessWithoutNullStreams[] = [];
// npm leads a process group of its own (detached): a gateway left orphaned by a failure is still in it, and goes.
afterEach(() => {
  for (const c of children.splice(0)) signalGroup(c, "SIGKILL");
});

/** Whether something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("npm start", () => {
  it("hands a SIGTERM sent to npm to the gateway, which shuts down and frees its port", async () => {
    // Port 9 (discard) answers nothing: the gateway starts without reaching its upstream.
    const npm = spawn("npm", ["start", "--silent", "--", "--upstream", "http://127.0.0.1:9/mcp", "--port", "0"], {
      cwd: ROOT,
      env: { ...process.env, MCP_GATEWAY_LOG_LEVEL: "warn" },
      detached: true,
    });
    children.push(npm);
    let out = "";
    npm.stdout.on("data", (d: Buffer) => (out += d.toString()));
    npm.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = once(npm, "exit");
    const port = await new Promise<number>((resolve, reject) => {
      const onData = (): void => {
        const m = LISTENING.exec(out);
        if (m) resolve(Number(m[1]));
      };
      npm.stdout.on("data", onData);
      npm.once("exit", () => reject(new Error(`npm start exited before the gateway listened:\n${out}`)));
    });
    expect(await listening(port)).toBe(true);

    npm.kill("SIGTERM");
    await exited;
    expect(out).toContain("SIGTERM");
    expect(await listening(port)).toBe(false);
  });
});
