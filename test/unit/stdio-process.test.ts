// StdioProcess.send: the child gets every line whole and in order, and a line sent just before a stop reaches it
// before stdin closes (what any change to how lines are written, such as batching them, must keep).
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { StdioProcess } from "../../src/stdio/child.js";

/** Answers each line with a response whose result is the request's method; on stdin's end, one last message. */
const ECHO_SERVER = `
let buf = "";
process.stdin.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\\n")) >= 0) {
    const m = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { method: m.method } }) + "\\n");
  }
});
process.stdin.on("end", () => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "bye" }) + "\\n"));
`;

function start(received: Array<Record<string, unknown>>): Promise<StdioProcess> {
  return StdioProcess.start({
    argv: [process.execPath, "-e", ECHO_SERVER],
    env: { PATH: process.env.PATH ?? "" },
    cwd: undefined,
    maxLineBytes: 1 << 20,
    stopTimeoutMs: 5_000,
    log: createLogger("error"),
    onMessage: (m) => received.push(m),
    onFramingError: (err) => {
      throw err;
    },
  });
}

describe("StdioProcess.send", () => {
  it("delivers lines sent back to back whole and in order", async () => {
    const received: Array<Record<string, unknown>> = [];
    const proc = await start(received);
    const methods = Array.from({ length: 50 }, (_, i) => `m${i}`);
    methods.forEach((method, i) =>
      expect(proc.send({ jsonrpc: "2.0", id: i, method, params: { pad: "x".repeat(i * 100) } })).toBe(true),
    );
    await expect.poll(() => received.length).toBe(50);
    expect(received.map((m) => (m.result as { method: string }).method)).toEqual(methods);
    expect(received.map((m) => m.id)).toEqual(methods.map((_, i) => i));
    await proc.stop();
  });

  it("writes the lines sent just before a stop before it closes stdin", async () => {
    const received: Array<Record<string, unknown>> = [];
    const proc = await start(received);
    proc.send({ jsonrpc: "2.0", id: 1, method: "last-call" });
    const exit = await proc.stop();
    expect(exit.code).toBe(0);
    expect(received.map((m) => m.method ?? (m.result as { method: string }).method)).toEqual(["last-call", "bye"]);
    // Stopped: nothing more is accepted.
    expect(proc.send({ jsonrpc: "2.0", id: 2, method: "late" })).toBe(false);
  });
});
