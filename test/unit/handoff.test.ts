// Drain and handoff (src/tasks/handoff.ts) on an injected clock: real time passing never ends a drain or an
// offer, the clock does; an offer nobody takes is withdrawn and the task stays here; an offer heard from
// another instance is resumed (or, when it cannot be, ended failed by the new owner).
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import type { TaskEvents } from "../../src/store/task-events.js";
import type { TaskLeases } from "../../src/store/task-leases.js";
import { storedTask } from "../../src/store/task-store.js";
import { Handoffs } from "../../src/tasks/handoff.js";
import { taskResultJson, type TaskEvent, type TaskRecord } from "../../src/tasks/task.js";
import type { RunningTask, TaskResumer } from "../../src/tasks/task-runtime.js";
import { fakeRuntime } from "../helpers/fake-runtime.js";
import { taskRecord } from "../helpers/task-record.js";

const T0 = 1_767_225_600_000;
const LIMITS = { maxTasks: 10, maxTasksPerCaller: 10 };
const ME = "replica-me";
const log = createLogger("silent");

/** A drain time and an offer window shorter than `severalPauses`: on Date.now, either would be over by then. */
const SHORT_MS = 100;
/** Several of the real timer's pauses between two looks. */
const severalPauses = (): Promise<void> => sleep(3 * SHORT_MS);

/** Leases where `holder` says who runs every task; the calls the handoff makes are recorded. */
function leasesHeldBy(holder: { id: string | undefined }) {
  const calls: string[] = [];
  const leases = {
    replicaId: ME,
    runner: (taskId: string) => {
      calls.push(`runner ${taskId}`);
      return Promise.resolve(holder.id);
    },
    renew: (ids: readonly string[]) => {
      calls.push(`renew ${ids.join(",")}`);
      return Promise.resolve([]);
    },
    offer: (taskId: string, ticket: string) => {
      calls.push(`offer ${taskId} ${ticket}`);
      return Promise.resolve();
    },
    withdraw: (taskId: string) => {
      calls.push(`withdraw ${taskId}`);
      return Promise.resolve();
    },
    adopt: (taskId: string, from: string) => {
      calls.push(`adopt ${taskId} ${from}`);
      return Promise.resolve(true);
    },
    takeTicket: (taskId: string) => {
      calls.push(`takeTicket ${taskId}`);
      return Promise.resolve(JSON.stringify({ resume: taskId }));
    },
    release: (ids: readonly string[]) => {
      calls.push(`release ${ids.join(",")}`);
      return Promise.resolve();
    },
  } as Partial<TaskLeases> as TaskLeases;
  return { leases, calls };
}

/** Push with `peers` instances listening for offers; the offers announced, and a way to deliver one. */
function eventsWith(peers: number) {
  const announced: string[] = [];
  let hear: ((taskId: string, from: string) => void) | undefined;
  const events = {
    handoffPeers: () => Promise.resolve(peers),
    announceHandoff: (taskId: string, from: string) => void announced.push(`${taskId} from ${from}`),
    onHandoff: (listener: (taskId: string, from: string) => void) => {
      hear = listener;
      return Promise.resolve();
    },
  } as Partial<TaskEvents> as TaskEvents;
  return { events, announced, offer: (taskId: string, from: string) => hear?.(taskId, from) };
}

function setup(opts: { peers?: number; holder?: { id: string | undefined } } = {}) {
  let t = T0;
  const now = (): number => t;
  const store = new MemoryTaskStore(16 * 1024 * 1024, now);
  const running = new Map<string, RunningTask>();
  const applied: Array<[string, TaskEvent]> = [];
  const { leases, calls } = leasesHeldBy(opts.holder ?? { id: ME });
  const { events, announced, offer } = eventsWith(opts.peers ?? 1);
  const handoffs = new Handoffs({
    store,
    leases,
    events,
    running,
    apply: (taskId, event) => {
      applied.push([taskId, event]);
      return Promise.resolve(undefined);
    },
    now,
    log,
  });
  return { handoffs, store, running, applied, calls, announced, offer, advance: (ms: number) => void (t += ms) };
}

/** A runtime whose call can be resumed elsewhere: detach() hands out `ticket`. */
function detachable(ticket: unknown) {
  const runtime = fakeRuntime();
  let detached = 0;
  return {
    runtime: {
      ...runtime,
      detach: () => {
        detached += 1;
        return ticket;
      },
    },
    cancels: runtime.cancels,
    detached: () => detached,
  };
}

const working = (id: string): TaskRecord => taskRecord(id, T0);

