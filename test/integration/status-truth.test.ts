// /status tells the truth (issue 37), read from /status.json of a real gateway: the era each upstream speaks
// (learned by the page itself, before any modern call; configured; or unknown), a probe answered 405 shown as
// reachable rather than healthy, a stdio upstream's processes (live, idle, warm), and the last reload (its time,
// result and error; the same in the metrics). Nothing on the page shows an upstream's path or query.
//
// Real peers: server-everything over HTTP and over stdio, the SDK 2.x modern fixture, the SDK 1.x legacy one
// (which answers the probe's OPTIONS with 405). The clock is injected: a reload's time is the test's.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reloadConfig, type ConfigSources } from "../../src/cli.js";
import { startGateway } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import type { StatusReload, StatusUpstream } from "../../src/metrics/status-page.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import { startServerEverything, type SpawnedServer } from "../helpers/server-everything.js";
import { everythingCommand, openRawSession } from "../helpers/stdio-servers.js";

const KEY = "status-key-SECRET-41d2";
const START = Date.parse("2031-05-06T07:08:09.000Z");

let everything: SpawnedServer;
let modern: ModernUpstream;
let sdk: SdkUpstream;
let gw: TestGateway;
let dir: string;
let clock = START;

interface Status {
  upstreams: StatusUpstream[];
  reload: StatusReload;
  workers?: unknown;
}

async function status(): Promise<{ body: Status; text: string }> {
  const res = await fetch(`${gw.origin}/status.json`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { body: JSON.parse(text) as Status, text };
}

function row(s: Status, name: string): StatusUpstream {
  const found = s.upstreams.find((u) => u.name === name);
  if (!found) throw new Error(`no upstream ${name} on the page: ${JSON.stringify(s.upstreams)}`);
  return found;
}

/** The config file a reload reads: the upstreams the gateway started with, and `extra`. */
function configText(extra: string): string {
  return JSON.stringify({
    upstreams: {
      everything: { url: `${everything.url}?key=${KEY}` },
      modern: { url: modern.url },
      sdk: { url: sdk.url, era: "legacy" },
      files: { command: everythingCommand(), warmProcesses: 1, processIdleMs: 600_000 },
    },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    ...(JSON.parse(extra) as object),
  });
}

beforeAll(async () => {
  everything = await startServerEverything();
  modern = await startModernUpstream();
  sdk = await startSdkUpstream();
  dir = await mkdtemp(join(tmpdir(), "status-truth-"));
  gw = await startGateway(JSON.parse(configText("{}")) as Parameters<typeof startGateway>[0], { now: () => clock });
});

afterAll(async () => {
  await gw?.close(0);
  await everything?.close();
  await modern?.close();
  await sdk?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("/status.json tells the truth", () => {
  it("shows the era each upstream speaks before any client asked: probed, or configured", async () => {
    const { body } = await status();
    expect(row(body, "everything")).toMatchObject({ era: "legacy", eraFrom: "probe" });
    expect(row(body, "modern")).toMatchObject({ era: "modern", eraFrom: "probe" });
    expect(row(body, "sdk")).toMatchObject({ era: "legacy", eraFrom: "config" });
    expect(row(body, "files")).toMatchObject({ era: "legacy", eraFrom: "probe" });
  });

  it("shows a probe answered 405 as reachable, not as health; a 2xx as ok", async () => {
    const { body } = await status();
    const sdkRow = row(body, "sdk");
    expect(sdkRow).toMatchObject({ reachable: true, status: 405, health: "reachable" });
    expect(sdkRow.probe).toBe("reachable, method not served (405): not a health answer");
    for (const u of body.upstreams) {
      // Green only for an answer that says it serves.
      if (u.health === "ok") expect(u.status).toBeLessThan(400);
      else expect(u.status === undefined || u.status >= 400).toBe(true);
    }
  });

  it("shows a stdio upstream's processes: live, idle (a one-shot client's), warm", async () => {
    const before = row((await status()).body, "files");
    expect(before.processes).toMatchObject({ idle: 0, idleMs: 600_000 });
    expect(row((await status()).body, "everything").processes).toBeUndefined();
    // The warm one is started in the background, once.
    await expect.poll(async () => row((await status()).body, "files").processes?.warm, { timeout: 15_000 }).toBe(1);
    // A one-shot client: a session opened and left (no DELETE), its process idle until processIdleMs.
    await openRawSession(`${gw.url}/files`);
    await expect
      .poll(async () => row((await status()).body, "files").processes, { timeout: 15_000 })
      .toMatchObject({ idle: 1, warm: 1, live: 2 });
  });

  it("shows the last reload, its result and its error; the metrics say the same", async () => {
    const file = join(dir, "gateway.json");
    const sources: ConfigSources = { flags: {}, env: {}, configFile: file, watch: false };
    const log = createLogger("silent");
    const first = (await status()).body.reload;
    expect(first).toEqual({ lastSuccessAt: new Date(START).toISOString(), failures: 0 });

    clock = START + 60_000;
    await writeFile(file, configText(JSON.stringify({ tasks: { thresholdMs: 2_500 } })));
    expect(await reloadConfig(gw, sources, log)).toBe(true);
    const ok = (await status()).body.reload;
    expect(ok).toEqual({
      lastSuccessAt: new Date(START + 60_000).toISOString(),
      failures: 0,
      last: { at: new Date(START + 60_000).toISOString(), ok: true, applied: ["tasks.thresholdMs"], restart: [] },
    });

    clock = START + 120_000;
    await writeFile(file, configText(JSON.stringify({ tasks: { thresholdMs: -1 } })));
    expect(await reloadConfig(gw, sources, log)).toBe(false);
    const { body, text } = await status();
    expect(body.reload).toMatchObject({
      lastSuccessAt: new Date(START + 60_000).toISOString(),
      failures: 1,
      last: {
        at: new Date(START + 120_000).toISOString(),
        ok: false,
        error: expect.stringContaining("tasks.thresholdMs"),
      },
    });
    // No upstream's path or query anywhere on the page.
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("?");

    const samples = parseExposition(await (await fetch(`${gw.origin}/metrics`)).text());
    expect(value(samples, "mcp_gateway_config_last_reload_success_timestamp_seconds")).toBe((START + 60_000) / 1000);
    expect(value(samples, "mcp_gateway_config_last_reload_successful")).toBe(0);
    expect(value(samples, "mcp_gateway_config_reload_failures_total")).toBe(1);
  });

  it("shows no workers without --workers", async () => {
    expect((await status()).body.workers).toBeUndefined();
  });
});
