// The audit trail: info lines with msg "audit" and `audit` naming the event
// (task.created, task.completed, task.failed, task.cancelled, access.denied),
// captured through an injected logger. The clock is injected, so a task's
// duration_ms is exactly the time the test let pass. No line, at any level,
// may carry the client's bearer token. Every line names the upstream; a task line carries a piece of the id's
// random part (never the whole id, and on a named route not the route's name).
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { startLegacyPagedUpstream, startModernPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";
import { startTestGateway, type TestGateway, type TestGatewayOverrides } from "../helpers/gateway.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { callTool, modernRpc, settledTask } from "../helpers/modern-rpc.js";
import { pollUntil } from "../helpers/poll.js";
import { startGateway } from "../../src/index.js";
import { taskRef } from "../../src/tasks/task-id.js";

const TOKEN = "audit-token-SECRET-7f3a9c";
const AUTH = { authorization: `Bearer ${TOKEN}` };

type Line = Record<string, unknown>;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const RULES = {
  tasks: {
    rules: [
      { tool: "hold", mode: "always" as const },
      { tool: "boom", mode: "always" as const },
    ],
  },
  access: { rules: [{ tools: "secret_*", effect: "deny" as const }] },
};

/**
 * An upstream and a gateway logging (debug and up) into `raw`, with a clock the test moves; `named`: the upstream is
 * served as upstreams.<named> (at /mcp/<named>) rather than as the single one.
 */
async function start(upstreamKind: "legacy" | "modern", overrides: TestGatewayOverrides = {}, named?: string) {
  const raw: string[] = [];
  let clock = Date.parse("2030-01-02T03:04:05.000Z");
  const upstream: PagedUpstream =
    upstreamKind === "legacy" ? await startLegacyPagedUpstream() : await startModernPagedUpstream();
  cleanups.push(() => upstream.close());
  const logger = createLogger("debug", (l) => void raw.push(l));
  const now = () => clock;
  const gateway: TestGateway =
    named === undefined
      ? await startTestGateway(upstream.url, { logger, now, ...RULES, ...overrides })
      : await startGateway(
          {
            upstreams: { [named]: { url: upstream.url } },
            server: { host: "127.0.0.1", port: 0 },
            log: { level: "debug" },
            ...RULES,
          },
          { logger, now },
        );
  cleanups.push(async () => void (await gateway.close(0)));
  const audits = (): Line[] => raw.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === "audit");
  /** The audit line of `event` (for `task`, when given), once it is written. */
  const auditLine = async (event: string, task?: string): Promise<Line> => {
    const match = (l: Line): boolean => l.audit === event && (task === undefined || l.task === taskRef(task));
    const found = await pollUntil(
      async () => audits().find(match),
      (l) => l !== undefined,
    );
    if (!found) throw new Error(`no ${event} audit line; got ${JSON.stringify(audits())}`);
    return found;
  };
  return { upstream, gateway, raw, audits, auditLine, advance: (ms: number) => void (clock += ms) };
}

