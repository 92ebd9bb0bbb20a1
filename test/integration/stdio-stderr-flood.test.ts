// A stdio server that floods stderr with lines crafted against the redaction (long runs of "-api-key",
// "password=", "://", "Bearer ", …): the gateway redacts every line it keeps, and its event loop must stay
// responsive meanwhile. A timer heartbeat measures the longest the loop was held (helpers/event-loop.ts). The bound is generous: it says
// linear, not fast. The former patterns backtracked on half of these lines (30–90 ms each, so about half a second
// for the 16 lines of one 64 KiB chunk); the scanner takes a few ms per chunk once the JIT has compiled it, which
// is why it redacts a few lines of each kind before the flood, as a gateway that has been running has.
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { redactLine } from "../../src/log/redact.js";
import { StdioProcess } from "../../src/stdio/child.js";
import { longestHold } from "../helpers/event-loop.js";

const LINES = 2_000;
const UNITS = [
  "-api-key",
  "password=",
  "-token",
  "://",
  "x-api_key-",
  "Bearer ",
  "-password",
  '"token":"',
  "api-key-",
  "a://b@",
  "-secret",
  "-p ",
  "eyJ-",
  "x:",
];

function line(unit: string): string {
  return unit.repeat(Math.ceil(4000 / unit.length)).slice(0, 4000);
}

/** A node program that writes LINES lines of about 4,000 characters to stderr, then a line with a secret, and exits. */
function floodScript(): string {
  return `
    const units = ${JSON.stringify(UNITS)};
    const lines = [];
    for (let i = 0; i < ${LINES}; i++) lines.push((${line.toString()})(units[i % units.length]));
    lines.push("done password=hunter2");
    process.stderr.write(lines.join("\\n") + "\\n", () => process.exit(0));
  `;
}

const started: StdioProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop()));
});

describe("stdio stderr redaction under a flood of adversarial lines", () => {
  it("keeps the event loop responsive while every line is redacted", async () => {
    for (let i = 0; i < 20; i++) for (const unit of UNITS) redactLine(line(unit));
    const proc = await StdioProcess.start({
      argv: [process.execPath, "-e", floodScript()],
      env: { PATH: process.env.PATH ?? "" },
      cwd: undefined,
      maxLineBytes: 1 << 20,
      stopTimeoutMs: 1_000,
      log: createLogger("info"),
      onMessage: () => {},
      onFramingError: () => {},
    });
    started.push(proc);
    // Bounded: a loop held for seconds per chunk (the former patterns) is cut after 5 s and fails on its gap.
    const held = await longestHold(
      Promise.race([proc.exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]),
    );
    expect(held.cpuMs, `the event loop was held for ${held.wallMs.toFixed(0)} ms`).toBeLessThan(100);
    const tail = proc.stderrTail();
    expect(tail.at(-1)).toBe("done password=***");
    expect(tail.length).toBeGreaterThan(1);
  });
});
