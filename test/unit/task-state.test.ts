// The task state machine (src/tasks/task.ts): working ⇄ input_required →
// completed | failed | cancelled, terminal states never change, every change
// stamps lastUpdatedAt, and the wire DetailedTask inlines exactly the fields of
// its status.
import { describe, expect, it } from "vitest";
import type { DetailedTask } from "../../src/protocol/tasks-extension.js";
import {
  detailedTask,
  progressMessage,
  TERMINAL,
  transition,
  type TaskEvent,
  type TaskRecord,
  type TaskStatus,
} from "../../src/tasks/task.js";

const T0 = new Date("2026-01-02T03:04:05.000Z");
const at = (ms: number): Date => new Date(T0.getTime() + ms);

const ELICIT = {
  method: "elicitation/create",
  params: {
    mode: "form",
    message: "What is your name?",
    requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
};
const SAMPLE = { method: "sampling/createMessage", params: { messages: [], maxTokens: 10 } };

function fresh(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: "task-1",
    owner: "owner-a",
    status: "working",
    createdAt: T0.toISOString(),
    lastUpdatedAt: T0.toISOString(),
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    inputRequests: {},
    ...overrides,
  };
}

/** Applies events in order, each one millisecond after the previous. */
function run(task: TaskRecord, events: readonly TaskEvent[]): TaskRecord {
  return events.reduce((t, e, i) => transition(t, e, at(i + 1)), task);
}

const TERMINAL_EVENTS: ReadonlyArray<[TaskStatus, TaskEvent]> = [
  ["completed", { type: "complete", result: { content: [{ type: "text", text: "ok" }] } }],
  ["failed", { type: "fail", error: { code: -32603, message: "boom" }, message: "The call failed: boom" }],
  ["cancelled", { type: "cancel", message: "Cancelled by the client" }],
];

const EVERY_EVENT: readonly TaskEvent[] = [
  { type: "progress", message: "progress 1/2" },
  { type: "input", key: "input-9", request: ELICIT },
  { type: "answered", keys: ["input-1"] },
  ...TERMINAL_EVENTS.map(([, e]) => e),
];

describe("transition: working ⇄ input_required", () => {
  it("an input request moves working to input_required, keyed, and stamps lastUpdatedAt", () => {
    const t = transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(10));
    expect(t.status).toBe("input_required");
    expect(t.inputRequests).toEqual({ "input-1": ELICIT });
    expect(t.lastUpdatedAt).toBe(at(10).toISOString());
    expect(t.createdAt).toBe(T0.toISOString());
    expect(typeof t.statusMessage).toBe("string");
  });

  it("answering every outstanding key returns to working and clears inputRequests", () => {
    const waiting = transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(1));
    const t = transition(waiting, { type: "answered", keys: ["input-1"] }, at(2));
    expect(t.status).toBe("working");
    expect(t.inputRequests).toEqual({});
    expect(t.lastUpdatedAt).toBe(at(2).toISOString());
  });

  it("a partial answer keeps input_required with only the unanswered keys", () => {
    const waiting = run(fresh(), [
      { type: "input", key: "input-1", request: ELICIT },
      { type: "input", key: "input-2", request: SAMPLE },
    ]);
    expect(Object.keys(waiting.inputRequests)).toEqual(["input-1", "input-2"]);
    const t = transition(waiting, { type: "answered", keys: ["input-1"] }, at(5));
    expect(t.status).toBe("input_required");
    expect(t.inputRequests).toEqual({ "input-2": SAMPLE });
    expect(t.lastUpdatedAt).toBe(at(5).toISOString());
    const done = transition(t, { type: "answered", keys: ["input-2"] }, at(6));
    expect(done.status).toBe("working");
    expect(done.inputRequests).toEqual({});
  });

  it("unknown and already answered keys are ignored: nothing changes, not even lastUpdatedAt", () => {
    const waiting = run(fresh(), [
      { type: "input", key: "input-1", request: ELICIT },
      { type: "input", key: "input-2", request: SAMPLE },
      { type: "answered", keys: ["input-1"] },
    ]);
    expect(transition(waiting, { type: "answered", keys: ["nope"] }, at(100))).toBe(waiting);
    expect(transition(waiting, { type: "answered", keys: ["input-1"] }, at(100))).toBe(waiting);
    expect(transition(waiting, { type: "answered", keys: [] }, at(100))).toBe(waiting);
    // Known keys mixed with unknown ones: only the known ones count.
    const t = transition(waiting, { type: "answered", keys: ["nope", "input-2", "input-1"] }, at(100));
    expect(t.status).toBe("working");
    expect(t.inputRequests).toEqual({});
  });

  it("an answer while working (no outstanding input) changes nothing", () => {
    const t = fresh();
    expect(transition(t, { type: "answered", keys: ["input-1"] }, at(1))).toBe(t);
  });

  it("a second input request while input_required adds its key beside the first", () => {
    const t = run(fresh(), [
      { type: "input", key: "input-1", request: ELICIT },
      { type: "input", key: "input-2", request: SAMPLE },
    ]);
    expect(t.status).toBe("input_required");
    expect(t.inputRequests).toEqual({ "input-1": ELICIT, "input-2": SAMPLE });
    expect(t.lastUpdatedAt).toBe(at(2).toISOString());
  });

  it("working → input_required → working → input_required again, each change stamped", () => {
    const stamps: string[] = [];
    let t = fresh();
    const events: TaskEvent[] = [
      { type: "input", key: "input-1", request: ELICIT },
      { type: "answered", keys: ["input-1"] },
      { type: "input", key: "input-2", request: ELICIT },
    ];
    events.forEach((e, i) => {
      t = transition(t, e, at(i + 1));
      stamps.push(t.lastUpdatedAt);
    });
    expect(t.status).toBe("input_required");
    expect(Object.keys(t.inputRequests)).toEqual(["input-2"]);
    expect(stamps).toEqual([at(1), at(2), at(3)].map((d) => d.toISOString()));
  });
});

