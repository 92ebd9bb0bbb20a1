// Credentials per upstream: three SDK 1.x demo upstreams, each behind a recording proxy that shows the headers
// the gateway sent it. upstreams.a.headers (its own token and a team header) reach a, on every request the
// gateway makes to it (a client's session, the era bridge's, a task's call), replacing what the client sent;
// b (no auth section) gets the client's Authorization as it came; c (auth.upstreamCredentials: drop) gets none.
// The static values reach no other upstream, and never show in the gateway's log lines, /status, /status.json,
// /metrics or /readyz; a reload that rotates them applies to the next calls, and logs neither value.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IncomingHttpHeaders } from "node:http";
import type { GatewayConfigInput } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";
import { behindRecordingProxy, type ProxiedExchange, type RecordingProxy } from "../helpers/ext-tasks-client.js";
import type { TestGateway } from "../helpers/gateway.js";
import { manyConfig, routeOf, startManyGateway } from "../helpers/many-upstreams.js";
import { callTool, settledTask } from "../helpers/modern-rpc.js";
import { connectSdkClient } from "../helpers/sdk-client.js";

const A_TOKEN = "Bearer a-secret-5f0c27d1";
const A_TEAM = "team-static-9be3";
const A_TOKEN_ROTATED = "Bearer a-secret-rotated-41aa";
const SECRETS = ["a-secret-5f0c27d1", A_TEAM, "a-secret-rotated-41aa"];
const CLIENT = { authorization: "Bearer client-token-77", "x-team": "client-team" };

type Proxied = Awaited<ReturnType<typeof behindRecordingProxy<Awaited<ReturnType<typeof startSdkUpstream>>>>>;
let a: Proxied;
let b: Proxied;
let c: Proxied;
let gateway: TestGateway;
const lines: string[] = [];

function config(aToken: string): GatewayConfigInput {
  return manyConfig({
    upstreams: {
      a: { url: a.url, headers: { authorization: aToken, "x-team": A_TEAM } },
      b: { url: b.url },
      c: { url: c.url, auth: { upstreamCredentials: "drop" } },
    },
    tasks: { thresholdMs: 60_000, rules: [{ tool: "slow_task", mode: "always" }] },
    log: { level: "debug", access: true },
  });
}

beforeAll(async () => {
  [a, b, c] = await Promise.all([
    startSdkUpstream().then(behindRecordingProxy),
    startSdkUpstream().then(behindRecordingProxy),
    startSdkUpstream().then(behindRecordingProxy),
  ]);
  gateway = await startManyGateway(config(A_TOKEN), {
    logger: createLogger("debug", (line) => void lines.push(line)),
  });
});
afterAll(async () => {
  await gateway?.close(0);
  await Promise.allSettled([a, b, c].map((u) => u?.close()));
});

/** The exchanges that carried a message whose JSON contains `marker` (a tool argument the test chose). */
function carrying(recorder: RecordingProxy, marker: string): ProxiedExchange[] {
  return recorder.exchanges.filter((x) => x.messages.some((m) => JSON.stringify(m).includes(marker)));
}

function headerValues(headers: IncomingHttpHeaders): string {
  return JSON.stringify(headers);
}

/** What one test does on every route: an SDK 1.x session (pass-through), a modern call (era bridge), a task. */
async function traffic(route: string, marker: string): Promise<void> {
  const legacy = await connectSdkClient(routeOf(gateway, route), { headers: CLIENT });
  try {
    const echo = await legacy.client.callTool({ name: "echo", arguments: { text: `${marker}-legacy` } });
    expect(echo.content).toEqual([{ type: "text", text: `${marker}-legacy` }]);
  } finally {
    await legacy.close();
  }
  const modern = await callTool(routeOf(gateway, route), "echo", { text: `${marker}-modern` }, { headers: CLIENT });
  expect(modern.body.result, modern.text).toMatchObject({ content: [{ type: "text", text: `${marker}-modern` }] });
  const task = await callTool(
    routeOf(gateway, route),
    "slow_task",
    { durationMs: 20, steps: 1, marker: `${marker}-task` },
    { headers: CLIENT },
  );
  expect(task.body.result, task.text).toMatchObject({ resultType: "task" });
  const taskId = task.body.result?.taskId as string;
  expect(await settledTask(routeOf(gateway, route), taskId, CLIENT)).toMatchObject({ status: "completed" });
}