/** Whether `promise` has settled by now (after the pending callbacks ran). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await sleep(0);
  return done;
}

describe("Handoffs.drain", () => {
  it("stops taking tasks, and waits for the running ones until the injected clock passes the drain time", async () => {
    const s = setup();
    s.running.set("t1", { record: working("t1"), runtime: fakeRuntime(), about: undefined });
    const drained = s.handoffs.drain(SHORT_MS);
    expect(s.handoffs.acceptsTasks).toBe(false);
    await severalPauses();
    expect(await settled(drained)).toBe(false);
    s.advance(SHORT_MS);
    expect(await drained).toEqual(["t1"]);
  });

  it("resolves with nothing once the running tasks are gone, whatever the clock says", async () => {
    const s = setup();
    s.running.set("t1", { record: working("t1"), runtime: fakeRuntime(), about: undefined });
    const drained = s.handoffs.drain(5_000);
    s.running.delete("t1");
    expect(await drained).toEqual([]);
  });
});

describe("Handoffs.handOff", () => {
  it("offers the detached call, keeps its lease while it waits, and withdraws the offer at the injected clock's end of the window", async () => {
    const s = setup();
    const rt = detachable({ session: "s1" });
    const run: RunningTask = { record: working("t1"), runtime: rt.runtime, about: undefined };
    s.running.set("t1", run);
    const handed = s.handoffs.handOff("t1", SHORT_MS);
    await severalPauses();
    expect(await settled(handed)).toBe(false);
    // Out of the running tasks while offered: the call's late events are not this instance's to apply.
    expect(s.running.has("t1")).toBe(false);
    expect(s.calls).toContain(`offer t1 {"session":"s1"}`);
    expect(s.calls).toContain("renew t1");
    expect(s.announced).toEqual([`t1 from ${ME}`]);
    s.advance(SHORT_MS);
    expect(await handed).toBe(false);
    expect(s.calls).toContain("withdraw t1");
    // Nobody took it: it is this instance's again, to end.
    expect(s.running.get("t1")).toBe(run);
    expect(rt.cancels).toEqual([]);
  });

  it("is done once another instance holds the lease", async () => {
    const holder = { id: ME as string | undefined };
    const s = setup({ holder });
    const rt = detachable({ session: "s1" });
    s.running.set("t1", { record: working("t1"), runtime: rt.runtime, about: undefined });
    const handed = s.handoffs.handOff("t1", 60_000);
    await severalPauses();
    holder.id = "replica-other";
    expect(await handed).toBe(true);
    expect(s.running.has("t1")).toBe(false);
    expect(s.calls).not.toContain("withdraw t1");
  });

  it("leaves the call alone when nobody listens for offers, or the call cannot be resumed", async () => {
    const alone = setup({ peers: 0 });
    const rt = detachable({ session: "s1" });
    alone.running.set("t1", { record: working("t1"), runtime: rt.runtime, about: undefined });
    expect(await alone.handoffs.handOff("t1", 1_000)).toBe(false);
    expect(rt.detached()).toBe(0);
    expect(alone.running.has("t1")).toBe(true);

    const s = setup();
    s.running.set("t2", { record: working("t2"), runtime: fakeRuntime(), about: undefined });
    expect(await s.handoffs.handOff("t2", 1_000)).toBe(false);
    const unresumable = detachable(undefined);
    s.running.set("t3", { record: working("t3"), runtime: unresumable.runtime, about: undefined });
    expect(await s.handoffs.handOff("t3", 1_000)).toBe(false);
    expect(s.running.has("t2") && s.running.has("t3")).toBe(true);
    expect(s.calls.filter((c) => c.startsWith("offer"))).toEqual([]);
  });
});

describe("Handoffs.accept", () => {
  it("resumes a task another instance offers, and ignores its own offers and any offer once draining", async () => {
    const s = setup();
    const record = working("t1");
    await s.store.create(storedTask(record, taskResultJson(record)), LIMITS);
    const started: string[] = [];
    const tickets: unknown[] = [];
    const resume: TaskResumer = (taskId, ticket) => {
      tickets.push(ticket);
      return Promise.resolve({ runtime: fakeRuntime(), start: () => void started.push(taskId) });
    };
    await s.handoffs.accept(resume);
    s.offer("t1", ME);
    await sleep(0);
    expect(s.calls).toEqual([]);
    s.offer("t1", "replica-other");
    await sleep(5);
    expect(started).toEqual(["t1"]);
    expect(tickets).toEqual([{ resume: "t1" }]);
    expect(s.running.get("t1")?.record.taskId).toBe("t1");
    expect(s.applied).toEqual([]);

    await s.handoffs.drain(0);
    s.calls.length = 0;
    s.offer("t2", "replica-other");
    await sleep(0);
    expect(s.calls).toEqual([]);
  });

  it("ends failed a task it took over but could not resume", async () => {
    const s = setup();
    const record = working("t1");
    await s.store.create(storedTask(record, taskResultJson(record)), LIMITS);
    await s.handoffs.accept(() => Promise.reject(new Error("the upstream session is gone")));
    s.offer("t1", "replica-other");
    await sleep(5);
    expect(s.applied).toHaveLength(1);
    expect(s.applied[0]?.[0]).toBe("t1");
    expect(s.applied[0]?.[1]).toMatchObject({ type: "fail", error: { data: { reason: "runner_lost" } } });
    expect(s.running.has("t1")).toBe(true);
  });
});
