// The metrics' label discipline (issue 11): 10,000 distinct task ids and tool names through the real engine,
// and 10,000 distinct JSON-RPC methods and statuses through the request counter, leave a bounded number of
// series, none of them naming a task, an unlisted tool or a method. The upstream label: configured names
// only, anything else other. Also the label helpers and the rates.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { httpMethodClass, methodClass, statusClass, statusLabel, toolLabeler } from "../../src/metrics/labels.js";
import {
  PrometheusMetrics,
  RateWindow,
  type MetricsSources,
  type MetricsTotals,
  type UpstreamState,
} from "../../src/metrics/prometheus.js";
import { LocalTaskEvents } from "../../src/store/local-events.js";
import { LocalLeases } from "../../src/store/local-leases.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import type { TaskLeases } from "../../src/store/task-leases.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { TaskEngine } from "../../src/tasks/engine.js";
import { fakeRuntime } from "../helpers/fake-runtime.js";
import { parseExposition, value } from "../helpers/prometheus.js";

const N = 10_000;
const REPLICA = "replica-0123456789";

function sources(over: Partial<MetricsSources> = {}): MetricsSources {
  return {
    storeBytesBudget: 1_000,
    storeStats: () => Promise.resolve({ stored: 0, bytes: 0, unfinished: 0 }),
    runningTasks: () => new Map(),
    legacySessions: () => 0,
    pendingInputs: () => 0,
    eventStreams: () => 0,
    inFlight: () => 0,
    upstreams: () => [{ name: "default", era: "unknown" }],
    ...over,
  };
}

/** Series per metric family (histogram _bucket/_sum/_count counted under their family). */
function seriesPerFamily(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of parseExposition(text)) {
    const family = s.name.replace(/_(bucket|sum|count)$/, "");
    out.set(family, (out.get(family) ?? 0) + 1);
  }
  return out;
}

