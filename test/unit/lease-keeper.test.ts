// The lease keeper (src/tasks/lease-keeper.ts): a renewal stops the calls of the tasks whose lease this replica
// no longer holds and logs only those that ran here; a store that fails is logged, never thrown; a sweep ends
// the lapsed tasks it finds and counts those it ended itself.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import type { TaskLeases } from "../../src/store/task-leases.js";
import { storedTask, type StoredTask } from "../../src/store/task-store.js";
import { LeaseKeeper } from "../../src/tasks/lease-keeper.js";
import { taskResultJson } from "../../src/tasks/task.js";
import type { RunningTask } from "../../src/tasks/task-runtime.js";
import { fakeRuntime } from "../helpers/fake-runtime.js";
import { taskRecord } from "../helpers/task-record.js";

const T0 = 1_767_225_600_000;

function logged() {
  const lines: Array<{ msg: string; cause?: string }> = [];
  const log = createLogger("warn", (line) => void lines.push(JSON.parse(line) as { msg: string; cause?: string }));
  return { log, lines };
}

function running(...ids: string[]): Map<string, RunningTask> {
  return new Map(ids.map((id) => [id, { record: taskRecord(id, T0), runtime: fakeRuntime(), about: undefined }]));
}

function stored(id: string, status: "failed" | "completed" | "working"): StoredTask {
  const record = taskRecord(id, T0, { status });
  return storedTask(record, taskResultJson(record));
}

describe("LeaseKeeper.renew", () => {
  it("renews every running task's lease and stops the calls of those it lost", async () => {
    const { log, lines } = logged();
    const renewed: string[][] = [];
    const leases = {
      renew: (ids: readonly string[]) => {
        renewed.push([...ids]);
        return Promise.resolve(["t2", "gone-meanwhile"]);
      },
    } as Partial<TaskLeases> as TaskLeases;
    const lost: string[] = [];
    const keeper = new LeaseKeeper({
      leases,
      running: running("t1", "t2"),
      lost: (id) => (lost.push(id), id === "t2"),
      endLapsed: () => Promise.resolve(undefined),
      log,
    });
    await keeper.renew();
    expect(renewed).toEqual([["t1", "t2"]]);
    expect(lost).toEqual(["t2", "gone-meanwhile"]);
    // One warning: only t2's call ran here.
    expect(lines.map((l) => l.msg)).toEqual(["lost the lease on a running task; its upstream call is cancelled"]);
  });

  it("asks nothing of the store with no task running, and logs a store that fails", async () => {
    const { log, lines } = logged();
    let asked = 0;
    const leases = {
      renew: () => {
        asked += 1;
        return Promise.reject(new Error("connection lost"));
      },
    } as Partial<TaskLeases> as TaskLeases;
    const tasks = running();
    const keeper = new LeaseKeeper({
      leases,
      running: tasks,
      lost: () => true,
      endLapsed: () => Promise.resolve(undefined),
      log,
    });
    await keeper.renew();
    expect(asked).toBe(0);
    tasks.set("t1", { record: taskRecord("t1", T0), runtime: fakeRuntime(), about: undefined });
    await keeper.renew();
    expect(asked).toBe(1);
    expect(lines).toMatchObject([{ msg: "could not renew task leases", cause: "connection lost" }]);
  });
});

describe("LeaseKeeper.sweep", () => {
  it("ends each lapsed task and counts the ones now failed", async () => {
    const { log } = logged();
    let limit: number | undefined;
    const leases = {
      lapsed: (n: number) => {
        limit = n;
        return Promise.resolve(["a", "b", "c"]);
      },
    } as Partial<TaskLeases> as TaskLeases;
    const after: Record<string, StoredTask | undefined> = {
      a: stored("a", "failed"),
      b: stored("b", "completed"),
      c: undefined,
    };
    const ended: string[] = [];
    const keeper = new LeaseKeeper({
      leases,
      running: running(),
      lost: () => false,
      endLapsed: (id) => (ended.push(id), Promise.resolve(after[id])),
      log,
    });
    expect(await keeper.sweep()).toBe(1);
    expect(ended).toEqual(["a", "b", "c"]);
    expect(limit).toBeGreaterThan(0);
  });

  it("logs a store that fails and reports what it ended before", async () => {
    const { log, lines } = logged();
    const leases = { lapsed: () => Promise.resolve(["a", "b"]) } as Partial<TaskLeases> as TaskLeases;
    const keeper = new LeaseKeeper({
      leases,
      running: running(),
      lost: () => false,
      endLapsed: (id) => (id === "a" ? Promise.resolve(stored("a", "failed")) : Promise.reject(new Error("timeout"))),
      log,
    });
    expect(await keeper.sweep()).toBe(1);
    expect(lines).toMatchObject([{ msg: "task sweep failed", cause: "timeout" }]);
  });
});
