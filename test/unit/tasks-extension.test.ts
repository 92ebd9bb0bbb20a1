// The Tasks extension's wire shapes (src/protocol/tasks-extension.ts) checked
// against the official @modelcontextprotocol/ext-tasks v2 types and guards: what
// the gateway sends must be what the official requester accepts.
import { describe, expect, expectTypeOf, it } from "vitest";
import { isCreateTaskResultV2, isDetailedTaskV2 } from "@modelcontextprotocol/ext-tasks/core/v2";
import type { CreateTaskResultV2, DetailedTaskV2 } from "@modelcontextprotocol/ext-tasks/core/v2";
import {
  isTasksDeclared,
  missingTasksCapability,
  TASKS_EXTENSION,
  withoutTasksExtension,
  type CreateTaskResult,
  type DetailedTask,
} from "../../src/protocol/tasks-extension.js";
import { createTaskResult, detailedTask, type TaskRecord } from "../../src/tasks/task.js";

const base: TaskRecord = {
  taskId: "AAAAAAAAAAAAAAAAAAAAAA",
  owner: "alice",
  status: "working",
  createdAt: "2026-01-01T00:00:00.000Z",
  lastUpdatedAt: "2026-01-01T00:00:01.000Z",
  ttlMs: 60_000,
  pollIntervalMs: 500,
  inputRequests: {},
};

const ELICIT = {
  method: "elicitation/create",
  params: { mode: "form", message: "Name?", requestedSchema: { type: "object", properties: {} } },
};

describe("wire shapes", () => {
  it("have the official v2 statuses and common fields (payloads are checked by the guards below)", () => {
    type Common = "taskId" | "status" | "statusMessage" | "createdAt" | "lastUpdatedAt" | "ttlMs" | "pollIntervalMs";
    expectTypeOf<DetailedTask["status"]>().toEqualTypeOf<DetailedTaskV2["status"]>();
    expectTypeOf<Pick<DetailedTask, Common>>().toExtend<Pick<DetailedTaskV2, Common>>();
    expectTypeOf<CreateTaskResult["resultType"]>().toEqualTypeOf<CreateTaskResultV2["resultType"]>();
    expectTypeOf<Pick<CreateTaskResult, Common>>().toExtend<Pick<CreateTaskResultV2, Common>>();
  });

  it("every status the gateway produces passes the official DetailedTask guard", () => {
    const records: TaskRecord[] = [
      base,
      {
        ...base,
        status: "input_required",
        inputRequests: { "input-1": ELICIT },
        statusMessage: "Waiting for input from the client",
      },
      {
        ...base,
        status: "completed",
        result: { resultType: "complete", content: [{ type: "text", text: "ok" }], isError: false },
      },
      { ...base, status: "failed", error: { code: -32603, message: "boom" }, statusMessage: "The call failed: boom" },
      { ...base, status: "cancelled", statusMessage: "Cancelled by the client" },
    ];
    for (const record of records) {
      const wire = detailedTask(record);
      expect(wire.status).toBe(record.status);
      expect(isDetailedTaskV2(wire)).toBe(true);
    }
  });

  it("the CreateTaskResult passes the official guard and carries no owner", () => {
    const created = createTaskResult(base);
    expect(isCreateTaskResultV2(created)).toBe(true);
    expect(created).toMatchObject({ resultType: "task", taskId: base.taskId, status: "working" });
    expect(created).not.toHaveProperty("owner");
  });
});

describe("declaration", () => {
  it("is an object under extensions[TASKS_EXTENSION]", () => {
    expect(isTasksDeclared({ extensions: { [TASKS_EXTENSION]: {} } })).toBe(true);
    expect(isTasksDeclared({ extensions: { [TASKS_EXTENSION]: true } })).toBe(false);
    expect(isTasksDeclared({ extensions: {} })).toBe(false);
    expect(isTasksDeclared({})).toBe(false);
  });

  it("a missing declaration is -32021 with HTTP 400 and the required capability spelled out", () => {
    const fault = missingTasksCapability("Tool x runs only as a task");
    expect(fault.status).toBe(400);
    expect(fault.error.code).toBe(-32021);
    expect(fault.error.message).toContain(TASKS_EXTENSION);
    expect(fault.error.data).toEqual({
      reason: "missing_client_capability",
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    });
  });

  it("can be removed from capabilities, keeping other extensions", () => {
    expect(withoutTasksExtension({ roots: {}, extensions: { [TASKS_EXTENSION]: {}, "x/y": { a: 1 } } })).toEqual({
      roots: {},
      extensions: { "x/y": { a: 1 } },
    });
    expect(withoutTasksExtension({ roots: {} })).toEqual({ roots: {} });
  });
});