describe("cardinality", () => {
  it("stays bounded under 10,000 distinct task ids and tool names", async () => {
    const store = new MemoryTaskStore(512 * 1024 * 1024, Date.now);
    const metrics = new PrometheusMetrics({
      toolLabels: ["listed_tool"],
      upstreams: ["default", "github"],
      replicaId: REPLICA,
    });
    const engine = new TaskEngine({
      store,
      leases: new LocalLeases(store),
      events: new LocalTaskEvents(),
      limits: { maxTasks: 2 * N, maxTasksPerCaller: 2 * N, maxResultBytes: 1024 },
      now: Date.now,
      log: createLogger("silent"),
      metrics,
    });
    metrics.readState(
      sources({ storeStats: () => store.stats(), runningTasks: () => engine.runningSummary(0).byUpstream }),
    );
    const ids: string[] = [];
    const modes = ["auto", "always", "required", `mode-${Math.random()}`];
    // The single upstream (no name given: default), a configured one, and one no config names (other).
    const upstreams = [undefined, undefined, undefined, "github", "unlisted"];
    for (let i = 0; i < N; i++) {
      const tool = i % 100 === 0 ? "listed_tool" : `tool-${i}-${Math.random().toString(36).slice(2)}`;
      const created = await engine.create("caller", 60_000, 1_000, fakeRuntime(), {
        tool,
        caller: `caller-${i}`,
        mode: modes[i % modes.length],
        upstream: upstreams[i % upstreams.length],
      });
      if (!created.ok) throw new Error(created.reason);
      ids.push(created.task.taskId);
    }
    const midway = await metrics.render();
    const running = parseExposition(midway);
    expect(value(running, "mcp_gateway_tasks_running", { state: "working" })).toBe(N);
    expect(value(running, "mcp_gateway_tasks_running", { upstream: "default", state: "working" })).toBe((N * 3) / 5);
    expect(value(running, "mcp_gateway_tasks_running", { upstream: "github", state: "working" })).toBe(N / 5);
    expect(value(running, "mcp_gateway_tasks_running", { upstream: "other", state: "working" })).toBe(N / 5);
    for (const [i, id] of ids.entries()) {
      if (i % 3 === 0) await engine.apply(id, { type: "complete", result: { content: [] } });
      else if (i % 3 === 1)
        await engine.apply(id, { type: "fail", error: { code: -32603, message: `boom ${i}` }, message: `boom ${i}` });
      else await engine.cancel(id, "caller");
    }
    const text = await metrics.render();
    const samples = parseExposition(text);
    expect(value(samples, "mcp_gateway_tasks_running", { state: "working" })).toBe(0);
    // Every configured upstream keeps its series, at 0; other had none configured and is gone.
    const runningSeries = samples.filter((s) => s.name === "mcp_gateway_tasks_running");
    expect(new Set(runningSeries.map((s) => s.labels.upstream))).toEqual(new Set(["default", "github"]));
    expect(value(samples, "mcp_gateway_tasks_created_total")).toBe(N);
    expect(value(samples, "mcp_gateway_tasks_finished_total")).toBe(N);
    expect(value(samples, "mcp_gateway_tasks_created_total", { tool: "listed_tool" })).toBe(N / 100);
    for (const [upstream, share] of [
      ["default", 3 / 5],
      ["github", 1 / 5],
      ["other", 1 / 5],
    ] as const) {
      expect(value(samples, "mcp_gateway_tasks_created_total", { upstream })).toBe(N * share);
      expect(value(samples, "mcp_gateway_tasks_finished_total", { upstream })).toBe(N * share);
      expect(value(samples, "mcp_gateway_task_duration_seconds_count", { upstream })).toBe(N * share);
    }

    const families = seriesPerFamily(text);
    // upstream (default, github, other) × mode (4 known + unknown) × tool (listed + other)
    expect(families.get("mcp_gateway_tasks_created_total")).toBeLessThanOrEqual(3 * 5 * 2);
    // upstream (3) × status (3) × tool (2)
    expect(families.get("mcp_gateway_tasks_finished_total")).toBeLessThanOrEqual(3 * 3 * 2);
    // upstream (3) × status (3) × tool (2) × (15 buckets + +Inf + sum + count)
    expect(families.get("mcp_gateway_task_duration_seconds")).toBeLessThanOrEqual(3 * 3 * 2 * 18);
    const total = [...families.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeLessThan(400);
    const labelValues = new Set(samples.flatMap((s) => Object.values(s.labels)));
    for (const id of ids) expect(labelValues.has(id)).toBe(false);
    for (const v of labelValues) expect(v.startsWith("tool-")).toBe(false);
    expect(labelValues.has("unlisted")).toBe(false);
    expect(text).not.toContain("caller-");
    expect(text).not.toContain("boom");
  });

  it("maps 10,000 distinct methods and statuses onto a fixed set of request series", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default"], replicaId: REPLICA });
    metrics.readState(sources());
    const upstream = metrics.upstreamObserver("default");
    for (let i = 0; i < N; i++) {
      const method = i % 2 === 0 ? `custom/${i}` : `tasks/x${i}`;
      metrics.request(
        "mcp",
        i % 3 === 0 ? "modern" : "legacy",
        methodClass({ jsonrpc: "2.0", id: i, method }),
        100 + (i % 1_000),
        "default",
      );
      upstream.answered(i % 2 === 0 ? "POST" : "GET", 100 + (i % 1_000), 0.001);
      upstream.failed("POST", Object.assign(new Error(`e${i}`), { code: `CODE_${i}` }), false, 0.001);
    }
    const families = seriesPerFamily(await metrics.render());
    // route 1 × era 2 × class 2 × status (500 codes + other)
    expect(families.get("mcp_gateway_requests_total")).toBeLessThanOrEqual(2 * 2 * 501);
    // method 2 × status class (5 + other) × 18, plus the error series
    expect(families.get("mcp_gateway_upstream_request_duration_seconds")).toBeLessThanOrEqual(2 * 7 * 18);
    expect(families.get("mcp_gateway_upstream_errors_total")).toBe(1);
  });
});

