// gateway.reload(config): the policy (task rules, thresholds, access) changes
// for requests that start afterwards; a task already running keeps going and
// completes; settings bound at start (ports, upstream) are reported as needing a
// restart and keep their old value. Real peers: the SDK 1.x paginated upstream
// behind the era bridge and the pass-through, SDK 1.x and 2.x clients.
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, type GatewayConfigInput } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { startLegacyPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";
import {
  startTestGateway,
  testGatewayConfig,
  type TestGateway,
  type TestGatewayOverrides,
} from "../helpers/gateway.js";
import { connectModernClient } from "../helpers/modern-client.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The upstream and a gateway in front of it, closed after the test; `config(o)` is the start config with `o` on top. */
async function start(overrides: TestGatewayOverrides = {}) {
  const upstream: PagedUpstream = await startLegacyPagedUpstream();
  cleanups.push(() => upstream.close());
  const gateway: TestGateway = await startTestGateway(upstream.url, overrides);
  cleanups.push(async () => void (await gateway.close(0)));
  const config = (changes: TestGatewayOverrides = {}): GatewayConfigInput =>
    testGatewayConfig(upstream.url, { ...overrides, ...changes });
  return { upstream, gateway, config };
}

describe("gateway.reload", () => {
  it("a task rule added by a reload applies to the next call", async () => {
    // Threshold far away: without a rule nothing becomes a task.
    const { gateway, config } = await start({ tasks: { thresholdMs: 60_000 } });
    const before = await callTool(gateway.url, "echo", { text: "plain" });
    expect(before.body.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "plain" }] });

    const plan = gateway.reload(config({ tasks: { thresholdMs: 60_000, rules: [{ tool: "echo", mode: "always" }] } }));
    expect(plan).toEqual({ live: ["tasks.rules"], restart: [] });

    const after = await callTool(gateway.url, "echo", { text: "tasked" });
    expect(after.body.result).toMatchObject({ resultType: "task", status: "working" });
    const task = await settledTask(gateway.url, after.body.result?.taskId as string);
    expect(task).toMatchObject({ status: "completed", result: { content: [{ type: "text", text: "tasked" }] } });
  });

  it("an access rule added by a reload hides the tool from the next tools/list and refuses its calls, on both eras", async () => {
    const { upstream, gateway, config } = await start();
    const modern = await connectModernClient(gateway.url);
    cleanups.push(() => modern.close());
    const legacy = await connectSdkClient(gateway.url);
    cleanups.push(() => legacy.close());

    expect((await modern.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name)).toContain(
      "secret_admin",
    );
    expect((await modern.client.callTool({ name: "secret_admin", arguments: {} })).content).toEqual([
      { type: "text", text: "admin done" },
    ]);
    expect(upstream.callsOf("secret_admin")).toHaveLength(1);

    const plan = gateway.reload(config({ access: { rules: [{ tools: "secret_*", effect: "deny" }] } }));
    expect(plan).toEqual({ live: ["access"], restart: [] });

    const modernTools = (await modern.client.listTools(undefined, { cacheMode: "refresh" })).tools.map((t) => t.name);
    expect(modernTools).toEqual(["echo", "hold", "boom", "count"]);
    await expect(modern.client.callTool({ name: "secret_admin", arguments: {} })).rejects.toMatchObject({
      code: -32602,
      data: { reason: "access_denied" },
    });
    // The legacy client's session, opened before the reload, gets the new policy too.
    const legacyTools: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await legacy.client.listTools(cursor === undefined ? {} : { cursor });
      legacyTools.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(legacyTools).toEqual(["echo", "hold", "boom", "count"]);
    await expect(legacy.client.callTool({ name: "secret_wipe", arguments: {} })).rejects.toMatchObject({
      code: -32602,
      data: { reason: "access_denied" },
    });
    // Only the call made before the reload ever reached the upstream.
    expect(upstream.callsOf("secret_admin")).toHaveLength(1);
    expect(upstream.callsOf("secret_wipe")).toHaveLength(0);
  });

  it("a running task keeps going through a reload that changes its rule and the thresholds, and completes", async () => {
    const start1 = {
      tasks: {
        thresholdMs: 60_000,
        pollIntervalMs: 1_000,
        defaultTtlMs: 600_000,
        rules: [{ tool: "hold", mode: "always" as const }],
      },
    };
    const { upstream, gateway, config } = await start(start1);
    const created = await callTool(gateway.url, "hold", { key: "running" });
    expect(created.body.result).toMatchObject({
      resultType: "task",
      status: "working",
      pollIntervalMs: 1_000,
      ttlMs: 600_000,
    });
    const taskId = created.body.result?.taskId as string;
    await upstream.holding("running");

    const plan = gateway.reload(
      config({
        tasks: { thresholdMs: 5, pollIntervalMs: 250, defaultTtlMs: 300_000, rules: [{ tool: "hold", mode: "never" }] },
        access: { rules: [{ tools: "secret_*", effect: "deny" }] },
      }),
    );
    expect(plan.live.sort()).toEqual([
      "access",
      "tasks.defaultTtlMs",
      "tasks.pollIntervalMs",
      "tasks.rules",
      "tasks.thresholdMs",
    ]);
    expect(plan.restart).toEqual([]);
    expect(gateway.config.tasks.thresholdMs).toBe(5);

    // The new rule applies to a new call (plain now), while the old task still waits upstream.
    const plain = callTool(gateway.url, "hold", { key: "after" });
    await upstream.holding("after");
    upstream.release("after");
    expect((await plain).body.result).toMatchObject({
      resultType: "complete",
      content: [{ type: "text", text: "released after" }],
    });

    upstream.release("running");
    const task = await settledTask(gateway.url, taskId);
    // It finished as it started: its TTL and poll interval are the ones it was created with.
    expect(task).toMatchObject({
      status: "completed",
      ttlMs: 600_000,
      pollIntervalMs: 1_000,
      result: { content: [{ type: "text", text: "released running" }] },
    });
    expect(upstream.callsOf("hold")).toHaveLength(2);
  });

  it("settings that need a restart are reported, warned about, and keep their old value", async () => {
    const lines: string[] = [];
    const logger = createLogger("info", (l) => void lines.push(l));
    const { upstream, gateway, config } = await start({ logger, tasks: { thresholdMs: 60_000 } });
    const url = gateway.url;
    const port = gateway.server.address();

    const plan = gateway.reload({
      ...config({ tasks: { thresholdMs: 30_000 } }),
      server: { host: "127.0.0.1", port: 1, path: "/other" },
      upstream: { url: "http://127.0.0.1:9/elsewhere" },
    });
    expect(plan.live).toEqual(["tasks.thresholdMs"]);
    expect(plan.restart.sort()).toEqual(["server.path", "server.port", "upstream.url"]);

    // The live part applied; the rest kept its value and the gateway keeps serving where it was.
    expect(gateway.config.tasks.thresholdMs).toBe(30_000);
    expect(gateway.config.server).toMatchObject({ port: 0, path: "/mcp" });
    expect(gateway.config.upstream?.url).toBe(upstream.url);
    expect(gateway.server.address()).toEqual(port);
    const echo = await callTool(url, "echo", { text: "same place" });
    expect(echo.body.result).toMatchObject({ content: [{ type: "text", text: "same place" }] });
    expect(upstream.callsOf("echo")).toHaveLength(1);

    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const warning = logged.find((l) => l.level === "warn" && typeof l.settings === "string");
    expect(warning?.settings).toEqual(expect.stringContaining("server.port"));
    expect(warning?.settings).toEqual(expect.stringContaining("upstream.url"));
    expect(logged.some((l) => l.msg === "configuration reloaded" && l.applied === "tasks.thresholdMs")).toBe(true);
  });

  it("an invalid config is refused whole: reload throws and the old policy stays", async () => {
    const { gateway, config } = await start({ access: { rules: [{ tools: "secret_*", effect: "deny" }] } });
    const bad = { ...config(), access: { default: "sometimes", rules: [] } } as unknown as GatewayConfigInput;
    expect(() => gateway.reload(bad)).toThrow(ConfigError);
    const denied = await callTool(gateway.url, "secret_admin", {});
    expect(denied.body.error).toMatchObject({ code: -32602, data: { reason: "access_denied" } });
    expect(gateway.config.access.rules).toHaveLength(1);
  });
});
