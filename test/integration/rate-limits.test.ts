// Rate limits (limits.rules) on a single gateway, with the memory store: real SDK clients on both eras in front
// of a real SDK 1.x upstream that records what reaches it. A limited request is a 429 with Retry-After, the
// RateLimit-Policy and RateLimit fields and data.reason "rate_limited", has an audit line, and never reaches
// the upstream; a limited tasks/get never reads its task (lean path and full route alike); callers keep their
// own budgets, a global rule is shared, and a reload changes a limit for the requests after it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayConfigInput } from "../../src/index.js";
import { createLogger } from "../../src/log/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { startLegacyPagedUpstream, type PagedUpstream } from "../helpers/paged-upstreams.js";
import { startTestGateway, testGatewayConfig, type TestGateway } from "../helpers/gateway.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import { connectModernClient, messageOf } from "../helpers/modern-client.js";
import { callTool, modernRpc } from "../helpers/modern-rpc.js";
import { MCP_ACCEPT } from "../helpers/http.js";
import { startManyGateway } from "../helpers/many-upstreams.js";
import { parseExposition, value } from "../helpers/prometheus.js";
import { startSdkUpstream } from "../fixtures/sdk-upstream.js";

const MINUTE = 60_000;
type Limits = GatewayConfigInput["limits"];

let upstream: PagedUpstream;
const gateways: TestGateway[] = [];
beforeAll(async () => {
  upstream = await startLegacyPagedUpstream({ json: true });
});
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.close(0);
});
afterAll(async () => {
  await upstream.close();
});

async function gatewayWith(limits: Limits, extra: Parameters<typeof startTestGateway>[1] = {}): Promise<TestGateway> {
  const g = await startTestGateway(upstream.url, { limits, ...extra });
  gateways.push(g);
  return g;
}

/** A legacy (≤ 2025-11-25) tools/call by hand, outside any session: enough for the gateway to count it. */
async function legacyCall(url: string, tool: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: MCP_ACCEPT, ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: tool, arguments: {} } }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

function expectLimitedAnswer(
  res: { status: number; headers: Headers },
  body: unknown,
  rule: string,
  policy: string,
  state: RegExp,
): void {
  expect(res.status).toBe(429);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get("ratelimit-policy")).toBe(policy);
  expect(res.headers.get("ratelimit")).toMatch(state);
  const error = (body as { error: { message: string; data: Record<string, unknown> } }).error;
  expect(error.data).toMatchObject({ reason: "rate_limited", rule });
  expect(error.data.retryAfterMs).toBeGreaterThan(0);
  expect(error.message).toContain(rule);
}

