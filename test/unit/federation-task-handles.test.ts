// Task handles of a federated endpoint: they open to what they were made of under the same key only, name their
// upstream, are never equal twice, and refuse every alteration (another upstream's name, a flipped byte, a
// truncation, another key).
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { TaskHandles } from "../../src/federation/task-handles.js";

const secret = randomBytes(32);
const made = { upstream: "github", upstreamId: "task-1", owner: "digest-of-alice" };

describe("TaskHandles", () => {
  it("opens a handle to the upstream, the upstream's id and the owner it was made for", () => {
    const handles = new TaskHandles(secret);
    const id = handles.issue(made);
    expect(id.startsWith("github.~")).toBe(true);
    expect(TaskHandles.isHandle(id)).toBe(true);
    expect(handles.open(id)).toEqual(made);
    // Another instance with the same secret (another replica) opens it too.
    expect(new TaskHandles(secret).open(id)).toEqual(made);
  });

  it("makes a new handle every time, even for the same task", () => {
    const handles = new TaskHandles(secret);
    const ids = new Set(Array.from({ length: 100 }, () => handles.issue(made)));
    expect(ids.size).toBe(100);
  });

  it("refuses a handle relabelled for another upstream, altered, cut short, or made under another key", () => {
    const handles = new TaskHandles(secret);
    const id = handles.issue(made);
    expect(handles.open(id.replace(/^github\./, "gitlab."))).toBeUndefined();
    const body = id.slice("github.~".length);
    const flipped = body.slice(0, 5) + (body[5] === "A" ? "B" : "A") + body.slice(6);
    expect(handles.open(`github.~${flipped}`)).toBeUndefined();
    expect(handles.open(id.slice(0, -4))).toBeUndefined();
    expect(handles.open("github.~")).toBeUndefined();
    expect(new TaskHandles(randomBytes(32)).open(id)).toBeUndefined();
  });

  it("never takes a gateway task id for a handle", () => {
    expect(TaskHandles.isHandle("github.Q3v9aBcDeFgHiJkLmNoPqR")).toBe(false);
    expect(TaskHandles.isHandle("Q3v9aBcDeFgHiJkLmNoPqR")).toBe(false);
  });
});
