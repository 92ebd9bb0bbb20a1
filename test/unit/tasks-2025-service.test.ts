// LegacyTasks (2025-11-25 tasks) against a scripted engine: the races and store
// failures a real engine shows only rarely.
import { describe, expect, it } from "vitest";
import { LegacyTasks } from "../../src/tasks-2025/service.js";
import type { TaskEngine } from "../../src/tasks/engine.js";
import type { UpstreamClient } from "../../src/upstream/client.js";
import { createLogger } from "../../src/log/logger.js";
import { testCaller } from "../helpers/caller.js";

const T = "task-1";

function detailed(status: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    taskId: T,
    status,
    createdAt: "2025-11-25T10:30:00Z",
    lastUpdatedAt: "2025-11-25T10:30:00Z",
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    ...extra,
  });
}

const who = testCaller({ caller: "caller-a" });

function service(engine: Partial<TaskEngine>) {
  const tracked = new Set<() => void>();
  const tasks = new LegacyTasks({
    engine: engine as TaskEngine,
    upstream: { name: "default" } as UpstreamClient,
    controlTimeoutMs: 1_000,
    keepAliveMs: 0,
    now: () => Date.now(),
    log: createLogger("silent"),
    track: (stop) => {
      tracked.add(stop);
      return () => tracked.delete(stop);
    },
  });
  return { tasks, tracked };
}

describe("LegacyTasks tasks/result", () => {
  it("a task that ends while the watch is being set up is answered, and holds no shutdown registration", async () => {
    let unwatched = 0;
    const { tasks, tracked } = service({
      get: async () => ({ status: "working", json: detailed("working") }) as never,
      watch: async (_id, listener) => {
        // The change arrives before the watch resolves.
        listener(detailed("completed", { result: { content: [{ type: "text", text: "done" }] } }));
        return () => {
          unwatched += 1;
        };
      },
    });
    const res = await tasks.serve("tasks/result", 1, { taskId: T }, who, undefined);
    const body = (await res?.json()) as { result: { content: unknown[]; _meta: Record<string, unknown> } };
    expect(body.result.content).toEqual([{ type: "text", text: "done" }]);
    expect(body.result._meta["io.modelcontextprotocol/related-task"]).toEqual({ taskId: T });
    expect(unwatched).toBe(1);
    expect(tracked.size).toBe(0);
  });

  it("a store that fails after the watch is set up ends the wait: unwatched, released, answered", async () => {
    let gets = 0;
    let unwatched = 0;
    const { tasks, tracked } = service({
      get: async () => {
        gets += 1;
        if (gets > 1) throw new Error("store down");
        return { status: "working", json: detailed("working") } as never;
      },
      watch: async () => () => {
        unwatched += 1;
      },
    });
    const res = await tasks.serve("tasks/result", 2, { taskId: T }, who, undefined);
    const body = (await res?.json()) as { error: { code: number } };
    expect(body.error.code).toBeLessThan(0);
    expect(unwatched).toBe(1);
    expect(tracked.size).toBe(0);
  });
});

describe("LegacyTasks tasks/cancel", () => {
  it("a task that completes between the check and the cancel is refused as terminal (-32602)", async () => {
    let gets = 0;
    const { tasks } = service({
      get: async () => {
        gets += 1;
        return (
          gets === 1
            ? { status: "working", json: detailed("working") }
            : { status: "completed", json: detailed("completed", { result: { content: [] } }) }
        ) as never;
      },
      cancel: async () => ({ kind: "done" }),
    });
    const res = await tasks.serve("tasks/cancel", 3, { taskId: T }, who, undefined);
    const body = (await res?.json()) as { error?: { code: number; message: string }; result?: unknown };
    expect(body.result).toBeUndefined();
    expect(body.error?.code).toBe(-32602);
    expect(body.error?.message).toContain("completed");
  });
});