describe("rate limits on both eras", () => {
  const limits: Limits = { rules: [{ name: "echo-2", tool: "echo", requests: 2, perMs: MINUTE }] };

  it("SDK 1.x client (legacy pass-through): the third call is a clear 429 error and never reaches the upstream", async () => {
    const g = await gatewayWith(limits);
    const client = await connectSdkClient(g.url, { headers: { authorization: "Bearer legacy-a" } });
    try {
      const before = upstream.callsOf("echo").length;
      for (let i = 0; i < 2; i++) await client.client.callTool({ name: "echo", arguments: { text: "hi" } });
      const refused = await client.client.callTool({ name: "echo", arguments: { text: "hi" } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      // The SDK's error carries the gateway's answer: what happened, which rule, and when to retry.
      expect(messageOf(refused)).toMatch(/Rate limit exceeded/);
      expect(messageOf(refused)).toMatch(/echo-2/);
      expect(messageOf(refused)).toMatch(/retry in \d+ s/);
      expect(upstream.callsOf("echo").length - before).toBe(2);
      // Other tools are not limited.
      await client.client.callTool({ name: "count", arguments: {} });
    } finally {
      await client.close();
    }
  });

  it("SDK 2.x client (2026-07-28, era bridge): the third call is a clear 429 error and never reaches the upstream", async () => {
    const g = await gatewayWith(limits);
    const client = await connectModernClient(g.url, { headers: { authorization: "Bearer modern-a" } });
    try {
      const before = upstream.callsOf("echo").length;
      for (let i = 0; i < 2; i++) await client.client.callTool({ name: "echo", arguments: { text: "hi" } });
      const refused = await client.client.callTool({ name: "echo", arguments: { text: "hi" } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(messageOf(refused)).toMatch(/Rate limit exceeded/);
      expect(upstream.callsOf("echo").length - before).toBe(2);
      const limited = client.http.filter((x) => x.status === 429);
      expect(limited).toHaveLength(1);
      expect(limited[0]?.responseText).toContain('"rate_limited"');
    } finally {
      await client.close();
    }
  });

  it("headers on both eras: Retry-After, RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-10)", async () => {
    const g = await gatewayWith({
      rules: [
        { name: "one", tool: "echo", requests: 1, perMs: MINUTE },
        { name: "many", method: "*", per: "global", requests: 100, perMs: MINUTE },
      ],
    });
    const legacyHeaders = { authorization: "Bearer raw-legacy" };
    await legacyCall(g.url, "echo", legacyHeaders);
    const legacy = await legacyCall(g.url, "echo", legacyHeaders);
    expectLimitedAnswer(
      legacy,
      JSON.parse(legacy.text),
      "one",
      '"one";q=1;w=60, "many";q=100;w=60',
      /^"one";r=0;t=\d+, "many";r=\d+;t=\d+$/,
    );
    expect(Number(legacy.headers.get("retry-after"))).toBeLessThanOrEqual(60);

    const modernHeaders = { authorization: "Bearer raw-modern" };
    expect((await callTool(g.url, "echo", { text: "x" }, { headers: modernHeaders })).status).toBe(200);
    const modern = await callTool(g.url, "echo", { text: "x" }, { headers: modernHeaders });
    expectLimitedAnswer(
      modern,
      modern.body,
      "one",
      '"one";q=1;w=60, "many";q=100;w=60',
      /^"one";r=0;t=\d+, "many";r=\d+;t=\d+$/,
    );
  });

  it("two callers keep their own budgets; a global rule is one budget for all", async () => {
    const g = await gatewayWith({
      rules: [
        { name: "each", tool: "echo", requests: 2, perMs: MINUTE },
        { name: "all", tool: "count", per: "global", requests: 3, perMs: MINUTE },
      ],
    });
    const a = { authorization: "Bearer caller-a" };
    const b = { authorization: "Bearer caller-b" };
    const statuses = async (tool: string, who: Record<string, string>, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await callTool(g.url, tool, {}, { headers: who })).status);
      return out;
    };
    expect(await statuses("echo", a, 3)).toEqual([200, 200, 429]);
    expect(await statuses("echo", b, 3)).toEqual([200, 200, 429]);
    expect(await statuses("count", a, 2)).toEqual([200, 200]);
    expect(await statuses("count", b, 2)).toEqual([200, 429]);
  });

  it("a reload changes a limit for the requests after it", async () => {
    const g = await gatewayWith({ rules: [{ name: "r", tool: "echo", requests: 1, perMs: MINUTE }] });
    const who = { authorization: "Bearer reloader" };
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(200);
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(429);
    const plan = g.reload({
      ...testGatewayConfig(upstream.url),
      limits: { rules: [{ name: "r", tool: "echo", requests: 3, perMs: MINUTE }] },
    });
    expect(plan.live).toContain("limits.rules");
    // A changed quota starts the rule's budgets afresh.
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(200);
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(200);
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(200);
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(429);
    g.reload(testGatewayConfig(upstream.url));
    expect((await callTool(g.url, "echo", {}, { headers: who })).status).toBe(200);
  });

  it("with the gateway's injected clock: exact counts at the boundary, and the budget refills with time", async () => {
    let now = Date.parse("2026-11-26T12:00:00Z");
    const g = await gatewayWith(
      { rules: [{ name: "clocked", tool: "echo", requests: 2, perMs: MINUTE }] },
      { now: () => now },
    );
    const who = { authorization: "Bearer clocked" };
    const status = async () => (await callTool(g.url, "echo", {}, { headers: who })).status;
    expect([await status(), await status()]).toEqual([200, 200]);
    const refused = await callTool(g.url, "echo", {}, { headers: who });
    expect(refused.status).toBe(429);
    // One request refills every 30 s: exactly 30 s to wait, said in whole seconds.
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.body.error?.data).toMatchObject({ retryAfterMs: 30_000 });
    now += 29_999;
    expect(await status()).toBe(429);
    now += 1;
    expect(await status()).toBe(200);
    expect(await status()).toBe(429);
    now += MINUTE;
    expect([await status(), await status(), await status()]).toEqual([200, 200, 429]);
  });

  it("every limited request is in the audit trail", async () => {
    const lines: string[] = [];
    const g = await gatewayWith(
      { rules: [{ name: "audited", tool: "echo", requests: 1, perMs: MINUTE }] },
      { logger: createLogger("info", (l) => void lines.push(l)) },
    );
    const who = { authorization: "Bearer audited" };
    await callTool(g.url, "echo", {}, { headers: who });
    await callTool(g.url, "echo", {}, { headers: who });
    const audit = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.audit === "rate.limited");
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ rule: "audited", method: "tools/call", tool: "echo", upstream: "default" });
    expect(JSON.stringify(audit[0])).not.toContain("Bearer");
  });
});

