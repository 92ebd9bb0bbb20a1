// Adaptive promotion un-learns (issue 26): a real gateway with `auto`, a 200 ms
// threshold and an injected clock, in front of a real legacy SDK upstream whose
// `work` tool takes as long as the test says (on the injected clock: the handler
// moves it on before answering; its real delay is a few ms). The clients never
// poll, so nothing but the upstream's answer can give the history its samples:
//   - a modern declaring client (2026-07-28, raw HTTP, through the era bridge);
//   - an SDK 1.x client declaring capabilities.tasks (the 2025-11-25 task path).
// Either way: a slow tool becomes a task at once; turned fast, it is plain again
// within 10 calls (and its next immediate task, before that, hints a short poll);
// slow again, it is learnt again.
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { serveMcpHandler, isRecord, parseJsonOrSse } from "../helpers/http.js";
import { pollUntil } from "../helpers/poll.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";
import { parseExposition, value } from "../helpers/prometheus.js";

const DECLARING = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const T0 = 1_767_225_600_000;
const THRESHOLD_MS = 200;
/** Slow: ten times the threshold, on the injected clock. */
const SLOW_MS = 2_000;
const FAST_MS = 20;

/** The upstream: a legacy (stateless 2025) SDK server whose `work` moves the injected clock on by `delay.ms`. */
async function startUpstream(
  clock: { t: number },
  delay: { ms: number },
): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: "timed-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.registerTool("work", { description: "Takes delay.ms.", inputSchema: z.object({}) }, async () => {
        // A little real time too (bounded), so the answer really comes after the handle.
        await new Promise((r) => setTimeout(r, 5));
        clock.t += delay.ms;
        return { content: [{ type: "text", text: `took ${delay.ms}` }] };
      });
      return server;
    },
    { legacy: "stateless" },
  );
  return serveMcpHandler(handler);
}

/** What the client got for one call: a task handle (with its poll hint) or a plain result. */
type Reply = { task: true; pollIntervalMs: number } | { task: false };

interface Harness {
  call(): Promise<Reply>;
  close(): Promise<void>;
}

const clients = {
  /** 2026-07-28, declaring the Tasks extension, raw HTTP; never polls. */
  modern: (url: string, tool = "work"): Promise<Harness> => {
    let id = 1;
    return Promise.resolve({
      call: async () => {
        const res = await fetch(url, {
          method: "POST",
          headers: modernHeaders("tools/call", tool),
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: id++,
            method: "tools/call",
            params: { name: tool, arguments: {}, _meta: modernMeta({ capabilities: DECLARING }) },
          }),
        });
        const message = parseJsonOrSse(await res.text());
        if (!isRecord(message) || !isRecord(message.result)) throw new Error(`no result: ${JSON.stringify(message)}`);
        const r = message.result;
        return r.resultType === "task" ? { task: true, pollIntervalMs: Number(r.pollIntervalMs) } : { task: false };
      },
      close: () => Promise.resolve(),
    });
  },
  /** SDK 1.x, declaring capabilities.tasks; sends params.task (the gateway decides); never polls. */
  "2025-11-25": async (url: string): Promise<Harness> => {
    const client = new Client(
      { name: "adaptive-unlearn", version: "1.0.0" },
      { capabilities: { tasks: { list: {}, cancel: {} } } },
    );
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    return {
      call: async () => {
        const reply = await client.request(
          { method: "tools/call", params: { name: "work", arguments: {}, task: { ttl: 60_000 } } },
          CreateTaskResultSchema.or(CallToolResultSchema),
        );
        if (!("task" in reply)) return { task: false };
        const created = CreateTaskResultSchema.parse(reply);
        return { task: true, pollIntervalMs: created.task.pollInterval ?? 0 };
      },
      close: async () => {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      },
    };
  },
};

