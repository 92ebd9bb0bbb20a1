// GET /metrics after known traffic (issue 11): request counts, the upstream histogram and errors,
// tasks created, running (up, then down), finished, their duration, promotion decisions, the store's
// gauges; who may read /metrics and /status; metrics.port; metrics off.
import { legacyInitialize } from "../helpers/http.js";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGateway, startGateway, type GatewayConfigInput } from "../../src/index.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import type { TestGateway } from "../helpers/gateway.js";
import { modernRpc } from "../helpers/modern-http.js";
import { pollUntil } from "../helpers/poll.js";
import { getFreePort } from "../helpers/ports.js";
import { parseExposition, value, type Sample } from "../helpers/prometheus.js";

const TASKS = "io.modelcontextprotocol/tasks";
const DECLARING = { extensions: { [TASKS]: {} } };
const TOKEN = "metrics-token-0123456789";

async function scrape(origin: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${origin}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return parseExposition(await res.text());
}

let upstream: SdkUpstream;
beforeAll(async () => {
  upstream = await startSdkUpstream();
});
afterAll(async () => {
  await upstream.close();
});

function config(extra: Partial<GatewayConfigInput> = {}): GatewayConfigInput {
  return {
    upstream: { url: upstream.url },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
    tasks: { thresholdMs: 100, adaptive: false },
    metrics: { toolLabels: ["slow_task"] },
    ...extra,
  };
}