describe("metrics and /status", () => {
  it("count refusals by rule and upstream, time the checks, and list the most limited rules of the last minute", async () => {
    const g = await gatewayWith({
      rules: [
        { name: "hot", tool: "echo", requests: 1, perMs: MINUTE },
        { name: "warm", tool: "count", requests: 1, perMs: MINUTE },
      ],
    });
    const who = { authorization: "Bearer metered" };
    for (let i = 0; i < 4; i++) await callTool(g.url, "echo", {}, { headers: who });
    for (let i = 0; i < 2; i++) await callTool(g.url, "count", {}, { headers: who });
    const text = await (await fetch(`${g.metricsOrigin}/metrics`)).text();
    const series = parseExposition(text);
    expect(value(series, "mcp_gateway_rate_limited_total", { rule: "hot", upstream: "default" })).toBe(3);
    expect(value(series, "mcp_gateway_rate_limited_total", { rule: "warm", upstream: "default" })).toBe(1);
    expect(value(series, "mcp_gateway_rate_limit_check_duration_seconds_count", {})).toBe(6);
    const status = (await (await fetch(`${g.metricsOrigin}/status.json`)).json()) as Record<string, unknown>;
    expect(status.rateLimited).toEqual([
      { rule: "hot", upstream: "default", count: 3 },
      { rule: "warm", upstream: "default", count: 1 },
    ]);
  });
});

describe("a limited tasks/get never reads its task", () => {
  /** A memory store that counts the task reads (the engine's store.get). */
  function countingStore(): { store: TaskStore; reads: () => number } {
    const inner = new MemoryTaskStore(64 * 1024 * 1024, Date.now);
    let reads = 0;
    const store = new Proxy(inner, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop === "get" && typeof value === "function")
          return (...args: unknown[]) => {
            reads += 1;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { store, reads: () => reads };
  }

  it.each([
    { path: "the lean poll path", access: false },
    { path: "the full route (access log on)", access: true },
  ])("on $path", async ({ access }) => {
    const { store, reads } = countingStore();
    const g = await startGateway(
      {
        ...testGatewayConfig(upstream.url),
        log: { level: "silent", access },
        tasks: { rules: [{ tool: "count", mode: "always" }] },
        limits: { rules: [{ name: "polls", method: "tasks/get", requests: 2, perMs: MINUTE }] },
      },
      { store },
    );
    gateways.push(g);
    const who = { authorization: "Bearer poller" };
    const created = await callTool(g.url, "count", {}, { headers: who });
    const taskId = created.body.result?.taskId as string | undefined;
    expect(taskId, created.text).toBeTypeOf("string");
    const poll = () => modernRpc(g.url, "tasks/get", { taskId }, { name: taskId as string, headers: who });
    expect((await poll()).status).toBe(200);
    expect((await poll()).status).toBe(200);
    const readsBefore = reads();
    const limited = await poll();
    expect(limited.status).toBe(429);
    expect(limited.body.error?.data).toMatchObject({ reason: "rate_limited", rule: "polls" });
    expect(limited.headers.get("ratelimit-policy")).toBe('"polls";q=2;w=60');
    expect(reads()).toBe(readsBefore);
    // Another caller's polls have their own budget (and the task is not theirs: -32602 as unknown).
    expect((await poll()).status).toBe(429);
    const other = await modernRpc(
      g.url,
      "tasks/get",
      { taskId },
      { name: taskId as string, headers: { authorization: "Bearer other" } },
    );
    expect(other.status).toBe(200);
    expect(other.body.error?.data?.reason).toBe("task_not_found");
  });
});

describe("on a federated endpoint", () => {
  it("a rule matches the member upstream's name and its own tool name, and shares the member route's budget", async () => {
    const one = await startSdkUpstream();
    const two = await startSdkUpstream();
    const g = await startManyGateway({
      upstreams: { one: { url: one.url }, two: { url: two.url } },
      federated: { pair: { upstreams: ["one", "two"] } },
      limits: { rules: [{ name: "one-echo", upstream: "one", tool: "echo", requests: 2, perMs: MINUTE }] },
    });
    gateways.push(g);
    try {
      const who = { authorization: "Bearer federated" };
      const fed = `${g.url}/pair`;
      await modernRpc(fed, "tools/list", {}, { headers: who });
      const call = (url: string, name: string) =>
        callTool(url, name, { text: "x" }, { headers: who }).then((r) => ({
          status: r.status,
          reason: r.body.error?.data?.reason,
        }));
      expect(await call(fed, "one__echo")).toEqual({ status: 200, reason: undefined });
      // The member's own route spends the same budget.
      expect(await call(`${g.url}/one`, "echo")).toEqual({ status: 200, reason: undefined });
      expect(await call(fed, "one__echo")).toEqual({ status: 429, reason: "rate_limited" });
      // The other member's echo, and another tool of the same member, are not limited.
      expect(await call(fed, "two__echo")).toEqual({ status: 200, reason: undefined });
      expect(await call(fed, "two__echo")).toEqual({ status: 200, reason: undefined });
      expect(await call(fed, "two__echo")).toEqual({ status: 200, reason: undefined });
    } finally {
      await one.close();
      await two.close();
    }
  });
});