// "federated": a modern client on a federated endpoint over the upstream (named u), calling u__work; the
// history keys the tool u/work, under u's policy.
for (const era of ["modern", "2025-11-25", "federated"] as const) {
  describe(`adaptive promotion learns and un-learns a tool, ${era} client that never polls`, () => {
    const federated = era === "federated";
    const key = federated ? "u/work" : "work";
    const upstreamName = federated ? "u" : "default";
    const clock = { t: T0 };
    const delay = { ms: SLOW_MS };
    let upstream: Awaited<ReturnType<typeof startUpstream>>;
    let gw: TestGateway;
    let client: Harness;

    beforeAll(async () => {
      upstream = await startUpstream(clock, delay);
      gw = await startGateway(
        {
          ...(federated
            ? {
                upstreams: { u: { url: upstream.url, era: "legacy" as const } },
                federated: { f: { upstreams: ["u"] } },
              }
            : { upstream: { url: upstream.url, era: "legacy" as const } }),
          server: { host: "127.0.0.1", port: 0 },
          log: { level: "silent" },
          tasks: {
            thresholdMs: THRESHOLD_MS,
            pollIntervalMs: 1_000,
            minPollIntervalMs: 10,
            maxPollIntervalMs: 60_000,
            rules: [{ tool: "work", mode: "auto" }],
          },
          metrics: { toolLabels: ["work"] },
        },
        { now: () => clock.t },
      );
      client = federated ? await clients.modern(`${gw.url}/f`, "u__work") : await clients[era](gw.url);
    });

    afterAll(async () => {
      await client?.close();
      await gw?.close(0);
      await upstream?.close();
    });

    const samples = async (): Promise<number> => (await gw.stats()).adaptive.tools[key]?.samples ?? 0;
    /** Waits until the call's upstream answer reached the gateway (a task nobody polls answers in the background). */
    const settle = (before: number): Promise<unknown> => pollUntil(samples, (n) => n > before, 10_000);

    /**
     * Whether the gateway now makes the tool a task at once. A modern client: what its call got (a handle
     * before the 200 ms threshold, in real time, can only come from the history). A 2025-11-25 client asks
     * for a task itself (params.task) and gets one whatever the history says, so what the gateway learnt
     * from its calls shows in the tool's state (the same one a modern client's next call would follow).
     */
    async function immediate(): Promise<{ atOnce: boolean; pollIntervalMs?: number }> {
      const before = await samples();
      const reply = await client.call();
      await settle(before);
      if (era !== "2025-11-25")
        return reply.task ? { atOnce: true, pollIntervalMs: reply.pollIntervalMs } : { atOnce: false };
      if (!reply.task) throw new Error("a 2025-11-25 task-augmented call got no task");
      const state = (await gw.stats()).adaptive.tools[key]?.state;
      return state === "immediate" ? { atOnce: true, pollIntervalMs: reply.pollIntervalMs } : { atOnce: false };
    }

    /** Calls until the tool is (or is not) immediate, at most `max` calls. */
    async function until(atOnce: boolean, max: number): Promise<void> {
      for (let calls = 1; calls <= max; calls++) if ((await immediate()).atOnce === atOnce) return;
      throw new Error(`not ${atOnce ? "immediate" : "plain"} after ${max} calls`);
    }

    it("a slow tool becomes a task at once", async () => {
      delay.ms = SLOW_MS;
      await until(true, 10);
      expect((await gw.stats()).adaptive.tools[key]).toMatchObject({ state: "immediate", atOnce: true });
      // The operator sees the same: the status page's data and the metric (a tool metrics.toolLabels names).
      const status = (await (await fetch(`${gw.metricsOrigin}/status.json`)).json()) as { adaptive?: unknown[] };
      expect(status.adaptive).toContainEqual(
        expect.objectContaining({ tool: "work", upstream: upstreamName, state: "immediate" }),
      );
      const scraped = parseExposition(await (await fetch(`${gw.metricsOrigin}/metrics`)).text());
      expect(
        value(scraped, "mcp_gateway_adaptive_tool_state", { tool: "work", upstream: upstreamName, state: "immediate" }),
      ).toBe(1);
    });

    it("the same tool turned fast is plain again within 10 calls, and its immediate tasks meanwhile hint a short poll", async () => {
      delay.ms = FAST_MS;
      const hints: number[] = [];
      for (let calls = 1; ; calls++) {
        expect(calls).toBeLessThanOrEqual(10);
        const now = await immediate();
        if (!now.atOnce) break;
        if (now.pollIntervalMs !== undefined) hints.push(now.pollIntervalMs);
      }
      // The slow hint was ~SLOW_MS / 10; once a fast answer is in, the next immediate task polls fast.
      for (const hint of hints.slice(1)) expect(hint).toBeLessThan(SLOW_MS / 20);
      const est = (await gw.stats()).adaptive.tools[key];
      expect(est).toMatchObject({ state: "plain", atOnce: false });
      expect(est?.p50Ms).toBeLessThan(THRESHOLD_MS);
    });

    it("slow again, it is learnt again", async () => {
      delay.ms = SLOW_MS;
      await until(true, 10);
      expect((await gw.stats()).adaptive.tools[key]).toMatchObject({ state: "immediate", atOnce: true });
    });
  });
}