describe("transition: progress", () => {
  it("sets statusMessage and stamps lastUpdatedAt, keeping the status", () => {
    const t = transition(fresh(), { type: "progress", message: "progress 1/3" }, at(7));
    expect(t.status).toBe("working");
    expect(t.statusMessage).toBe("progress 1/3");
    expect(t.lastUpdatedAt).toBe(at(7).toISOString());
  });

  it("the same message again is no change (same object, old stamp)", () => {
    const t = transition(fresh(), { type: "progress", message: "progress 1/3" }, at(7));
    expect(transition(t, { type: "progress", message: "progress 1/3" }, at(8))).toBe(t);
  });

  it("progress while input_required keeps input_required and its requests", () => {
    const waiting = transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(1));
    const t = transition(waiting, { type: "progress", message: "still thinking" }, at(2));
    expect(t.status).toBe("input_required");
    expect(t.inputRequests).toEqual({ "input-1": ELICIT });
    expect(t.statusMessage).toBe("still thinking");
  });
});

describe("transition: terminal states", () => {
  for (const [status, event] of TERMINAL_EVENTS) {
    it(`working → ${status}, stamped`, () => {
      const t = transition(fresh(), event, at(3));
      expect(t.status).toBe(status);
      expect(t.lastUpdatedAt).toBe(at(3).toISOString());
      expect(TERMINAL.has(t.status)).toBe(true);
    });

    it(`input_required → ${status}, outstanding inputRequests dropped`, () => {
      const waiting = transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(1));
      const t = transition(waiting, event, at(2));
      expect(t.status).toBe(status);
      expect(t.inputRequests).toEqual({});
      expect(t.lastUpdatedAt).toBe(at(2).toISOString());
    });

    it(`${status} never changes again, whatever happens`, () => {
      const terminal = transition(fresh(), event, at(1));
      for (const e of EVERY_EVENT) {
        expect(transition(terminal, e, at(1_000))).toBe(terminal);
      }
      expect(terminal.lastUpdatedAt).toBe(at(1).toISOString());
    });
  }

  it("completed inlines the result and clears any statusMessage", () => {
    const result = { content: [{ type: "text", text: "ok" }], isError: true };
    const t = run(fresh(), [
      { type: "progress", message: "progress 2/2" },
      { type: "complete", result },
    ]);
    expect(t.result).toEqual(result);
    expect(t.error).toBeUndefined();
    expect(t.statusMessage).toBeUndefined();
  });

  it("failed inlines the JSON-RPC error and a statusMessage", () => {
    const t = transition(
      fresh(),
      { type: "fail", error: { code: -32603, message: "boom" }, message: "The call failed: boom" },
      at(1),
    );
    expect(t.error).toEqual({ code: -32603, message: "boom" });
    expect(t.statusMessage).toBe("The call failed: boom");
    expect(t.result).toBeUndefined();
  });

  it("cancelled carries its reason as statusMessage", () => {
    const t = transition(fresh(), { type: "cancel", message: "Cancelled by the client" }, at(1));
    expect(t.statusMessage).toBe("Cancelled by the client");
  });

  it("transition never mutates its input", () => {
    const t = fresh({ inputRequests: { "input-1": ELICIT }, status: "input_required" });
    const snapshot = structuredClone(t);
    for (const e of EVERY_EVENT) transition(t, e, at(1));
    expect(t).toEqual(snapshot);
  });
});

