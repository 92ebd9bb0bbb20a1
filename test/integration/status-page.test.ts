// The operator page (GET /status) in a real browser (issue 11): Debian's chromium, driven by playwright-core.
// A gateway in front of the SDK 1.x demo upstream; the page is loaded, a task is created with a raw modern
// request, appears on the page (truncated id, tool, state), finishes and leaves it; screenshots are taken.
// A /status.json with a list of upstreams (answered here, not by the gateway) fills the upstream table.
// Chromium must be installed (.ci/run installs it): a missing browser fails this test, it is never skipped.
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import type { StatusFederated, StatusUpstream } from "../../src/metrics/status-page.js";
import { probeHealth } from "../../src/metrics/status-health.js";
import { taskRef } from "../../src/tasks/task-id.js";
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
    // The first poll filled the page in. Waits read the page's text from the test (expect.poll): the page's CSP
    // (script-src 'self') refuses the string predicates of waitForFunction once they have to poll.
    const text = (selector: string) => page.textContent(selector);
    await expect.poll(() => text("#replica"), { timeout: 10_000 }).not.toBe("…");
    await expect(page.textContent('[data-field="upstream.health"]')).resolves.not.toBe("…");
    // The page asks the era itself: a legacy upstream is legacy, probed (not unknown until a modern call).
    await expect.poll(() => text('[data-field="upstream.era"]'), { timeout: 10_000 }).toBe("legacy (probed)");
    // The SDK's server answers the probe (OPTIONS) 405: reachable, not healthy.
    await expect(text('[data-field="upstream.health"]')).resolves.toBe(
      "reachable, method not served (405): not a health answer",
    );
    await expect(page.getAttribute('[data-field="upstream.health"]', "class")).resolves.toBe("");
    await expect(page.textContent('[data-field="reload.last"]')).resolves.toBe("none since the start");
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
    const shortId = `${taskRef(task.taskId)}…`;
    const row = page.locator(`#oldest tr[data-task="${shortId}"]`);

    await row.waitFor({ state: "visible", timeout: 10_000 });
    await expect(row.locator("td").nth(1).textContent()).resolves.toBe("default");
    await expect(row.locator("td").nth(2).textContent()).resolves.toBe("slow_task");
    await expect(row.getAttribute("data-state")).resolves.toBe("working");
    await expect(page.textContent('[data-field="tasks.working"]')).resolves.toBe("1");
    // Only the truncated id is ever on the page.
    expect(await page.content()).not.toContain(task.taskId);
    const running = join(shots, "status-running.png");
    await page.screenshot({ path: running, fullPage: true });
    await expectPng(running);

    await row.waitFor({ state: "detached", timeout: 15_000 });
    await expect.poll(() => text('[data-field="tasks.working"]'), { timeout: 10_000 }).toBe("0");
    await expect
      .poll(async () => Number(await text('[data-field="rates.tasksFinished"]')), { timeout: 10_000 })
      .toBeGreaterThan(0);
    const done = join(shots, "status-done.png");
    await page.screenshot({ path: done, fullPage: true });
    await expectPng(done);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("lists every upstream of a status.json that has upstreams, as text, in place of the single one", async () => {
    const upstreams: StatusUpstream[] = [
      {
        name: "default",
        path: "/mcp",
        origin: "http://127.0.0.1:9001",
        era: "legacy",
        eraFrom: "probe",
        reachable: true,
        status: 405,
        ...probeHealth({ reachable: true, status: 405 }),
        tasks: { working: 2, inputRequired: 0 },
      },
      {
        name: "github",
        path: "/mcp/github",
        origin: "https://api.example.com",
        era: "modern",
        eraFrom: "config",
        reachable: false,
        cause: "ECONNREFUSED",
        ...probeHealth({ reachable: false, cause: "ECONNREFUSED" }),
        tasks: { working: 0, inputRequired: 1 },
      },
      {
        name: "files",
        path: "/mcp/files",
        origin: "stdio: npx -y server-filesystem",
        era: "legacy",
        eraFrom: "probe",
        reachable: true,
        status: 204,
        ...probeHealth({ reachable: true, status: 204 }),
        processes: { live: 3, idle: 1, warm: 2, idleMs: 60_000 },
        tasks: { working: 0, inputRequired: 0 },
      },
      { name: "<img src=x onerror=alert(1)>", path: "/mcp/x", origin: "http://10.0.0.1:80", era: "unknown" },
    ];
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    // The gateway's own snapshot, with the list added: what a gateway fronting several upstreams answers.
    await page.route("**/status.json", async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, json: { ...((await res.json()) as object), upstreams } });
    });
    await page.goto(`${gw.origin}/status`);
    const rows = page.locator("#upstream-list tbody tr");
    await rows.nth(3).waitFor({ state: "visible" });
    const cells = async (name: string): Promise<string[]> =>
      page.locator(`#upstream-list tr[data-upstream="${name}"] td`).allTextContents();
    await expect(cells("default")).resolves.toEqual([
      "default",
      "/mcp",
      "http://127.0.0.1:9001",
      "legacy (probed)",
      "reachable, method not served (405): not a health answer",
      "–",
      "2",
      "0",
    ]);
    // A 405 is reachable, not healthy: no green.
    await expect(
      page.locator('#upstream-list tr[data-upstream="default"] td').nth(4).getAttribute("class"),
    ).resolves.toBeNull();
    await expect(cells("files")).resolves.toEqual([
      "files",
      "/mcp/files",
      "stdio: npx -y server-filesystem",
      "legacy (probed)",
      "answers (204)",
      "3 / 1 / 2",
      "0",
      "0",
    ]);
    await expect(
      page.locator('#upstream-list tr[data-upstream="files"] td').nth(4).getAttribute("class"),
    ).resolves.toBe("ok");
    await expect(cells("github")).resolves.toEqual([
      "github",
      "/mcp/github",
      "https://api.example.com",
      "modern (configured)",
      "unreachable (ECONNREFUSED)",
      "–",
      "0",
      "1",
    ]);
    await expect(
      page.locator('#upstream-list tr[data-upstream="github"] td').nth(4).getAttribute("class"),
    ).resolves.toBe("bad");
    // A name is text, never markup; a row without a probe or task counts shows dashes.
    const stray = rows.nth(3);
    await expect(stray.locator("td").allTextContents()).resolves.toEqual([
      "<img src=x onerror=alert(1)>",
      "/mcp/x",
      "http://10.0.0.1:80",
      "unknown",
      "–",
      "–",
      "–",
      "–",
    ]);
    expect(await page.locator("#upstream-list img").count()).toBe(0);
    // The single upstream's box gives way to the table.
    expect(await page.isVisible("#upstream")).toBe(false);
    expect(await page.isVisible("#upstreams")).toBe(true);
    const shot = join(shots, "status-upstreams.png");
    await page.screenshot({ path: shot, fullPage: true });
    await expectPng(shot);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("lists the federated endpoints' members of a status.json that has them, with each one's state", async () => {
    const federated: StatusFederated[] = [
      {
        name: "all",
        path: "/mcp/all",
        members: [
          { name: "one", state: "served" },
          { name: "two", state: "open", openUntil: "2030-01-01T00:00:00.000Z" },
          { name: "three", state: "not_served" },
        ],
      },
    ];
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.route("**/status.json", async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, json: { ...((await res.json()) as object), federated } });
    });
    await page.goto(`${gw.origin}/status`);
    const rows = page.locator("#federated-list tbody tr");
    await rows.nth(2).waitFor({ state: "visible" });
    const cells = async (name: string): Promise<string[]> =>
      page.locator(`#federated-list tr[data-upstream="${name}"] td`).allTextContents();
    await expect(cells("one")).resolves.toEqual(["all", "/mcp/all", "one", "served"]);
    const two = await cells("two");
    expect(two.slice(0, 3)).toEqual(["all", "/mcp/all", "two"]);
    expect(two[3]).toMatch(/^breaker open until /);
    await expect(page.locator('#federated-list tr[data-upstream="two"] td').nth(3).getAttribute("class")).resolves.toBe(
      "bad",
    );
    await expect(cells("three")).resolves.toEqual(["all", "/mcp/all", "three", "not served"]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