describe("audit lines", () => {
  it("a task created and completed (era bridge): task.created, then task.completed with tool, outcome and duration_ms", async () => {
    const env = await start("legacy");
    const created = await callTool(env.gateway.url, "hold", { key: "done" }, { headers: AUTH });
    const taskId = created.body.result?.taskId as string;
    expect(taskId).toEqual(expect.any(String));
    await env.upstream.holding("done");
    env.advance(1_234);
    env.upstream.release("done");
    expect(await settledTask(env.gateway.url, taskId, AUTH)).toMatchObject({ status: "completed" });

    const begun = await env.auditLine("task.created", taskId);
    expect(begun).toMatchObject({
      level: "info",
      tool: "hold",
      upstream: "default",
      task: taskRef(taskId),
      outcome: "working",
      caller: expect.any(String),
    });
    expect(begun.caller as string).toHaveLength(12);
    expect(begun).not.toHaveProperty("subject");
    const end = await env.auditLine("task.completed", taskId);
    expect(end).toMatchObject({
      level: "info",
      tool: "hold",
      upstream: "default",
      task: taskRef(taskId),
      outcome: "completed",
      duration_ms: 1_234,
      caller: begun.caller,
    });
    // One line each, and in order.
    const mine = env.audits().filter((l) => l.task === taskRef(taskId));
    expect(mine.map((l) => l.audit)).toEqual(["task.created", "task.completed"]);
    expect(env.raw.join("")).not.toContain(TOKEN);
  });

  it("a task cancelled by tasks/cancel gives task.cancelled; a failing tool gives task.failed", async () => {
    const env = await start("legacy");
    const created = await callTool(env.gateway.url, "hold", { key: "never" }, { headers: AUTH });
    const taskId = created.body.result?.taskId as string;
    await env.upstream.holding("never");
    env.advance(50);
    const cancel = await modernRpc(env.gateway.url, "tasks/cancel", { taskId }, { name: taskId, headers: AUTH });
    expect(cancel.body.error).toBeUndefined();
    expect(await env.auditLine("task.cancelled", taskId)).toMatchObject({
      tool: "hold",
      outcome: "cancelled",
      duration_ms: 50,
    });

    const boom = await callTool(env.gateway.url, "boom", {}, { headers: AUTH });
    const boomId = boom.body.result?.taskId as string;
    expect(await settledTask(env.gateway.url, boomId, AUTH)).toMatchObject({ status: "failed" });
    expect(await env.auditLine("task.failed", boomId)).toMatchObject({
      tool: "boom",
      outcome: "failed",
      duration_ms: expect.any(Number),
    });
    expect(
      env
        .audits()
        .filter((l) => l.task === taskRef(taskId))
        .map((l) => l.audit),
    ).toEqual(["task.created", "task.cancelled"]);
    expect(env.raw.join("")).not.toContain(TOKEN);
  });

  it("access denials on both eras give access.denied with the tool, the same caller, and never the token", async () => {
    const env = await start("legacy");
    const modern = await callTool(env.gateway.url, "secret_admin", {}, { headers: AUTH });
    expect(modern.body.error).toMatchObject({ code: -32602, data: { reason: "access_denied" } });
    const legacy = await connectSdkClient(env.gateway.url, { headers: AUTH });
    cleanups.push(() => legacy.close());
    await expect(legacy.client.callTool({ name: "secret_wipe", arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });

    const a = await env.auditLine("access.denied");
    const denials = env.audits().filter((l) => l.audit === "access.denied");
    expect(denials).toHaveLength(2);
    expect(denials[0]).toMatchObject({
      level: "info",
      tool: "secret_admin",
      upstream: "default",
      outcome: "denied",
      caller: a.caller,
    });
    expect(denials[1]).toMatchObject({
      level: "info",
      tool: "secret_wipe",
      upstream: "default",
      outcome: "denied",
      caller: a.caller,
    });
    expect(env.upstream.callsOf("secret_admin")).toEqual([]);
    expect(env.upstream.callsOf("secret_wipe")).toEqual([]);
    expect(env.raw.join("")).not.toContain(TOKEN);
  });

  it("in front of a modern upstream, with an identity header: the lines name the subject", async () => {
    const env = await start("modern", {
      tasks: { identityHeader: "X-User", rules: [{ tool: "hold", mode: "always" }] },
    });
    const headers = { ...AUTH, "x-user": "alice" };
    const created = await callTool(env.gateway.url, "hold", { key: "m" }, { headers });
    const taskId = created.body.result?.taskId as string;
    await env.upstream.holding("m");
    env.advance(2_000);
    env.upstream.release("m");
    expect(await settledTask(env.gateway.url, taskId, headers)).toMatchObject({ status: "completed" });
    expect(await env.auditLine("task.created", taskId)).toMatchObject({ subject: "alice", tool: "hold" });
    expect(await env.auditLine("task.completed", taskId)).toMatchObject({
      subject: "alice",
      tool: "hold",
      outcome: "completed",
      duration_ms: 2_000,
    });

    await callTool(env.gateway.url, "secret_admin", {}, { headers });
    expect(await env.auditLine("access.denied")).toMatchObject({ subject: "alice", tool: "secret_admin" });
    expect(env.raw.join("")).not.toContain(TOKEN);
  });

  it("an identity header that is a credential header (Authorization) binds the caller, but its value is never a subject", async () => {
    const env = await start("modern", { tasks: { identityHeader: "Authorization" } });
    await callTool(env.gateway.url, "secret_admin", {}, { headers: AUTH });
    const denied = await env.auditLine("access.denied");
    expect(denied).toMatchObject({ tool: "secret_admin", caller: expect.any(String) });
    expect(denied).not.toHaveProperty("subject");
    expect(env.raw.join("")).not.toContain(TOKEN);
  });

  it("on a named route: the lines name the upstream, and task is a piece of the id's random part, not the route's name", async () => {
    const env = await start("legacy", {}, "everything");
    const url = `${env.gateway.url}/everything`;
    const created = await callTool(url, "hold", { key: "n" }, { headers: AUTH });
    const taskId = created.body.result?.taskId as string;
    expect(taskId.startsWith("everything.")).toBe(true);
    const random = taskId.slice("everything.".length);
    await env.upstream.holding("n");
    env.advance(10);
    env.upstream.release("n");
    expect(await settledTask(url, taskId, AUTH)).toMatchObject({ status: "completed" });

    const begun = await env.auditLine("task.created", taskId);
    expect(begun).toMatchObject({ upstream: "everything", tool: "hold", task: random.slice(0, 12) });
    expect(await env.auditLine("task.completed", taskId)).toMatchObject({
      upstream: "everything",
      task: random.slice(0, 12),
    });
    await callTool(url, "secret_admin", {}, { headers: AUTH });
    expect(await env.auditLine("access.denied")).toMatchObject({ upstream: "everything", tool: "secret_admin" });
    // The whole id is in no line, at any level.
    expect(env.raw.join("")).not.toContain(random);
    expect(env.raw.join("")).not.toContain(TOKEN);
  });
});
