// The newcomer's first run: `npm run demo -- --walkthrough` starts the demo
// upstream and the gateway, drives an SDK client through every step, and exits 0.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";

describe("npm run demo -- --walkthrough", () => {
  it("runs the whole tour (legacy client, then a tasks client) through the gateway and exits 0", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/demo.ts", "--walkthrough", "--port", "0"], {
      cwd: new URL("../../", import.meta.url),
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const [code] = await once(child, "exit");
    clearTimeout(timer);
    expect(out).toMatch(/progress 3\/3/);
    expect(out).toMatch(/answering "Ada Lovelace"/);
    expect(out).toMatch(/notification: resources\/list_changed/);
    expect(out).toMatch(/That's the tour/);
    // The tasks tour: the slow call comes back as a task, statusMessage follows progress, then the result.
    expect(out).toMatch(/resultType "task", taskId [A-Za-z0-9_-]{22}/);
    expect(out).toMatch(/working — progress \d\/4/);
    expect(out).toMatch(/the result: done after 4000 ms in 4 steps/);
    expect(code).toBe(0);
  }, 40_000);
});
