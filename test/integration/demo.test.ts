// The newcomer's first run: `npm run demo -- --walkthrough` starts the demo
// upstream and the gateway, drives an SDK client through every step, and exits 0.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";

describe("npm run demo -- --walkthrough", () => {
  it("runs the whole tour through the gateway and exits 0", async () => {
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
    expect(code).toBe(0);
  }, 40_000);
});
