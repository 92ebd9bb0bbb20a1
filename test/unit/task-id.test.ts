import { describe, expect, it } from "vitest";
import { newTaskId, taskUpstream } from "../../src/tasks/task-id.js";

describe("task ids name their upstream", () => {
  it("a task of the single upstream has a bare id of 128 random bits, read back as default", () => {
    const id = newTaskId();
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(taskUpstream(id)).toBe("default");
  });

  it("a task of a named upstream carries the name before a dot, and 128 random bits after it", () => {
    const id = newTaskId("git-hub_2");
    expect(id).toMatch(/^git-hub_2\.[A-Za-z0-9_-]{22}$/);
    expect(taskUpstream(id)).toBe("git-hub_2");
    expect(newTaskId("git-hub_2")).not.toBe(id);
  });

  it("an id a client made up is read the same way: the prefix is only a name, never trusted as an owner", () => {
    expect(taskUpstream("jira.abc")).toBe("jira");
    expect(taskUpstream("no-dot-here")).toBe("default");
    expect(taskUpstream(".x")).toBe("");
  });
});