describe("static headers and credentials per upstream", () => {
  it("a gets its own authorization and x-team on every request, in place of the client's", async () => {
    await traffic("a", "to-a");
    expect(a.recorder.exchanges.length).toBeGreaterThan(0);
    for (const x of a.recorder.exchanges) {
      expect(x.headers.authorization, `${x.method} ${JSON.stringify(x.messages)}`).toBe(A_TOKEN);
      expect(x.headers["x-team"], `${x.method} ${JSON.stringify(x.messages)}`).toBe(A_TEAM);
    }
    for (const suffix of ["legacy", "modern", "task"]) expect(carrying(a.recorder, `to-a-${suffix}`)).not.toEqual([]);
    expect(a.recorder.exchanges.some((x) => headerValues(x.headers).includes("client-token-77"))).toBe(false);
  });

  it("b (no auth section) gets the client's Authorization unchanged", async () => {
    await traffic("b", "to-b");
    for (const suffix of ["legacy", "modern", "task"]) {
      const carried = carrying(b.recorder, `to-b-${suffix}`);
      expect(carried, suffix).not.toEqual([]);
      for (const x of carried) expect(x.headers.authorization, suffix).toBe(CLIENT.authorization);
    }
    // The pass-through carries the client's other headers too (the bridge and tasks send only credentials).
    for (const x of carrying(b.recorder, "to-b-legacy")) expect(x.headers["x-team"]).toBe(CLIENT["x-team"]);
  });

  it("c (auth.upstreamCredentials: drop) gets no Authorization; the pass-through still carries the client's other headers", async () => {
    await traffic("c", "to-c");
    for (const suffix of ["legacy", "modern", "task"]) {
      const carried = carrying(c.recorder, `to-c-${suffix}`);
      expect(carried, suffix).not.toEqual([]);
      for (const x of carried) expect(x.headers.authorization, suffix).toBeUndefined();
    }
    for (const x of carrying(c.recorder, "to-c-legacy")) expect(x.headers["x-team"]).toBe(CLIENT["x-team"]);
    expect(c.recorder.exchanges.some((x) => x.headers.authorization !== undefined)).toBe(false);
  });

  it("a's static values reach no other upstream", () => {
    for (const other of [b, c]) {
      for (const x of other.recorder.exchanges) {
        for (const secret of SECRETS) expect(headerValues(x.headers)).not.toContain(secret);
      }
    }
  });

  it("a reload that rotates a's token applies to the next calls", async () => {
    gateway.reload(config(A_TOKEN_ROTATED));
    const seen = a.recorder.exchanges.length;
    const answer = await callTool(routeOf(gateway, "a"), "echo", { text: "after-rotation" }, { headers: CLIENT });
    expect(answer.body.result, answer.text).toMatchObject({ content: [{ type: "text", text: "after-rotation" }] });
    const carried = carrying(a.recorder, "after-rotation");
    expect(carried).not.toEqual([]);
    for (const x of carried) expect(x.headers.authorization).toBe(A_TOKEN_ROTATED);
    for (const x of a.recorder.exchanges.slice(seen)) expect(x.headers["x-team"]).toBe(A_TEAM);
  });

  it("the static values never appear in the log, /status, /status.json, /metrics or /readyz", async () => {
    // Something worth logging on a: a JSON-RPC error from the upstream, and a refused session.
    await callTool(routeOf(gateway, "a"), "throw_error", { message: "logged-failure" }, { headers: CLIENT });
    await fetch(routeOf(gateway, "a"), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": "no-such-session",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }).then((r) => r.arrayBuffer());
    expect(lines.length).toBeGreaterThan(0);
    const pages: Record<string, string> = {};
    for (const path of ["/status", "/status.json", "/metrics", "/readyz"]) {
      const res = await fetch(`${gateway.origin}${path}`);
      pages[path] = await res.text();
      expect(res.status, path).toBeLessThan(500);
    }
    // /readyz names upstream a by its name (its address only with the metrics token), and never its headers.
    expect(pages["/readyz"]).toContain('"name":"a"');
    expect(pages["/readyz"]).not.toContain(new URL(a.url).host);
    for (const secret of SECRETS) {
      for (const line of lines) expect(line, "a log line").not.toContain(secret);
      for (const [path, text] of Object.entries(pages)) expect(text, path).not.toContain(secret);
    }
  });
});