/** Asserts the DetailedTask's status and narrows the union to it, so its status-specific fields can be read. */
function withStatus<S extends DetailedTask["status"]>(
  d: DetailedTask,
  status: S,
): Extract<DetailedTask, { status: S }> {
  expect(d.status).toBe(status);
  if (d.status !== status) throw new Error(`expected status ${status}, got ${d.status}`);
  return d as Extract<DetailedTask, { status: S }>;
}

describe("detailedTask: the wire shape per status", () => {
  const base = ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"];

  it("working: the Task fields only (no owner, no inputRequests, result or error)", () => {
    const d = detailedTask(fresh());
    expect(Object.keys(d).sort()).toEqual([...base].sort());
    expect(d).toEqual({
      taskId: "task-1",
      status: "working",
      createdAt: T0.toISOString(),
      lastUpdatedAt: T0.toISOString(),
      ttlMs: 60_000,
      pollIntervalMs: 1_000,
    });
    expect(d).not.toHaveProperty("owner");
  });

  it("working with progress: statusMessage", () => {
    const d = detailedTask(transition(fresh(), { type: "progress", message: "progress 1/3" }, at(1)));
    expect(d.statusMessage).toBe("progress 1/3");
    expect(d).not.toHaveProperty("inputRequests");
  });

  it("input_required: inputRequests inlined", () => {
    const d = withStatus(
      detailedTask(transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(1))),
      "input_required",
    );
    expect(d.inputRequests).toEqual({ "input-1": ELICIT });
    expect(d).not.toHaveProperty("result");
    expect(d).not.toHaveProperty("error");
  });

  it("completed: result inlined, nothing else status-specific", () => {
    const result = { content: [{ type: "text", text: "ok" }], isError: false };
    const d = withStatus(detailedTask(transition(fresh(), { type: "complete", result }, at(1))), "completed");
    expect(d.result).toEqual(result);
    expect(d).not.toHaveProperty("inputRequests");
    expect(d).not.toHaveProperty("error");
    expect(d).not.toHaveProperty("owner");
  });

  it("failed: error and statusMessage inlined", () => {
    const d = withStatus(
      detailedTask(
        transition(fresh(), { type: "fail", error: { code: -32603, message: "boom" }, message: "failed: boom" }, at(1)),
      ),
      "failed",
    );
    expect(d.error).toEqual({ code: -32603, message: "boom" });
    expect(d.statusMessage).toBe("failed: boom");
    expect(d).not.toHaveProperty("result");
    expect(d).not.toHaveProperty("inputRequests");
  });

  it("cancelled: no result, error or inputRequests", () => {
    const waiting = transition(fresh(), { type: "input", key: "input-1", request: ELICIT }, at(1));
    const d = detailedTask(transition(waiting, { type: "cancel", message: "Cancelled by the client" }, at(2)));
    expect(d.status).toBe("cancelled");
    expect(Object.keys(d).sort()).toEqual([...base, "statusMessage"].sort());
  });

  it("timestamps are ISO 8601 and round-trip", () => {
    const d = detailedTask(transition(fresh(), { type: "progress", message: "x" }, at(1234)));
    for (const k of ["createdAt", "lastUpdatedAt"] as const) {
      const v = d[k];
      expect(typeof v).toBe("string");
      expect(new Date(v).toISOString()).toBe(v);
    }
  });
});

describe("progressMessage", () => {
  it("step and total with the upstream's message", () => {
    expect(progressMessage({ progress: 3, total: 10, message: "copying files" })).toBe("progress 3/10: copying files");
  });

  it("step and total without a message", () => {
    expect(progressMessage({ progress: 3, total: 10 })).toBe("progress 3/10");
  });

  it("no total", () => {
    expect(progressMessage({ progress: 0.5 })).toBe("progress 0.5");
    expect(progressMessage({ progress: 2, message: "halfway" })).toBe("progress 2: halfway");
  });

  it("no progress number at all", () => {
    expect(progressMessage({})).toBe("working");
    expect(progressMessage({ message: "warming up" })).toBe("working: warming up");
  });

  it("ignores non-numeric progress and total, and an empty message", () => {
    expect(progressMessage({ progress: "3", total: "10", message: "" })).toBe("working");
    expect(progressMessage({ progress: 1, total: "10" })).toBe("progress 1");
  });
});

describe("inherited property names are not input keys", () => {
  it("answering 'constructor' or '__proto__' changes nothing", async () => {
    const { transition } = await import("../../src/tasks/task.js");
    const task = {
      taskId: "t",
      owner: "o",
      status: "input_required" as const,
      createdAt: "2026-01-01T00:00:00.000Z",
      lastUpdatedAt: "2026-01-01T00:00:00.000Z",
      ttlMs: 1000,
      pollIntervalMs: 100,
      inputRequests: { "input-1": { method: "roots/list" } },
    };
    expect(transition(task, { type: "answered", keys: ["constructor", "__proto__", "toString"] }, new Date())).toBe(
      task,
    );
  });
});
