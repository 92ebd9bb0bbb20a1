// The 2025-11-25 task wire shapes the gateway derives from its stored 2026-07-28 tasks.
import { describe, expect, it } from "vitest";
import {
  legacyTask,
  legacyTaskResult,
  parseRelayId,
  relayId,
  relayRequest,
  taskSupportEdit,
  withTasksCapability,
} from "../../src/tasks-2025/wire.js";

const base = {
  taskId: "abc_-1",
  createdAt: "2026-01-01T00:00:00.000Z",
  lastUpdatedAt: "2026-01-01T00:00:01.000Z",
  ttlMs: 60_000,
  pollIntervalMs: 500,
};

describe("legacy task wire", () => {
  it("a Task has ttl and pollInterval; isError makes a completed task failed", () => {
    expect(legacyTask({ resultType: "complete", ...base, status: "working", statusMessage: "progress 1/2" })).toEqual({
      taskId: "abc_-1",
      status: "working",
      statusMessage: "progress 1/2",
      createdAt: base.createdAt,
      lastUpdatedAt: base.lastUpdatedAt,
      ttl: 60_000,
      pollInterval: 500,
    });
    expect(legacyTask({ ...base, status: "completed", result: { content: [], isError: true } }).status).toBe("failed");
    expect(legacyTask({ ...base, status: "completed", result: { content: [] } }).status).toBe("completed");
    expect(legacyTask({ ...base, ttlMs: null, status: "working" }).ttl).toBeNull();
  });

  it("tasks/result drops the modern stamps and adds the related-task _meta", () => {
    const modern = {
      resultType: "complete",
      content: [{ type: "text", text: "x" }],
      _meta: { "io.modelcontextprotocol/serverInfo": {}, keep: 1 },
    };
    expect(legacyTaskResult(modern, "t1")).toEqual({
      content: [{ type: "text", text: "x" }],
      _meta: { keep: 1, "io.modelcontextprotocol/related-task": { taskId: "t1" } },
    });
  });

  it("relay ids round-trip, and foreign ids are not ours", () => {
    expect(parseRelayId(relayId("abc_-1", "input-2"))).toEqual({ taskId: "abc_-1", key: "input-2" });
    expect(parseRelayId(7)).toBeUndefined();
    expect(parseRelayId("gw-task-input:")).toBeUndefined();
    expect(parseRelayId("something-else")).toBeUndefined();
    expect(relayRequest("t1", "input-1", { method: "elicitation/create", params: { message: "m" } })).toEqual({
      jsonrpc: "2.0",
      id: relayId("t1", "input-1"),
      method: "elicitation/create",
      params: { message: "m", _meta: { "io.modelcontextprotocol/related-task": { taskId: "t1" } } },
    });
  });

  it("capabilities and taskSupport edits", () => {
    expect(withTasksCapability({ protocolVersion: "2025-11-25", capabilities: { tools: {} } })).toEqual({
      protocolVersion: "2025-11-25",
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    });
    const modes = { a: "required", b: "never", c: "auto", d: "always" } as const;
    const edited = taskSupportEdit((t) => modes[t as keyof typeof modes])({
      tools: [{ name: "a" }, { name: "b", execution: { other: 1 } }, { name: "c" }, { name: "d" }],
    });
    expect(edited.tools).toEqual([
      { name: "a", execution: { taskSupport: "required" } },
      { name: "b", execution: { other: 1, taskSupport: "forbidden" } },
      { name: "c", execution: { taskSupport: "optional" } },
      { name: "d", execution: { taskSupport: "optional" } },
    ]);
  });
});