describe("the upstream label", () => {
  const unreachable = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });

  it("on mcp_gateway_requests_total takes the configured names, (none) for no upstream, other for any other value", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default", "github"], replicaId: REPLICA });
    metrics.request("mcp", "modern", "tools/call", 200, "github");
    metrics.request("mcp", "modern", "tools/call", 200, "default");
    metrics.request("metrics", "none", "get", 200, undefined);
    for (let i = 0; i < N; i++) metrics.request("mcp", "legacy", "other", 404, `unconfigured-${i}`);
    const samples = parseExposition(await metrics.render());
    const total = "mcp_gateway_requests_total";
    expect(value(samples, total, { upstream: "github", method: "tools/call" })).toBe(1);
    expect(value(samples, total, { upstream: "default", method: "tools/call" })).toBe(1);
    expect(value(samples, total, { route: "metrics", upstream: "(none)" })).toBe(1);
    expect(value(samples, total, { upstream: "other" })).toBe(N);
    expect(seriesPerFamily(await metrics.render()).get(total)).toBe(4);
  });

  it("of a bound request counter is the series request() counts into, made by its first count", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default", "github"], replicaId: REPLICA });
    const total = "mcp_gateway_requests_total";
    const poll = metrics.requestCounter("mcp", "modern", "tasks/get", 200, "github");
    const stray = metrics.requestCounter("mcp", "modern", "tasks/get", 200, "unconfigured");
    expect(seriesPerFamily(await metrics.render()).get(total) ?? 0).toBe(0);
    poll();
    poll();
    metrics.request("mcp", "modern", "tasks/get", 200, "github");
    stray();
    const samples = parseExposition(await metrics.render());
    expect(value(samples, total, { upstream: "github", method: "tasks/get", status: "200" })).toBe(3);
    expect(value(samples, total, { upstream: "other", method: "tasks/get" })).toBe(1);
    expect(seriesPerFamily(await metrics.render()).get(total)).toBe(2);
    expect(metrics.totals().requests).toBe(4);
  });

  it("is bound once per observer, to the configured name it was built for", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default", "github"], replicaId: REPLICA });
    const single = metrics.upstreamObserver("default");
    const github = metrics.upstreamObserver("github");
    single.answered("POST", 200, 0.001);
    github.answered("POST", 200, 0.001);
    github.answered("POST", 503, 0.001);
    github.answered("GET", 200, 0.001);
    github.failed("POST", unreachable, false, 0.001);
    single.failed("DELETE", new Error("stopped"), true, 0.001);
    const samples = parseExposition(await metrics.render());
    const count = "mcp_gateway_upstream_request_duration_seconds_count";
    expect(value(samples, count, { upstream: "default", method: "POST", status_class: "2xx" })).toBe(1);
    expect(value(samples, count, { upstream: "github", method: "POST", status_class: "2xx" })).toBe(1);
    expect(value(samples, count, { upstream: "github", method: "POST", status_class: "5xx" })).toBe(1);
    expect(value(samples, count, { upstream: "github", method: "GET", status_class: "2xx" })).toBe(1);
    expect(value(samples, count, { upstream: "github", method: "POST", status_class: "error" })).toBe(1);
    expect(value(samples, count, { upstream: "default", method: "DELETE", status_class: "error" })).toBe(1);
    expect(value(samples, count, { upstream: "github" })).toBe(4);
    expect(value(samples, count, { upstream: "default" })).toBe(2);
    const errors = "mcp_gateway_upstream_errors_total";
    expect(value(samples, errors, { upstream: "github", reason: "upstream_unreachable" })).toBe(1);
    expect(value(samples, errors, { upstream: "default", reason: "aborted" })).toBe(1);
    expect(value(samples, errors, { upstream: "default", reason: "upstream_unreachable" })).toBeUndefined();
    // Every upstream series names its upstream.
    const upstreamSeries = samples.filter((s) => s.name.startsWith("mcp_gateway_upstream_"));
    expect(upstreamSeries.length).toBeGreaterThan(0);
    for (const s of upstreamSeries) expect(["default", "github"]).toContain(s.labels.upstream);
    expect(metrics.totals()).toMatchObject({ upstreamRequests: 6, upstreamErrors: 2 });
  });

  it("counts a name that is not configured as other, and takes the new names of a reload", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default"], replicaId: REPLICA });
    for (let i = 0; i < 1_000; i++) {
      const stray = metrics.upstreamObserver(i % 2 === 0 ? `https://mcp-${i}.example/mcp?key=secret` : `name-${i}`);
      stray.answered("POST", 200, 0.001);
      stray.failed("POST", unreachable, false, 0.001);
    }
    metrics.setUpstreams(["default", "added"]);
    metrics.upstreamObserver("added").answered("POST", 200, 0.001);
    const text = await metrics.render();
    const samples = parseExposition(text);
    const count = "mcp_gateway_upstream_request_duration_seconds_count";
    expect(value(samples, count, { upstream: "other", status_class: "2xx" })).toBe(1_000);
    expect(value(samples, "mcp_gateway_upstream_errors_total", { upstream: "other" })).toBe(1_000);
    expect(value(samples, count, { upstream: "added" })).toBe(1);
    const upstreams = new Set(samples.filter((s) => s.labels.upstream !== undefined).map((s) => s.labels.upstream));
    expect([...upstreams].sort()).toEqual(["added", "other"]);
    expect(text).not.toContain("example");
    expect(text).not.toContain("secret");
  });

  it("names every configured upstream in upstream_info, with its era, and a stdio one's processes", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default", "github"], replicaId: REPLICA });
    let configured: UpstreamState[] = [
      { name: "default", era: "legacy", processes: 2 },
      { name: "github", era: "modern" },
    ];
    metrics.readState(sources({ upstreams: () => configured }));
    let samples = parseExposition(await metrics.render());
    const info = samples.filter((s) => s.name === "mcp_gateway_upstream_info");
    expect(info.map((s) => s.labels)).toEqual([
      { upstream: "default", era: "legacy" },
      { upstream: "github", era: "modern" },
    ]);
    expect(info.every((s) => s.value === 1)).toBe(true);
    const processes = samples.filter((s) => s.name === "mcp_gateway_upstream_processes");
    expect(processes).toEqual([
      {
        name: "mcp_gateway_upstream_processes",
        labels: { upstream: "default", replica: REPLICA.slice(0, 8) },
        value: 2,
      },
    ]);

    // A reload: github goes, gitlab comes (its era not probed yet); a name no config gives is other.
    metrics.setUpstreams(["default", "gitlab"]);
    configured = [
      { name: "default", era: "legacy", processes: 3 },
      { name: "gitlab", era: "" },
      { name: "http://10.0.0.1:8080", era: "modern" },
    ];
    samples = parseExposition(await metrics.render());
    expect(samples.filter((s) => s.name === "mcp_gateway_upstream_info").map((s) => s.labels)).toEqual([
      { upstream: "default", era: "legacy" },
      { upstream: "gitlab", era: "unknown" },
      { upstream: "other", era: "modern" },
    ]);
    expect(value(samples, "mcp_gateway_upstream_processes", { upstream: "default" })).toBe(3);
  });

  it("counts a task by the upstream its id names, also one that another process created", async () => {
    const store = new MemoryTaskStore(16 * 1024 * 1024, Date.now);
    const limits = { maxTasks: 10, maxTasksPerCaller: 10, maxResultBytes: 1024 };
    const engineOn = (taskStore: TaskStore, leases: TaskLeases, metrics?: PrometheusMetrics): TaskEngine =>
      new TaskEngine({
        store: taskStore,
        leases,
        events: new LocalTaskEvents(),
        limits,
        now: Date.now,
        log: createLogger("silent"),
        metrics,
      });
    const metrics = new PrometheusMetrics({ toolLabels: ["t"], upstreams: ["default", "github"], replicaId: REPLICA });
    // Created and ended here: counted under the upstream it was created for.
    const here = engineOn(store, new LocalLeases(store), metrics);
    const mine = await here.create("caller", 60_000, 1_000, fakeRuntime(), {
      tool: "t",
      caller: "c",
      mode: "auto",
      upstream: "github",
    });
    if (!mine.ok) throw new Error(mine.reason);
    await here.apply(mine.task.taskId, { type: "complete", result: { content: [] } });
    // Created by a process that is gone (no metrics here); this one finds its lease lapsed and ends it failed,
    // knowing nothing of the task but its id.
    const gone = engineOn(store, new LocalLeases(store));
    const theirs = await gone.create("caller", 60_000, 1_000, fakeRuntime(), {
      tool: "t",
      caller: "c",
      mode: "auto",
      upstream: "github",
    });
    if (!theirs.ok) throw new Error(theirs.reason);
    const lapsedView: TaskStore = Object.create(store, {
      get: {
        value: async (id: string) => {
          const stored = await store.get(id);
          return stored && !["completed", "failed", "cancelled"].includes(stored.status)
            ? { ...stored, runner: null }
            : stored;
        },
      },
    }) as TaskStore;
    const ending = new LocalLeases(store);
    ending.endLapsed = async (task) => (await store.update(task)) === "ok";
    const finder = engineOn(lapsedView, ending, metrics);
    expect((await finder.get(theirs.task.taskId, "caller"))?.status).toBe("failed");

    const samples = parseExposition(await metrics.render());
    expect(value(samples, "mcp_gateway_tasks_created_total", { upstream: "github", mode: "auto", tool: "t" })).toBe(1);
    expect(value(samples, "mcp_gateway_tasks_finished_total", { upstream: "github", status: "completed" })).toBe(1);
    // Taken over: no tool known (other), the upstream still from the id.
    expect(
      value(samples, "mcp_gateway_tasks_finished_total", { upstream: "github", status: "failed", tool: "other" }),
    ).toBe(1);
    expect(value(samples, "mcp_gateway_task_duration_seconds_count", { upstream: "github" })).toBe(2);
    expect(value(samples, "mcp_gateway_tasks_finished_total", { upstream: "default" })).toBeUndefined();
  });
});