describe("metrics after known traffic", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(config());
  });
  afterAll(async () => {
    await gw.close(0);
  });

  it("counts requests, upstream answers, promotions and a task from creation to its end", async () => {
    const origin = gw.metricsOrigin as string;
    expect(origin).toBe(gw.origin);
    const before = await scrape(origin);
    expect(value(before, "mcp_gateway_tasks_running", { state: "working" })).toBe(0);
    expect(value(before, "mcp_gateway_store_tasks")).toBe(0);

    // A call answered within the threshold: plain, "in time".
    const fast = await modernRpc(
      gw.url,
      "tools/call",
      { name: "slow_task", arguments: { durationMs: 0, steps: 1 } },
      { capabilities: DECLARING },
    );
    expect(fast.status).toBe(200);
    expect(fast.message.result).toMatchObject({ resultType: "complete" });

    // A call past the threshold: promoted to a task, which runs, then completes.
    const slow = await modernRpc(
      gw.url,
      "tools/call",
      { name: "slow_task", arguments: { durationMs: 1_500, steps: 1 } },
      { capabilities: DECLARING },
    );
    const created = slow.message.result as { resultType: string; taskId: string };
    expect(created.resultType).toBe("task");

    const during = await scrape(origin);
    expect(value(during, "mcp_gateway_tasks_running", { upstream: "default", state: "working" })).toBe(1);
    expect(value(during, "mcp_gateway_tasks_running", { state: "input_required" })).toBe(0);
    expect(value(during, "mcp_gateway_tasks_unfinished")).toBe(1);
    expect(value(during, "mcp_gateway_store_tasks")).toBe(1);
    expect(value(during, "mcp_gateway_store_bytes")).toBeGreaterThan(0);
    expect(
      value(during, "mcp_gateway_tasks_created_total", { upstream: "default", mode: "auto", tool: "slow_task" }),
    ).toBe(1);
    expect(value(during, "mcp_gateway_promotion_decisions_total", { outcome: "promoted" })).toBe(1);
    expect(value(during, "mcp_gateway_promotion_decisions_total", { outcome: "in_time" })).toBe(1);
    expect(value(during, "mcp_gateway_tasks_finished_total")).toBeUndefined();

    const polls = await pollUntil(
      async () => {
        const got = await modernRpc(gw.url, "tasks/get", { taskId: created.taskId }, { capabilities: DECLARING });
        return (got.message.result as { status?: string } | undefined)?.status;
      },
      (status) => status === "completed",
      10_000,
    );
    expect(polls).toBe("completed");

    const after = await scrape(origin);
    expect(value(after, "mcp_gateway_tasks_running", { state: "working" })).toBe(0);
    expect(value(after, "mcp_gateway_tasks_unfinished")).toBe(0);
    expect(value(after, "mcp_gateway_store_tasks")).toBe(1);
    const ended = { upstream: "default", status: "completed", tool: "slow_task" };
    expect(value(after, "mcp_gateway_tasks_finished_total", ended)).toBe(1);
    expect(value(after, "mcp_gateway_task_duration_seconds_count", ended)).toBe(1);
    // It ran about 1.5 s: in the buckets from 2.5 s up, not in the one of 0.5 s.
    expect(value(after, "mcp_gateway_task_duration_seconds_bucket", { status: "completed", le: "0.5" })).toBe(0);
    expect(value(after, "mcp_gateway_task_duration_seconds_bucket", { status: "completed", le: "+Inf" })).toBe(1);
    // Two tools/call, and at least one tasks/get, all modern and 200.
    expect(
      value(after, "mcp_gateway_requests_total", {
        route: "mcp",
        upstream: "default",
        era: "modern",
        method: "tools/call",
        status: "200",
      }),
    ).toBe(2);
    expect(
      value(after, "mcp_gateway_requests_total", { route: "mcp", era: "modern", method: "tasks", status: "200" }),
    ).toBeGreaterThanOrEqual(1);
    // The scrapes themselves are counted too.
    expect(value(after, "mcp_gateway_requests_total", { route: "metrics", upstream: "(none)", status: "200" })).toBe(2);
    // Upstream: the session's initialize, notifications and both calls went out as POSTs answered 2xx, all
    // counted for the single upstream, which is called default.
    expect(
      value(after, "mcp_gateway_upstream_request_duration_seconds_count", {
        upstream: "default",
        method: "POST",
        status_class: "2xx",
      }),
    ).toBeGreaterThanOrEqual(3);
    const upstreamSeries = after.filter((s) => s.name.startsWith("mcp_gateway_upstream_request"));
    expect(upstreamSeries.every((s) => s.labels.upstream === "default")).toBe(true);
    expect(value(after, "mcp_gateway_legacy_sessions")).toBe(1);
    expect(value(after, "mcp_gateway_upstream_info", { upstream: "default", era: "legacy" })).toBe(1);
    expect(after.filter((s) => s.name === "mcp_gateway_upstream_info")).toHaveLength(1);
    expect(value(after, "mcp_gateway_store_budget_bytes")).toBe(256 * 1024 * 1024);
    expect(value(after, "mcp_gateway_store_up")).toBe(1);
    // Per-process gauges carry the replica; global ones do not.
    const running = after.find((s) => s.name === "mcp_gateway_tasks_running");
    expect(running?.labels.replica).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(after.find((s) => s.name === "mcp_gateway_tasks_unfinished")?.labels.replica).toBeUndefined();
    // The default Node process metrics, prefixed.
    expect(value(after, "mcp_gateway_process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(value(after, "mcp_gateway_nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    // Nothing else is ever named.
    expect(after.every((s) => s.name.startsWith("mcp_gateway_"))).toBe(true);
    expect(JSON.stringify(after)).not.toContain(created.taskId);
  });

  it("counts legacy traffic by era and method class, and a tool it does not list as other", async () => {
    const init = await fetch(gw.url, legacyInitialize());
    await init.arrayBuffer();
    expect(init.status).toBe(200);
    const unlisted = await modernRpc(
      gw.url,
      "tools/call",
      { name: "fail", arguments: {} },
      { capabilities: DECLARING },
    );
    expect(unlisted.status).toBe(200);
    const samples = await scrape(gw.origin);
    expect(
      value(samples, "mcp_gateway_requests_total", {
        route: "mcp",
        era: "legacy",
        method: "initialize",
        status: "200",
      }),
    ).toBe(1);
    const tools = new Set(samples.filter((s) => s.labels.tool !== undefined).map((s) => s.labels.tool));
    expect([...tools].every((t) => t === "slow_task" || t === "other")).toBe(true);
  });
});

