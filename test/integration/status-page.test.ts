// The operator page (GET /status) in a real browser (issue 11): Debian's chromium, driven by playwright-core.
// A gateway in front of the SDK 1.x demo upstream; the page is loaded, a task is created with a raw modern
// request, appears on the page (truncated id, tool, state), finishes and leaves it; screenshots are taken.
// Chromium must be installed (.ci/run installs it): a missing browser fails this test, it is never skipped.
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { modernRpc } from "../helpers/modern-http.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const DECLARING = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let upstream: SdkUpstream;
let gw: TestGateway;
let browser: Browser;
let shots: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)`);
  upstream = await startSdkUpstream();
  gw = await startGateway({
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: { thresholdMs: 100, adaptive: false },
  });
  // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  shots = process.env.STATUS_SCREENSHOT_DIR ?? (await mkdtemp(join(tmpdir(), "status-page-")));
});

afterAll(async () => {
  await browser?.close();
  await gw?.close(0);
  await upstream?.close();
  if (shots && !process.env.STATUS_SCREENSHOT_DIR) await rm(shots, { recursive: true, force: true });
});

async function expectPng(path: string): Promise<void> {
  const bytes = await readFile(path);
  expect(bytes.length).toBeGreaterThan(1_000);
  expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
}

describe("the status page in Chromium", () => {
  it("shows a task appear while it runs and leave when it finishes, live", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(`${gw.origin}/status`);
    // The first poll filled the page in.
    // Expressions as strings: they run in the page (the test's TypeScript has no DOM types).
    await page.waitForFunction(`document.querySelector("#replica")?.textContent !== "…"`, undefined, {
      timeout: 10_000,
    });
    await expect(page.textContent('[data-field="upstream.health"]')).resolves.toContain("reachable");
    await expect(page.textContent('[data-field="tasks.working"]')).resolves.toBe("0");
    expect(await page.isVisible("#none")).toBe(true);

    const reply = await modernRpc(
      gw.url,
      "tools/call",
      { name: "slow_task", arguments: { durationMs: 2_500, steps: 1 } },
      { capabilities: DECLARING },
    );
    const task = reply.message.result as { resultType: string; taskId: string };
    expect(task.resultType).toBe("task");
    const shortId = `${task.taskId.slice(0, 8)}…`;
    const row = page.locator(`#oldest tr[data-task="${shortId}"]`);

    await row.waitFor({ state: "visible", timeout: 10_000 });
    await expect(row.locator("td").nth(1).textContent()).resolves.toBe("slow_task");
    await expect(row.getAttribute("data-state")).resolves.toBe("working");
    await expect(page.textContent('[data-field="tasks.working"]')).resolves.toBe("1");
    // Only the truncated id is ever on the page.
    expect(await page.content()).not.toContain(task.taskId);
    const running = join(shots, "status-running.png");
    await page.screenshot({ path: running, fullPage: true });
    await expectPng(running);

    await row.waitFor({ state: "detached", timeout: 15_000 });
    await page.waitForFunction(
      `document.querySelector('[data-field="tasks.working"]')?.textContent === "0"`,
      undefined,
      { timeout: 10_000 },
    );
    await page.waitForFunction(
      `Number(document.querySelector('[data-field="rates.tasksFinished"]')?.textContent) > 0`,
      undefined,
      { timeout: 10_000 },
    );
    const done = join(shots, "status-done.png");
    await page.screenshot({ path: done, fullPage: true });
    await expectPng(done);
    expect(errors).toEqual([]);
    await page.close();
  });
});
