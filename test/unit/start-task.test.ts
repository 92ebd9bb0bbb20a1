// startTask (src/calls/task-sinks.ts): an `always`/`required` call's task is
// created before the call goes upstream, and a refusal becomes the right answer.
import { describe, expect, it } from "vitest";
import { startTask, TaskSink } from "../../src/calls/task-sinks.js";
import { ClientLeg } from "../../src/calls/client-leg.js";
import type { CreateOutcome, TaskEngine } from "../../src/tasks/engine.js";
import type { TaskRecord } from "../../src/tasks/task.js";

const engine = {} as TaskEngine;
const leg = (): ClientLeg => new ClientLeg(1, undefined, new AbortController().signal, 0);
const TASK: TaskRecord = {
  taskId: "AAAAAAAAAAAAAAAAAAAAAA",
  owner: "alice",
  status: "working",
  createdAt: "2026-01-01T00:00:00.000Z",
  lastUpdatedAt: "2026-01-01T00:00:00.000Z",
  ttlMs: 60_000,
  pollIntervalMs: 500,
  inputRequests: {},
};

describe("startTask", () => {
  it("answers the CreateTaskResult and hands back the task's sink", async () => {
    const l = leg();
    const started = await startTask(l, {}, engine, () => Promise.resolve<CreateOutcome>({ ok: true, task: TASK }));
    expect("sink" in started && started.sink).toBeInstanceOf(TaskSink);
    const body = (await (await l.response).json()) as { result: Record<string, unknown> };
    expect(body.result).toMatchObject({ resultType: "task", taskId: TASK.taskId, status: "working" });
  });

  it("a limit is task_limit (-32603), a draining instance is gateway_shutting_down (503), a failing store is store_unavailable (503)", async () => {
    const cases: Array<[() => Promise<CreateOutcome>, number, string]> = [
      [
        () => Promise.resolve({ ok: false, reason: "this caller has 1 unfinished tasks (tasks.maxTasksPerCaller)" }),
        200,
        "task_limit",
      ],
      [
        () => Promise.resolve({ ok: false, reason: "this gateway instance is shutting down", draining: true }),
        503,
        "gateway_shutting_down",
      ],
      [() => Promise.reject(new Error("ECONNREFUSED 10.0.0.1:6379")), 503, "store_unavailable"],
    ];
    for (const [create, status, reason] of cases) {
      const started = await startTask(leg(), {}, engine, create);
      if (!("fault" in started)) throw new Error("expected a fault");
      expect(started.fault.status).toBe(status);
      expect(started.fault.error).toMatchObject({ code: -32603, data: { reason } });
      expect(JSON.stringify(started.fault)).not.toContain("10.0.0.1");
    }
  });
});