describe("the Grafana dashboard (examples/grafana-dashboard.json)", () => {
  it("queries only metrics the gateway exposes", async () => {
    const gw = await startGateway(config());
    try {
      const text = await (await fetch(`${gw.origin}/metrics`)).text();
      const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
      const dashboard = await readFile(new URL("../../examples/grafana-dashboard.json", import.meta.url), "utf8");
      const used = new Set(
        [...dashboard.matchAll(/mcp_gateway_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, "")),
      );
      expect(used.size).toBeGreaterThan(10);
      for (const name of used) expect(exposed.has(name), name).toBe(true);
    } finally {
      await gw.close(0);
    }
  });

  it("has an upstream variable that every query of a metric with the upstream label follows", async () => {
    const dashboard = JSON.parse(
      await readFile(new URL("../../examples/grafana-dashboard.json", import.meta.url), "utf8"),
    ) as {
      templating: { list: Array<{ name: string; definition: string; multi: boolean; includeAll: boolean }> };
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    const variable = dashboard.templating.list.find((v) => v.name === "upstream");
    expect(variable).toMatchObject({ multi: true, includeAll: true });
    expect(variable?.definition).toMatch(/^label_values\(mcp_gateway_upstream_info\b.*, upstream\)$/);
    // The metrics that carry the upstream label (metrics/prometheus.ts).
    const labelled =
      /mcp_gateway_(upstream_request_duration_seconds_(bucket|count|sum)|upstream_errors_total|upstream_info|upstream_processes|tasks_created_total|tasks_finished_total|task_duration_seconds_(bucket|count|sum)|tasks_running)\{([^}]*)\}/g;
    let selectors = 0;
    const breakdowns = new Set<string>();
    for (const panel of dashboard.panels)
      for (const { expr } of panel.targets ?? []) {
        for (const m of expr.matchAll(labelled)) {
          selectors += 1;
          expect(m[4], `${panel.title}: ${m[0]}`).toContain('upstream=~"$upstream"');
        }
        if (/by \(upstream\b/.test(expr)) breakdowns.add(panel.title);
      }
    expect(selectors).toBeGreaterThan(10);
    // Upstream traffic, errors, latency and tasks, each also per upstream.
    expect(breakdowns.size).toBeGreaterThanOrEqual(5);
  });
});

describe("upstream errors", () => {
  it("counts an unreachable upstream by reason", async () => {
    const port = await getFreePort();
    const gw = await startGateway({
      ...config(),
      upstream: { url: `http://127.0.0.1:${port}/mcp`, connectTimeoutMs: 1_000 },
    });
    try {
      const res = await modernRpc(gw.url, "tools/list", {});
      expect(res.status).toBe(502);
      const samples = await scrape(gw.origin);
      expect(
        value(samples, "mcp_gateway_upstream_errors_total", { upstream: "default", reason: "upstream_unreachable" }),
      ).toBeGreaterThanOrEqual(1);
      expect(value(samples, "mcp_gateway_requests_total", { route: "mcp", method: "tools/list", status: "502" })).toBe(
        1,
      );
    } finally {
      await gw.close(0);
    }
  });
});

describe("who may read /metrics and /status", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(config({ metrics: { token: TOKEN } }));
  });
  afterAll(async () => {
    await gw.close(0);
  });

  it("wants the bearer token for /metrics when one is set", async () => {
    const none = await fetch(`${gw.origin}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    const wrong = await fetch(`${gw.origin}/metrics`, { headers: { authorization: "Bearer not-the-token-at-all" } });
    expect(wrong.status).toBe(401);
    const samples = await scrape(gw.origin, { authorization: `Bearer ${TOKEN}` });
    expect(value(samples, "mcp_gateway_requests_total", { route: "metrics", status: "401" })).toBe(2);
  });

  it("applies the Origin rules", async () => {
    const res = await fetch(`${gw.origin}/metrics`, {
      headers: { origin: "https://evil.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(403);
    const page = await fetch(`${gw.origin}/status.json`, { headers: { origin: "https://evil.example" } });
    expect(page.status).toBe(403);
  });

  it("serves the status page to loopback clients, with no identities and truncated ids", async () => {
    const page = await fetch(`${gw.origin}/status`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await page.text()).toContain("mcp-task-gateway");
    const json = await fetch(`${gw.origin}/status.json`);
    expect(json.status).toBe(200);
    const body = (await json.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ upstream: { reachable: true }, tasks: { storeUp: true }, sessions: {} });
  });
});

describe("the status page away from loopback", () => {
  // createGateway's fetch has no socket, so the request is not from loopback: what a remote client gets.
  it("wants the metrics token for its data, and answers 403 without a token configured", async () => {
    const withToken = createGateway(config({ metrics: { token: TOKEN } }));
    const withoutToken = createGateway(config());
    try {
      expect((await withToken.fetch(new Request("http://gw.example/status.json"))).status).toBe(401);
      const ok = await withToken.fetch(
        new Request("http://gw.example/status.json", { headers: { authorization: `Bearer ${TOKEN}` } }),
      );
      expect(ok.status).toBe(200);
      // The page itself holds no data: it loads, and sends the token from its #fragment.
      expect((await withToken.fetch(new Request("http://gw.example/status"))).status).toBe(200);
      expect((await withoutToken.fetch(new Request("http://gw.example/status"))).status).toBe(403);
      expect((await withoutToken.fetch(new Request("http://gw.example/status.json"))).status).toBe(403);
      // /metrics has no loopback rule: without a token it answers anyone the Origin rules let through.
      expect((await withoutToken.fetch(new Request("http://gw.example/metrics"))).status).toBe(200);
    } finally {
      await Promise.all([withToken.shutdown(0), withoutToken.shutdown(0)]);
    }
  });

  it("is public with metrics.status public, and gone with off", async () => {
    const open = createGateway(config({ metrics: { status: "public" } }));
    const off = createGateway(config({ metrics: { status: "off" } }));
    try {
      expect((await open.fetch(new Request("http://gw.example/status.json"))).status).toBe(200);
      expect((await off.fetch(new Request("http://gw.example/status.json"))).status).toBe(404);
      expect((await off.fetch(new Request("http://gw.example/metrics"))).status).toBe(200);
    } finally {
      await Promise.all([open.shutdown(0), off.shutdown(0)]);
    }
  });
});

describe("metrics.port", () => {
  it("serves /metrics and /status on their own listener, and not on the main one", async () => {
    const gw = await startGateway(config({ metrics: { port: 0 } }));
    try {
      expect(gw.metricsOrigin).not.toBe(gw.origin);
      const samples = await scrape(gw.metricsOrigin as string);
      expect(value(samples, "mcp_gateway_store_up")).toBe(1);
      expect((await fetch(`${gw.metricsOrigin}/status.json`)).status).toBe(200);
      expect((await fetch(`${gw.origin}/metrics`)).status).toBe(404);
      expect((await fetch(`${gw.metricsOrigin}/mcp`, { method: "POST" })).status).toBe(404);
    } finally {
      await gw.close(0);
    }
  });
});

describe("metrics off", () => {
  it("has no /metrics and no /status", async () => {
    const gw = await startGateway(config({ metrics: { enabled: false } }));
    try {
      expect(gw.metricsOrigin).toBeUndefined();
      expect((await fetch(`${gw.origin}/metrics`)).status).toBe(404);
      expect((await fetch(`${gw.origin}/status`)).status).toBe(404);
      const res = await modernRpc(
        gw.url,
        "tools/call",
        { name: "slow_task", arguments: { durationMs: 0, steps: 1 } },
        { capabilities: DECLARING },
      );
      expect(res.status).toBe(200);
    } finally {
      await gw.close(0);
    }
  });
});