describe("labels", () => {
  it("classifies JSON-RPC messages into a fixed set", () => {
    expect(methodClass({ method: "tools/call" })).toBe("tools/call");
    expect(methodClass({ method: "tasks/get" })).toBe("tasks");
    expect(methodClass({ method: "notifications/initialized" })).toBe("notification");
    expect(methodClass({ method: "resources/read" })).toBe("resources");
    expect(methodClass({ method: "server/discover" })).toBe("discover");
    expect(methodClass({ id: 1, result: {} })).toBe("response");
    expect(methodClass([{ method: "ping" }])).toBe("batch");
    expect(methodClass({ method: "x".repeat(10_000) })).toBe("other");
    expect(httpMethodClass("GET")).toBe("get");
    expect(httpMethodClass("PATCH")).toBe("other");
    expect(statusLabel(404)).toBe("404");
    expect(statusLabel(1_000)).toBe("other");
    expect(statusClass(503)).toBe("5xx");
    const tool = toolLabeler(["a"]);
    expect([tool("a"), tool("b"), tool(undefined)]).toEqual(["a", "other", "other"]);
  });
});

describe("the last minute", () => {
  it("counts what happened over the last minute from samples of the totals", () => {
    let now = 0;
    const totals: MetricsTotals = {
      requests: 0,
      upstreamRequests: 0,
      upstreamErrors: 0,
      tasksCreated: 0,
      tasksFinished: 0,
      promoted: 0,
    };
    const window = new RateWindow(
      () => ({ ...totals }),
      () => now,
    );
    expect(window.lastMinute()).toBeNull();
    now = 1_000;
    totals.requests = 3;
    // Younger than a minute: what happened so far, over the seconds it covers.
    expect(window.lastMinute()).toMatchObject({ windowSeconds: 1, counts: { requests: 3 } });
    for (let s = 2; s <= 90; s++) {
      now = s * 1_000;
      totals.requests += 10;
      totals.tasksCreated += s % 2;
      window.sample();
    }
    const last = window.lastMinute();
    expect(last?.windowSeconds).toBe(60);
    expect(last?.counts.requests).toBe(600);
    expect(last?.counts.tasksCreated).toBe(30);
  });
});

