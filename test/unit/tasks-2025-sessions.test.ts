// The table of sessions that get 2025-11-25 tasks from the gateway: bounded in
// entries (session id × caller), not only in session ids.
import { describe, expect, it } from "vitest";
import { TaskSessions } from "../../src/tasks-2025/sessions.js";

describe("TaskSessions", () => {
  it("bounds the callers under one session id (a stateless upstream's, shared by every caller)", () => {
    const sessions = new TaskSessions({ maxSessions: 3, maxTasksPerSession: 10 });
    for (let i = 0; i < 1_000; i++) void sessions.open(undefined, `caller-${i}`, {});
    expect(sessions.size).toBe(3);
    // The most recent callers are kept; the oldest went first.
    expect(sessions.get(undefined, "caller-999")).toBeDefined();
    expect(sessions.get(undefined, "caller-997")).toBeDefined();
    expect(sessions.get(undefined, "caller-0")).toBeUndefined();
  });

  it("evicts the least recently used entry, across session ids", () => {
    const sessions = new TaskSessions({ maxSessions: 2, maxTasksPerSession: 10 });
    void sessions.open("s1", "a", {});
    void sessions.open("s2", "b", {});
    expect(sessions.get("s1", "a")).toBeDefined();
    void sessions.open("s3", "c", {});
    expect(sessions.get("s2", "b")).toBeUndefined();
    expect(sessions.get("s1", "a")).toBeDefined();
    expect(sessions.get("s3", "c")).toBeDefined();
    expect(sessions.size).toBe(2);
    // Opening the same entry again is no new entry; closing one frees it.
    void sessions.open("s3", "c", {});
    expect(sessions.size).toBe(2);
    sessions.close("s3", "c");
    expect(sessions.size).toBe(1);
    expect(sessions.has("s3")).toBe(false);
  });

  it("a session id is known while any caller holds an entry under it, however entries leave", () => {
    const sessions = new TaskSessions({ maxSessions: 2, maxTasksPerSession: 10 });
    void sessions.open("s1", "a", {});
    void sessions.open("s1", "b", {});
    // Opened again: the same entry, counted once.
    void sessions.open("s1", "a", {});
    sessions.close("s1", "a");
    expect(sessions.has("s1")).toBe(true);
    // "b" is now the least recently used entry, and leaves at capacity.
    void sessions.open("s2", "c", {});
    void sessions.open("s3", "d", {});
    expect(sessions.has("s1")).toBe(false);
    expect([sessions.has("s2"), sessions.has("s3"), sessions.size]).toEqual([true, true, 2]);
    sessions.close("s2", "c");
    sessions.close("s3", "d");
    expect([sessions.has("s2"), sessions.has("s3"), sessions.size]).toEqual([false, false, 0]);
  });

  it("recency is per entry: a use of one caller's entry does not keep another caller's under the same id", () => {
    const sessions = new TaskSessions({ maxSessions: 2, maxTasksPerSession: 10 });
    void sessions.open("s1", "a", {});
    void sessions.open("s1", "b", {});
    expect(sessions.get("s1", "a")).toBeDefined();
    void sessions.open("s2", "c", {});
    expect(sessions.get("s1", "b")).toBeUndefined();
    expect(sessions.get("s1", "a")).toBeDefined();
  });

  it("opening an entry again starts it afresh, and tasks on it stay bounded, newest kept", () => {
    const sessions = new TaskSessions({ maxSessions: 10, maxTasksPerSession: 2 });
    void sessions.open("s1", "a", { elicitation: {} });
    const state = sessions.get("s1", "a");
    if (!state) throw new Error("no entry");
    for (const id of ["t1", "t2", "t3"]) sessions.addTask(state, id);
    expect(state.taskIds).toEqual(["t2", "t3"]);
    void sessions.open("s1", "a", {});
    expect(sessions.get("s1", "a")).toEqual({ capabilities: {}, taskIds: [] });
    expect(sessions.size).toBe(1);
  });

  it("another caller presenting the same session id finds nothing", () => {
    const sessions = new TaskSessions({ maxSessions: 10, maxTasksPerSession: 10 });
    void sessions.open("s1", "a", {});
    expect(sessions.get("s1", "b")).toBeUndefined();
  });
});
