// Adaptive promotion end to end (issue 15): a real gateway, on an injected clock,
// in front of a real SDK 2.x upstream whose `gate` tool answers only when the test
// releases it, reached as a modern upstream (task-front.ts) and as a legacy one
// (the same server's stateless 2025 surface, through the era bridge). After the
// warm-up, a declaring client's call of the slow tool gets its task handle while
// the upstream still holds the call (one round trip, not the threshold, which is
// set to a minute so it can never be what answered); a tool that is fast is never
// a task; a tool that speeds up is plain again after a few calls; stats() shows it.
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import * as z from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import type { TestGateway } from "../helpers/gateway.js";
import { serveMcpHandler, isRecord, parseJsonOrSse } from "../helpers/http.js";
import { modernHeaders, modernMeta } from "../helpers/modern-http.js";

type Json = Record<string, unknown>;

const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING = { extensions: { [TASKS]: {} } };
const T0 = 1_767_225_600_000;
/** The threshold: no test call ever runs this long in real time, so a task handle can only come from the history. */
const THRESHOLD_MS = 60_000;
/** How long a slow call takes on the injected clock: past the threshold. */
const SLOW_MS = 120_000;

/** Calls of `gate` that reached the upstream, each waiting for its release. */
class Gate {
  private readonly waiting: Array<() => void> = [];
  private readonly arrivals: Array<(release: () => void) => void> = [];

  hold(): Promise<void> {
    return new Promise<void>((release) => {
      const taker = this.arrivals.shift();
      if (taker) taker(release);
      else this.waiting.push(release);
    });
  }

  /** The next call to reach the upstream; resolves with its release. */
  arrival(): Promise<() => void> {
    const ready = this.waiting.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.arrivals.push(resolve));
  }
}

async function startGatedUpstream(gate: Gate): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: "gated-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.registerTool(
        "gate",
        { description: "Answers when the test releases it.", inputSchema: z.object({}) },
        async () => {
          await gate.hold();
          return { content: [{ type: "text", text: "released" }] };
        },
      );
      server.registerTool("quick", { description: "Answers at once.", inputSchema: z.object({}) }, () => ({
        content: [{ type: "text", text: "quick" }],
      }));
      return server;
    },
    { legacy: "stateless" },
  );
  return serveMcpHandler(handler);
}

for (const era of ["modern", "legacy"] as const) {
  describe(`adaptive promotion in front of a ${era} upstream`, () => {
    const gate = new Gate();
    const clock = { t: T0 };
    let upstream: Awaited<ReturnType<typeof startGatedUpstream>>;
    let gw: TestGateway;
    let nextId = 1;

    beforeAll(async () => {
      upstream = await startGatedUpstream(gate);
      gw = await startGateway(
        {
          upstream: { url: upstream.url, era },
          server: { host: "127.0.0.1", port: 0 },
          log: { level: "silent" },
          tasks: {
            thresholdMs: THRESHOLD_MS,
            maxPollIntervalMs: 60_000,
            // One unfinished task per caller: the last test runs into it.
            maxTasksPerCaller: 1,
            rules: [
              { tool: "gate", mode: "auto" },
              { tool: "quick", mode: "auto" },
            ],
          },
        },
        { now: () => clock.t },
      );
    });

    afterAll(async () => {
      await gw?.close(0);
      await upstream?.close();
    });

    async function rpc(method: string, params: Json, name?: string): Promise<Json> {
      const res = await fetch(gw.url, {
        method: "POST",
        headers: modernHeaders(method, name),
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: nextId++,
          method,
          params: { ...params, _meta: modernMeta({ capabilities: DECLARING }) },
        }),
      });
      const message = parseJsonOrSse(await res.text());
      if (!isRecord(message) || !isRecord(message.result)) throw new Error(`no result: ${JSON.stringify(message)}`);
      return message.result;
    }

    const callTool = (name: string): Promise<Json> => rpc("tools/call", { name, arguments: {} }, name);

    async function completed(taskId: string): Promise<Json> {
      for (;;) {
        const task = await rpc("tasks/get", { taskId }, taskId);
        if (task.status !== "working") return task;
        await new Promise((r) => setImmediate(r));
      }
    }

    /** One call of `gate` that takes `ms` on the injected clock; returns what the client got first. */
    async function gated(ms: number): Promise<Json> {
      const reply = callTool("gate");
      const release = await gate.arrival();
      clock.t += ms;
      release();
      const first = await reply;
      if (first.resultType === "task") expect((await completed(String(first.taskId))).status).toBe("completed");
      return first;
    }

    it("a slow tool waits the threshold during the warm-up, then gets its task handle before the upstream answers", async () => {
      // The warm-up: every call runs to its answer as a plain call (the threshold is far away).
      for (let i = 0; i < 5; i++) expect((await gated(SLOW_MS)).resultType).not.toBe("task");
      // Known to be slow: the handle comes back while the upstream still holds the call.
      const handle = await callTool("gate");
      expect(handle).toMatchObject({ resultType: "task", status: "working" });
      // The poll hint follows the expected remaining time: 120 s / 10 (within a bucket's ±19 %), not the configured 1 s.
      expect(handle.pollIntervalMs).toBeGreaterThan(9_500);
      expect(handle.pollIntervalMs).toBeLessThan(14_500);
      const release = await gate.arrival();
      clock.t += SLOW_MS;
      release();
      const done = await completed(String(handle.taskId));
      expect(done).toMatchObject({ status: "completed", result: { content: [{ type: "text", text: "released" }] } });
      const stats = await gw.stats();
      expect(stats.adaptive.decisions).toMatchObject({ atOnce: 1, atThreshold: 0 });
      expect(stats.adaptive.tools.gate).toMatchObject({
        samples: 6,
        atOnce: true,
        slowShare: 1,
        thresholdMs: THRESHOLD_MS,
      });
      expect(stats.adaptive.tools.gate?.p50Ms).toBeGreaterThan(SLOW_MS / 1.5);
    });

    it("a fast tool is never a task", async () => {
      for (let i = 0; i < 12; i++) expect((await callTool("quick")).resultType).not.toBe("task");
      const stats = await gw.stats();
      expect(stats.adaptive.tools.quick).toMatchObject({ samples: 12, atOnce: false, slowShare: 0 });
    });

    it("a slow tool that becomes fast is a plain call again after a few fast calls", async () => {
      let tasks = 0;
      while ((await gated(0)).resultType === "task") tasks++;
      expect(tasks).toBeGreaterThanOrEqual(1);
      expect(tasks).toBeLessThanOrEqual(4);
      const stats = await gw.stats();
      expect(stats.adaptive.tools.gate).toMatchObject({ atOnce: false });
      expect(stats.adaptive.decisions.atOnce).toBe(1 + tasks);
      expect(stats.adaptive.decisions.plain).toBe(5 + 12 + 1);
    });

    it("promoted at once but refused by the limits: the call goes on as a plain call, as auto does", async () => {
      // Slow again: a few calls wait, then the tool is promoted at once again.
      let waited = 0;
      while ((await gated(SLOW_MS)).resultType !== "task") waited++;
      expect(waited).toBeLessThanOrEqual(8);
      const held = await callTool("gate");
      expect(held.resultType).toBe("task");
      const releaseHeld = await gate.arrival();
      // The caller's one task is taken: this call is refused a task, and still reaches the upstream.
      const refused = callTool("gate");
      const releaseRefused = await gate.arrival();
      releaseRefused();
      expect(await refused).toMatchObject({ content: [{ type: "text", text: "released" }] });
      releaseHeld();
      expect((await completed(String(held.taskId))).status).toBe("completed");
    });
  });
}