describe("federated endpoints", () => {
  it("counts members left out of a merged answer, and reads the open breakers at scrape time", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["one", "two"], replicaId: REPLICA });
    let twoState = "open";
    metrics.readState(
      sources({
        federated: () => [
          {
            name: "fed",
            members: [
              { name: "one", state: "served" },
              { name: "two", state: twoState },
            ],
          },
        ],
      }),
    );
    const observer = metrics.federationObserver("fed");
    observer.missing("two", "error");
    observer.missing("two", "error");
    observer.missing("two", "open");
    observer.missing("one", "timeout");
    let samples = parseExposition(await metrics.render());
    const missing = "mcp_gateway_federation_list_missing_total";
    expect(value(samples, missing, { federated: "fed", upstream: "two", reason: "error" })).toBe(2);
    expect(value(samples, missing, { federated: "fed", upstream: "two", reason: "open" })).toBe(1);
    expect(value(samples, missing, { federated: "fed", upstream: "one", reason: "timeout" })).toBe(1);
    const open = "mcp_gateway_federation_breaker_open";
    expect(value(samples, open, { federated: "fed", upstream: "two" })).toBe(1);
    expect(value(samples, open, { federated: "fed", upstream: "one" })).toBe(0);
    twoState = "served";
    samples = parseExposition(await metrics.render());
    expect(value(samples, open, { federated: "fed", upstream: "two" })).toBe(0);
  });
});

describe("reload feedback", () => {
  it("says when the config in force was loaded, whether the last reload took, and how many failed", async () => {
    const metrics = new PrometheusMetrics({ toolLabels: [], upstreams: ["default"], replicaId: REPLICA });
    let reloads = { lastSuccessAt: 1_900_000_000_000, lastOk: true, failures: 0 };
    metrics.readState(sources({ reloads: () => reloads }));
    let samples = parseExposition(await metrics.render());
    const replica = REPLICA.slice(0, 8);
    expect(value(samples, "mcp_gateway_config_last_reload_success_timestamp_seconds", { replica })).toBe(1_900_000_000);
    expect(value(samples, "mcp_gateway_config_last_reload_successful", { replica })).toBe(1);
    expect(value(samples, "mcp_gateway_config_reload_failures_total", { replica })).toBe(0);
    reloads = { lastSuccessAt: 1_900_000_000_000, lastOk: false, failures: 2 };
    samples = parseExposition(await metrics.render());
    expect(value(samples, "mcp_gateway_config_last_reload_successful")).toBe(0);
    expect(value(samples, "mcp_gateway_config_reload_failures_total")).toBe(2);
  });
});
