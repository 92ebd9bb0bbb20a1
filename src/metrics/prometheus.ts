// The Prometheus metrics (issue 11), on prom-client with a registry per gateway.
//
// Two kinds of numbers:
// - events, counted where they happen: requests, upstream answers and errors, tasks created and finished,
//   promotion decisions. The hot path pays a Map lookup and an increment: label children are cached per
//   label combination, and every label value is drawn from a bounded set (labels.ts). The `upstream` label
//   takes the configured upstream names only (setUpstreams); any other value is counted as "other".
// - state, read at scrape time in collect(): the task store's counts (global: every replica sharing the
//   store reports the same value, so aggregate them with max, not sum), and what this process holds
//   (tasks it runs, sessions, MRTR exchanges, event streams), labelled `replica` so a sum over replicas is
//   the fleet's total. One scrape reads the sources once (a snapshot shared by every collect()).
//
// The default Node process metrics (mcp_gateway_process_*, mcp_gateway_nodejs_*) are collected once per
// process, in a registry of their own shared by every gateway in it, and appended to each scrape.
import type { StatusAdaptiveTool } from "./status-page.js";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from "prom-client";
import { SeriesHistogram } from "./series-histogram.js";
import { classifyUpstreamFailure } from "../protocol/errors.js";
import type { GatewayMetrics, PromotionOutcome, TaskEnding } from "./gateway-metrics.js";
import {
  ERROR_CLASS,
  NO_UPSTREAM_LABEL,
  STATUS_CLASSES,
  statusClassIndex,
  statusLabel,
  toolLabeler,
  type EraLabel,
} from "./labels.js";

/** One series of the request counter: its labels (route, upstream, era, method, status) and its count. */
interface RequestCount {
  labels: [string, string, string, string, string];
  n: number;
}

/** What the store says, over every process sharing it. */
interface StoreCounts {
  stored: number;
  bytes: number;
  unfinished: number;
}

/** Adaptive promotion's decision counts since start (tasks/latency-history.ts). */
interface AdaptiveCounts {
  atOnce: number;
  atThreshold: number;
  plain: number;
  eager: number;
}

/** Unfinished tasks of one upstream that this process runs, by state. */
interface RunningCounts {
  working: number;
  inputRequired: number;
}

/** One upstream the gateway serves, as a scrape sees it. */
export interface UpstreamState {
  /** Its configured name (config/upstream-set.ts; the single upstream is default): the `upstream` label. */
  name: string;
  /** "legacy", "modern", or "unknown" before the first probe. */
  era: string;
  /** A stdio upstream (command): its child processes alive; undefined for an HTTP upstream. */
  processes?: number | undefined;
  /** Of those, the warm ones waiting for a session (upstream.warmProcesses). */
  warmProcesses?: number | undefined;
  /** New sessions refused since the start: over a caller's share, or over maxProcesses (a stdio upstream). */
  processRefusals?: { callerShare: number; maxProcesses: number } | undefined;
}

/** A federated endpoint's members and their breakers, as a scrape sees them (gateway/federation.ts). */
export interface FederatedState {
  /** Its configured name: the `federated` label. */
  name: string;
  /** Its members (configured upstream names), with state "open" while the breaker skips them. */
  members: readonly { name: string; state: string }[];
}

/** The shape of a federated endpoint's observer (federated/endpoint.ts), structurally. */
export interface FederatedObserverLike {
  missing(upstream: string, reason: "timeout" | "error" | "open"): void;
}

/** Where scrape-time values come from (wired by the composition root once the parts it reads exist). */
export interface MetricsSources {
  storeBytesBudget: number;
  storeStats(): Promise<StoreCounts>;
  /** Unfinished tasks whose upstream call runs in this process, by upstream (the name in the task id) and state. */
  runningTasks(): ReadonlyMap<string, RunningCounts>;
  legacySessions(): number;
  pendingInputs(): number;
  eventStreams(): number;
  inFlight(): number;
  /** Every upstream configured now (after a reload, the new set), in the config's order. */
  upstreams(): readonly UpstreamState[];
  adaptive?: (() => AdaptiveCounts) | undefined;
  /** The tools adaptive promotion tracks, with their state and quantiles (the most recently used). */
  adaptiveTools?: (() => readonly StatusAdaptiveTool[]) | undefined;
  /** The federated endpoints (configured now) and their members' breakers. */
  federated?: (() => readonly FederatedState[]) | undefined;
  /** Tool definitions waiting for approval, by upstream (pinning), as this process last read them. */
  pinsPending?: (() => ReadonlyMap<string, number>) | undefined;
  /** Reloads of this process's config (SIGHUP, --watch-config): the last success and the failures. */
  reloads?: (() => ReloadCounts) | undefined;
}

/** What a scrape says of the reloads (gateway/reload-history.ts). */
interface ReloadCounts {
  /** When the config in force was loaded (the start, or the last successful reload), ms since the epoch. */
  lastSuccessAt: number;
  /** Whether the last reload tried succeeded (true before any). */
  lastOk: boolean;
  /** Reloads that failed since the start. */
  failures: number;
}

/** Running totals the status page turns into rates (per process). */
export interface MetricsTotals {
  requests: number;
  upstreamRequests: number;
  upstreamErrors: number;
  tasksCreated: number;
  tasksFinished: number;
  promoted: number;
}

/** Structurally credentials/source.ts's CredentialObserver (metrics/ may not import credentials/). */
export interface CredentialObserverLike {
  token(
    upstream: string,
    mode: string,
    kind: "fetch" | "exchange" | "refresh" | "cache_hit" | "consent_required",
    ok: boolean,
  ): void;
}

/** The shape of the rate limiter's observer (ratelimit/limiter.ts), structurally. */
export interface RateLimitObserverLike {
  limited(rule: string, upstream: string): void;
  checked(seconds: number): void;
  storeDown(action: "allow" | "deny"): void;
}

/** The shape of UpstreamClient's observer (upstream/client.ts), structurally. */
export interface UpstreamObserverLike {
  answered(method: string, status: number, seconds: number): void;
  failed(method: string, err: unknown, aborted: boolean, seconds: number): void;
}

export interface PrometheusOptions {
  /** This process's replica id (a short form of it goes into the `replica` label). */
  replicaId: string;
  /** metrics.toolLabels: the tool names that may appear as label values. */
  toolLabels: readonly string[];
  /**
   * The configured upstream names (config/upstream-set.ts upstreamEntries; the single upstream is default): the
   * values the `upstream` label may take, any other being counted as "other". A reload gives the new ones with
   * setUpstreams.
   */
  upstreams: readonly string[];
}

const UPSTREAM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** A rate-limit check: microseconds in memory, one Redis round trip with replicas. */
const RATE_CHECK_BUCKETS = [0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];
const TASK_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400];
const SNAPSHOT_MS = 250;

let processRegistry: Registry | undefined;
/** The default Node process metrics, collected once per process whatever the number of gateways in it. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: "mcp_gateway_" });
  }
  return processRegistry;
}

interface Snapshot {
  store: StoreCounts | undefined;
  running: ReadonlyMap<string, RunningCounts>;
  sessions: number;
  pending: number;
  streams: number;
  inFlight: number;
  upstreams: readonly UpstreamState[];
  adaptive: AdaptiveCounts | undefined;
}

interface Inc {
  inc(value?: number): void;
}
interface Observe {
  observe(value: number): void;
}

export class PrometheusMetrics implements GatewayMetrics {
  readonly enabled = true;
  readonly registry = new Registry();
  readonly replica: string;
  private readonly tool: (tool: string | undefined) => string;
  /** The configured upstream names: the `upstream` label's values, besides "other". */
  private upstreams: ReadonlySet<string>;
  private stateRead = false;
  private snap: { at: number; value: Promise<Snapshot> } | undefined;
  private readonly t: MetricsTotals = {
    requests: 0,
    upstreamRequests: 0,
    upstreamErrors: 0,
    tasksCreated: 0,
    tasksFinished: 0,
    promoted: 0,
  };

  private readonly upstreamDuration: SeriesHistogram;
  private readonly upstreamErrors: Counter<"upstream" | "reason">;
  private readonly created: Counter<"upstream" | "mode" | "tool">;
  private readonly finished: Counter<"upstream" | "status" | "tool">;
  private readonly taskDuration: Histogram<"upstream" | "status" | "tool">;
  private readonly promotions: Counter<"outcome">;
  private readonly federationMissing: Counter<"federated" | "upstream" | "reason">;
  private readonly rateLimited: Counter<"rule" | "upstream">;
  private readonly catalogCalls: Counter<"upstream" | "outcome">;
  private readonly toolChanges: Counter<"upstream" | "kind">;
  private readonly toolApprovals: Counter<"upstream" | "via">;
  private readonly rateCheck: Histogram;
  private readonly rateStoreDown: Counter<"action">;
  private readonly credentialTokens: Counter<"upstream" | "mode" | "kind" | "outcome">;
  /** Cached label children: the hot path builds one string key, never a label object. */
  private readonly children = new Map<string, Inc | Observe>();
  /**
   * The request counter's values, kept here and handed to prom-client at scrape time: a child's inc() hashes
   * its labels on every call (~0.5 µs), a Map entry's increment costs a tenth of that, on every request.
   */
  private readonly requestCounts = new Map<string, RequestCount>();

  constructor(opts: PrometheusOptions) {
    this.tool = toolLabeler(opts.toolLabels);
    this.upstreams = new Set(opts.upstreams);
    this.replica = opts.replicaId.slice(0, 8);
    const registers = [this.registry];
    const requestCounts = this.requestCounts;

    // Kept by its registry alone: request() counts into requestCounts, and collect() reads them at scrape time.
    new Counter({
      name: "mcp_gateway_requests_total",
      help: "HTTP requests the gateway answered, by route (mcp, metrics, status), upstream (the configured name of the upstream that served it; (none) for a request no one upstream served: /metrics, /status, an unknown path, a federated endpoint's merged answer), protocol era (modern, legacy, none), method class (the JSON-RPC method family, or the HTTP method of a request without a message) and HTTP status.",
      labelNames: ["route", "upstream", "era", "method", "status"],
      registers,
      collect() {
        this.reset();
        for (const { labels, n } of requestCounts.values()) this.labels(...labels).inc(n);
      },
    });
    // Fed by every upstream request: its series are kept as plain counts and read at scrape time (series-histogram.ts).
    this.upstreamDuration = new SeriesHistogram(
      "mcp_gateway_upstream_request_duration_seconds",
      "Time from sending a request upstream to its response headers (every upstream request: pass-through, bridged calls, session control), by upstream (a configured name), HTTP method and status class.",
      ["upstream", "method", "status_class"],
      UPSTREAM_BUCKETS,
    );
    this.registry.registerMetric(this.upstreamDuration as unknown as Metric);
    this.upstreamErrors = new Counter({
      name: "mcp_gateway_upstream_errors_total",
      help: "Upstream requests that got no response, by upstream (a configured name) and reason: upstream_unreachable, upstream_reset, upstream_connect_timeout, upstream_timeout, upstream_error, or aborted (the client left or the gateway stopped the request).",
      labelNames: ["upstream", "reason"],
      registers,
    });
    this.created = new Counter({
      name: "mcp_gateway_tasks_created_total",
      help: "Tasks created in this process, by upstream (a configured name), the policy mode of the call (auto, always, required; unknown for tasks taken over from another replica) and tool (a name from metrics.toolLabels, else other).",
      labelNames: ["upstream", "mode", "tool"],
      registers,
    });
    this.finished = new Counter({
      name: "mcp_gateway_tasks_finished_total",
      help: "Tasks that reached a terminal status (completed, failed, cancelled), counted by the process that wrote the end, by upstream (a configured name) and tool (metrics.toolLabels, else other).",
      labelNames: ["upstream", "status", "tool"],
      registers,
    });
    this.taskDuration = new Histogram({
      name: "mcp_gateway_task_duration_seconds",
      help: "Time from a task's creation to its terminal status, by upstream (a configured name), that status and tool (metrics.toolLabels, else other).",
      labelNames: ["upstream", "status", "tool"],
      buckets: TASK_BUCKETS,
      registers,
    });
    this.promotions = new Counter({
      name: "mcp_gateway_promotion_decisions_total",
      help: "tools/call that raced their threshold (policy auto): answered in time (in_time), promoted to a task (promoted), or past the threshold but kept plain because the task could not be created (refused).",
      labelNames: ["outcome"],
      registers,
    });
    this.federationMissing = new Counter({
      name: "mcp_gateway_federation_list_missing_total",
      help: "Members left out of a federated endpoint's merged answer (a list, server/discover), by federated endpoint and upstream (configured names) and reason: timeout (past federation.listTimeoutMs), error (a failure or an error answer), open (skipped by its circuit breaker).",
      labelNames: ["federated", "upstream", "reason"],
      registers,
    });
    this.credentialTokens = new Counter({
      name: "mcp_gateway_upstream_tokens_total",
      help: "Upstream tokens the gateway obtained or served per upstreams.<name>.oauth, by upstream, mode, kind (fetch: a client-credentials token; exchange; refresh; cache_hit; consent_required: a caller sent a consent link) and outcome (ok, error). Never a token.",
      labelNames: ["upstream", "mode", "kind", "outcome"],
      registers,
    });
    this.catalogCalls = new Counter({
      name: "mcp_gateway_catalog_calls_total",
      help: "Tool calls the catalog (upstreams.<name>.tools, validateArguments) refused or flagged, by upstream (a configured name) and outcome: unknown_tool (the upstream's name of a renamed tool), pinned_argument, invalid_refused, invalid_warned (validateArguments: warn, passed on), unvalidated (a schema past the gateway's bounds).",
      labelNames: ["upstream", "outcome"],
      registers,
    });
    this.rateLimited = new Counter({
      name: "mcp_gateway_rate_limited_total",
      help: "Requests refused by a rate limit (429), by rule (its configured name) and upstream (a configured name).",
      labelNames: ["rule", "upstream"],
      registers,
    });
    this.toolChanges = new Counter({
      name: "mcp_gateway_tool_changes_total",
      help: "Tool definitions that differed from their pin (upstreams.<name>.pinning), by upstream and kind: changed (a pinned tool's definition), new (a tool with no pin), overflow (not recorded: too many changes already pending). Counted once across replicas where the store is shared.",
      labelNames: ["upstream", "kind"],
      registers,
    });
    this.toolApprovals = new Counter({
      name: "mcp_gateway_tool_approvals_total",
      help: "Tool definitions this process approved, by upstream and via: first-use (the first listing pinned whole), policy (pinning allow). Approvals by `mcp-task-gateway pins approve` show as mcp_gateway_tool_changes_pending going down.",
      labelNames: ["upstream", "via"],
      registers,
    });
    this.rateCheck = new Histogram({
      name: "mcp_gateway_rate_limit_check_duration_seconds",
      help: "Time a rate-limit check took (the rules a request matched, taken in one step from the memory store or one Redis script).",
      buckets: RATE_CHECK_BUCKETS,
      registers,
    });
    this.rateStoreDown = new Counter({
      name: "mcp_gateway_rate_limit_store_errors_total",
      help: "Rate-limit checks the store (Redis) could not answer, by the action limits.onStoreDown took: allow (the request passed unlimited) or deny (503).",
      labelNames: ["action"],
      registers,
    });
  }

  /**
   * The state read at scrape time, from `sources` (after the event metrics in every scrape). Given once, by the
   * composition root, when the parts the sources read exist: the engine and the upstream paths count events
   * from their construction, so the metrics are built before them.
   */
  readState(sources: MetricsSources): void {
    if (this.stateRead) throw new Error("the metrics' state sources are given once");
    this.stateRead = true;
    const registers = [this.registry];
    const replica = this.replica;
    const snapshot = () => this.snapshot(sources);
    const configuredUpstreams = () => this.upstreams;
    const upstreamLabel = (name: string) => this.upstreamLabel(name);
    new Gauge({
      name: "mcp_gateway_tasks_running",
      help: "Unfinished tasks whose upstream call runs in this process, by upstream (a configured name) and state (working, input_required). Per process: sum over replicas.",
      labelNames: ["upstream", "state", "replica"],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        // Every configured upstream has its series, at 0 when it runs nothing here.
        for (const upstream of configuredUpstreams()) {
          this.set({ upstream, state: "working", replica }, 0);
          this.set({ upstream, state: "input_required", replica }, 0);
        }
        for (const [name, counts] of s.running) {
          const upstream = upstreamLabel(name);
          this.inc({ upstream, state: "working", replica }, counts.working);
          this.inc({ upstream, state: "input_required", replica }, counts.inputRequired);
        }
      },
    });
    new Gauge({
      name: "mcp_gateway_tasks_unfinished",
      // --workers: every worker reads the same store; merged with max, not summed (metrics/cluster.ts).
      aggregator: "max",
      help: "Unfinished tasks (working or input_required) in the task store, over every replica sharing it. Global: aggregate with max, not sum.",
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s.store) this.set(s.store.unfinished);
      },
    });
    new Gauge({
      name: "mcp_gateway_store_tasks",
      aggregator: "max",
      help: "Task records in the task store (finished and unfinished), over every replica sharing it. Global: aggregate with max.",
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s.store) this.set(s.store.stored);
      },
    });
    new Gauge({
      name: "mcp_gateway_store_bytes",
      aggregator: "max",
      help: "Bytes the task store accounts for (records with their results), over every replica sharing it. Global: aggregate with max.",
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s.store) this.set(s.store.bytes);
      },
    });
    new Gauge({
      name: "mcp_gateway_store_budget_bytes",
      aggregator: "max",
      help: "The task store's byte budget (tasks.storeBytes).",
      registers,
      collect() {
        this.set(sources.storeBytesBudget);
      },
    });
    new Gauge({
      name: "mcp_gateway_store_up",
      aggregator: "max",
      help: "1 when the task store answered this scrape's stats read, else 0.",
      registers,
      async collect() {
        this.set((await snapshot()).store ? 1 : 0);
      },
    });
    const perProcess = (name: string, help: string, read: (s: Snapshot) => number | undefined) =>
      new Gauge({
        name,
        help: `${help} Per process: sum over replicas.`,
        labelNames: ["replica"],
        registers,
        async collect() {
          const value = read(await snapshot());
          this.reset();
          if (value !== undefined) this.set({ replica }, value);
        },
      });
    perProcess(
      "mcp_gateway_legacy_sessions",
      "Legacy upstream sessions the gateway keeps open on behalf of modern clients (the session pool).",
      (s) => s.sessions,
    );
    perProcess(
      "mcp_gateway_mrtr_pending",
      "MRTR exchanges waiting for a client's retry (input requests of plain calls).",
      (s) => s.pending,
    );
    perProcess(
      "mcp_gateway_event_streams",
      "Long-lived event streams open to clients (GET streams, subscriptions/listen, 2025-11-25 tasks/result streams).",
      (s) => s.streams,
    );
    perProcess(
      "mcp_gateway_requests_in_flight",
      "Client exchanges in progress (calls and event streams).",
      (s) => s.inFlight,
    );
    // A stdio upstream's children, by upstream: no series for an HTTP upstream (its count is undefined).
    const perUpstream = (name: string, help: string, read: (u: Snapshot["upstreams"][number]) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ["upstream", "replica"],
        registers,
        async collect() {
          const s = await snapshot();
          this.reset();
          for (const u of s.upstreams) {
            const n = read(u);
            if (n !== undefined) this.inc({ upstream: upstreamLabel(u.name), replica }, n);
          }
        },
      });
    const pinsPending = sources.pinsPending;
    if (pinsPending)
      new Gauge({
        name: "mcp_gateway_tool_changes_pending",
        help: "Tool definitions waiting for approval (upstreams.<name>.pinning), by upstream, as this process last read the store: the same on every replica once each has checked.",
        labelNames: ["upstream"],
        registers,
        collect() {
          this.reset();
          for (const [name, n] of pinsPending()) this.set({ upstream: upstreamLabel(name) }, n);
        },
      });
    perUpstream(
      "mcp_gateway_upstream_processes",
      "stdio upstream child processes alive (command), by upstream (a configured name); no series for an HTTP upstream. Per process: sum over replicas.",
      (u) => u.processes,
    );
    perUpstream(
      "mcp_gateway_upstream_warm_processes",
      "Of mcp_gateway_upstream_processes, the warm ones: started and ready, waiting for a session (upstream.warmProcesses). Per process: sum over replicas.",
      (u) => u.warmProcesses,
    );
    new Counter({
      name: "mcp_gateway_upstream_process_refusals_total",
      help: "New stdio sessions refused, by upstream (a configured name) and reason: caller_share (the caller held upstream.maxProcessesPerCaller processes already) or max_processes (upstream.maxProcesses reached). Per process: sum over replicas.",
      labelNames: ["upstream", "reason", "replica"],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        for (const u of s.upstreams) {
          const r = u.processRefusals;
          if (!r) continue;
          const upstream = upstreamLabel(u.name);
          this.inc({ upstream, reason: "caller_share", replica }, r.callerShare);
          this.inc({ upstream, reason: "max_processes", replica }, r.maxProcesses);
        }
      },
    });
    new Gauge({
      name: "mcp_gateway_upstream_info",
      help: "1 for every configured upstream, labelled with its name and the era it speaks (legacy, modern; unknown before the first probe).",
      labelNames: ["upstream", "era"],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        for (const u of s.upstreams) {
          const era = u.era === "legacy" || u.era === "modern" ? u.era : "unknown";
          this.set({ upstream: upstreamLabel(u.name), era }, 1);
        }
      },
    });
    if (sources.federated) {
      const federated = sources.federated;
      new Gauge({
        name: "mcp_gateway_federation_breaker_open",
        help: "1 while a federated endpoint skips a member because its circuit breaker is open (federation.breakerFailures failures in a row), else 0; by federated endpoint and upstream (configured names).",
        labelNames: ["federated", "upstream"],
        registers,
        collect() {
          this.reset();
          for (const f of federated())
            for (const m of f.members)
              this.set({ federated: f.name, upstream: upstreamLabel(m.name) }, m.state === "open" ? 1 : 0);
        },
      });
    }
    if (sources.adaptiveTools) {
      const read = sources.adaptiveTools;
      // Only the tools metrics.toolLabels names (a client's tool names never make series); read at scrape time.
      const listed = () =>
        read()
          .filter((t) => this.tool(t.tool) === t.tool)
          .map((t) => ({ ...t, labels: { tool: t.tool, upstream: upstreamLabel(t.upstream) } }));
      new Gauge({
        name: "mcp_gateway_adaptive_tool_state",
        help: "Adaptive promotion: 1 for what a new call of a tool (metrics.toolLabels) gets now: immediate (a task at once), threshold (a task at the threshold) or plain; by upstream (a configured name).",
        labelNames: ["tool", "upstream", "state"],
        registers,
        collect() {
          this.reset();
          for (const t of listed()) this.set({ ...t.labels, state: t.state }, 1);
        },
      });
      new Gauge({
        name: "mcp_gateway_adaptive_tool_duration_seconds",
        help: "Adaptive promotion: a tool's recent durations (decayed quantiles 0.5 and 0.9), by upstream, for the tools metrics.toolLabels names.",
        labelNames: ["tool", "upstream", "quantile"],
        registers,
        collect() {
          this.reset();
          for (const t of listed()) {
            this.set({ ...t.labels, quantile: "0.5" }, t.p50Ms / 1000);
            this.set({ ...t.labels, quantile: "0.9" }, t.p90Ms / 1000);
          }
        },
      });
      new Gauge({
        name: "mcp_gateway_adaptive_tool_samples",
        help: "Adaptive promotion: the (decayed) number of recent samples behind a tool's state, for the tools metrics.toolLabels names.",
        labelNames: ["tool", "upstream"],
        registers,
        collect() {
          this.reset();
          for (const t of listed()) this.set(t.labels, t.samples);
        },
      });
    }
    if (sources.reloads) {
      const reloads = sources.reloads;
      // Per process (each --workers worker reloads for itself): `replica` keeps one series per worker.
      new Gauge({
        name: "mcp_gateway_config_last_reload_success_timestamp_seconds",
        help: "When the configuration in force was loaded, in seconds since the epoch: the start, then each successful reload (SIGHUP, --watch-config). Per process.",
        labelNames: ["replica"],
        registers,
        collect() {
          this.reset();
          this.set({ replica }, reloads().lastSuccessAt / 1000);
        },
      });
      new Gauge({
        name: "mcp_gateway_config_last_reload_successful",
        help: "1 when the last reload tried succeeded (or none was tried yet), 0 when it failed and the previous configuration stayed in force. Per process.",
        labelNames: ["replica"],
        registers,
        collect() {
          this.reset();
          this.set({ replica }, reloads().lastOk ? 1 : 0);
        },
      });
      new Counter({
        name: "mcp_gateway_config_reload_failures_total",
        help: "Reloads that failed (an unreadable or invalid configuration): the previous configuration stayed in force. Per process.",
        labelNames: ["replica"],
        registers,
        collect() {
          this.reset();
          this.inc({ replica }, reloads().failures);
        },
      });
    }
    if (sources.adaptive) {
      new Counter({
        name: "mcp_gateway_adaptive_decisions_total",
        help: "Adaptive promotion (tasks.adaptive): tools/call promoted at once because the latency history says the tool is slow (at_once), at the threshold (at_threshold), answered plain (plain), or always/required (eager).",
        labelNames: ["decision"],
        registers,
        async collect() {
          const a = (await snapshot()).adaptive;
          this.reset();
          if (!a) return;
          this.inc({ decision: "at_once" }, a.atOnce);
          this.inc({ decision: "at_threshold" }, a.atThreshold);
          this.inc({ decision: "plain" }, a.plain);
          this.inc({ decision: "eager" }, a.eager);
        },
      });
    }
  }

  private snapshot(s: MetricsSources): Promise<Snapshot> {
    const now = Date.now();
    if (this.snap && now - this.snap.at < SNAPSHOT_MS) return this.snap.value;
    const value = (async (): Promise<Snapshot> => ({
      store: await s.storeStats().catch(() => undefined),
      running: s.runningTasks(),
      sessions: s.legacySessions(),
      pending: s.pendingInputs(),
      streams: s.eventStreams(),
      inFlight: s.inFlight(),
      upstreams: s.upstreams(),
      adaptive: s.adaptive?.(),
    }))();
    this.snap = { at: now, value };
    return value;
  }

  private child<T extends Inc | Observe>(key: string, make: () => T): T {
    let c = this.children.get(key) as T | undefined;
    if (!c) {
      c = make();
      this.children.set(key, c);
    }
    return c;
  }

  /**
   * One request the gateway answered (http/): every label value is already bounded, but `upstream`, which is
   * mapped onto the configured names here (undefined: NO_UPSTREAM_LABEL; a name not configured now: "other").
   */
  request(route: string, era: EraLabel, method: string, status: number, upstream: string | undefined): void {
    this.t.requests += 1;
    this.requestCount(route, era, method, status, upstream).n += 1;
  }

  /**
   * request() with its labels bound once: for a path that answers with the same labels every time (the lean
   * tasks/get path, per route), so a request builds and hashes no key. The series is made by the first count,
   * as request() makes it (a counter never used adds no series).
   */
  requestCounter(
    route: string,
    era: EraLabel,
    method: string,
    status: number,
    upstream: string | undefined,
  ): () => void {
    let entry: RequestCount | undefined;
    return () => {
      this.t.requests += 1;
      (entry ??= this.requestCount(route, era, method, status, upstream)).n += 1;
    };
  }

  private requestCount(
    route: string,
    era: EraLabel,
    method: string,
    status: number,
    upstream: string | undefined,
  ): RequestCount {
    const key = `${route}\0${upstream}\0${era}\0${method}\0${status}`;
    let entry = this.requestCounts.get(key);
    if (!entry) {
      const u = upstream === undefined ? NO_UPSTREAM_LABEL : this.upstreamLabel(upstream);
      entry = { labels: [route, u, era, method, statusLabel(status)], n: 0 };
      this.requestCounts.set(key, entry);
    }
    return entry;
  }

  /**
   * The configured upstream names, on a reload: from then on, the `upstream` label takes these (any other value
   * is "other"). Give them before building the routes of new upstreams, since an observer binds its label once.
   * The series of an upstream that is gone stay until the process ends, as counters do.
   */
  setUpstreams(names: readonly string[]): void {
    this.upstreams = new Set(names);
  }

  /** A configured upstream name as a label value; any other value (and none) is "other". */
  private upstreamLabel(name: string | undefined): string {
    return name !== undefined && this.upstreams.has(name) ? name : "other";
  }

  /**
   * The UpstreamClient.observer of the upstream called `name` (a configured name; any other is counted as
   * "other"). The label value is bound here, once: a request looks its series up by HTTP method (a Map of four
   * at most) and status class (an array index), and builds neither a string nor a label object.
   */
  upstreamObserver(name: string): UpstreamObserverLike {
    const upstream = this.upstreamLabel(name);
    const durations = new Map<string, Array<Observe | undefined>>();
    const errors = new Map<string, Inc>();
    const duration = (method: string, cls: number): Observe => {
      let byClass = durations.get(method);
      if (!byClass) durations.set(method, (byClass = []));
      return (byClass[cls] ??= this.upstreamDuration.labels(upstream, method, STATUS_CLASSES[cls] as string));
    };
    const t = this.t;
    return {
      answered: (method, status, seconds) => {
        t.upstreamRequests += 1;
        duration(method, statusClassIndex(status)).observe(seconds);
      },
      failed: (method, err, aborted, seconds) => {
        t.upstreamRequests += 1;
        t.upstreamErrors += 1;
        const reason = aborted ? "aborted" : classifyUpstreamFailure(err).reason;
        let counter = errors.get(reason);
        if (!counter) errors.set(reason, (counter = this.upstreamErrors.labels(upstream, reason)));
        counter.inc();
        duration(method, ERROR_CLASS).observe(seconds);
      },
    };
  }

  /**
   * The observer of the federated endpoint `federated` (a configured name): a member left out of a merged answer
   * costs a Map lookup and an increment (the label child is made once per member and reason).
   */
  federationObserver(federated: string): FederatedObserverLike {
    const counters = new Map<string, Inc>();
    return {
      missing: (upstream, reason) => {
        const key = `${upstream}\0${reason}`;
        let counter = counters.get(key);
        if (!counter) {
          counter = this.federationMissing.labels(federated, this.upstreamLabel(upstream), reason);
          counters.set(key, counter);
        }
        counter.inc();
      },
    };
  }

  /**
   * The rate limiter's observer: a refusal costs a Map lookup and an increment (a child per rule and upstream;
   * rules come from the config, upstreams are mapped onto the configured names).
   */
  /** The catalog's observer: a refused or flagged call costs a Map lookup and an increment. */
  catalogObserver(): { call(upstream: string, outcome: string): void } {
    return {
      call: (upstream, outcome) => {
        const u = this.upstreamLabel(upstream);
        this.child(`cat\0${u}\0${outcome}`, () => this.catalogCalls.labels(u, outcome)).inc();
      },
    };
  }

  rateLimitObserver(): RateLimitObserverLike {
    const limited = new Map<string, Inc>();
    return {
      limited: (rule, upstream) => {
        const key = `${rule}\0${upstream}`;
        let counter = limited.get(key);
        if (!counter) limited.set(key, (counter = this.rateLimited.labels(rule, this.upstreamLabel(upstream))));
        counter.inc();
      },
      checked: (seconds) => this.rateCheck.observe(seconds),
      storeDown: (action) => this.child(`rl\0${action}`, () => this.rateStoreDown.labels(action)).inc(),
    };
  }

  /** The credential sources' observer: a child per upstream, mode, kind and outcome, made once. */
  credentialObserver(): CredentialObserverLike {
    return {
      token: (upstream, mode, kind, ok) => {
        const u = this.upstreamLabel(upstream);
        const outcome = ok ? "ok" : "error";
        this.child(`tok\0${u}\0${mode}\0${kind}\0${outcome}`, () =>
          this.credentialTokens.labels(u, mode, kind, outcome),
        ).inc();
      },
    };
  }

  taskCreated(mode: string, tool: string | undefined, upstream: string): void {
    this.t.tasksCreated += 1;
    const m = mode === "auto" || mode === "always" || mode === "required" || mode === "never" ? mode : "unknown";
    const t = this.tool(tool);
    const u = this.upstreamLabel(upstream);
    this.child(`c\0${u}\0${m}\0${t}`, () => this.created.labels(u, m, t)).inc();
  }

  taskFinished(status: TaskEnding, tool: string | undefined, seconds: number, upstream: string): void {
    this.t.tasksFinished += 1;
    const t = this.tool(tool);
    const u = this.upstreamLabel(upstream);
    this.child(`f\0${u}\0${status}\0${t}`, () => this.finished.labels(u, status, t)).inc();
    this.child(`d\0${u}\0${status}\0${t}`, () => this.taskDuration.labels(u, status, t)).observe(Math.max(0, seconds));
  }

  /** A pinned definition's change was seen (catalog/pin-registry.ts). */
  toolChange(upstream: string, kind: "new" | "changed" | "overflow"): void {
    const u = this.upstreamLabel(upstream);
    this.child(`tc\0${u}\0${kind}`, () => this.toolChanges.labels(u, kind)).inc();
  }

  /** A definition was approved by this process. */
  toolApproval(upstream: string, via: "first-use" | "policy"): void {
    const u = this.upstreamLabel(upstream);
    this.child(`ta\0${u}\0${via}`, () => this.toolApprovals.labels(u, via)).inc();
  }

  promotion(outcome: PromotionOutcome): void {
    if (outcome === "promoted") this.t.promoted += 1;
    this.child(`p\0${outcome}`, () => this.promotions.labels(outcome)).inc();
  }

  /** Running totals since start (the status page's rates). */
  totals(): MetricsTotals {
    return { ...this.t };
  }

  /**
   * The registries a scrape reads, for --workers' merged scrape (metrics/cluster.ts): this gateway's, and the
   * process metrics, labelled with this worker's `replica` so that each worker keeps its own series.
   */
  clusterRegistries(): Registry[] {
    const proc = processMetrics();
    proc.setDefaultLabels({ replica: this.replica });
    return [this.registry, proc];
  }

  /** The text exposition: this gateway's metrics, then the process's. */
  async render(): Promise<string> {
    // A scrape reads the sources afresh (its collect() calls then share that one read): two scrapes close
    // together must not see the first one's numbers.
    this.snap = undefined;
    const [own, proc] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own.endsWith("\n") ? own : `${own}\n`}${proc}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** What happened over the last minute, from samples of the running totals (the status page). */
export class RateWindow {
  private readonly samples: Array<{ at: number; totals: MetricsTotals }> = [];

  constructor(
    private readonly read: () => MetricsTotals,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  /** Takes a sample (at most one per second) and drops those older than the window (keeping one just past it). */
  sample(): void {
    const at = this.now();
    const last = this.samples.at(-1);
    if (last && at - last.at < 1_000) return;
    this.samples.push({ at, totals: this.read() });
    while (this.samples.length > 2 && at - (this.samples[1]?.at ?? at) >= this.windowMs) this.samples.shift();
  }

  /**
   * What happened over the last minute (or since the first sample, when the gateway is younger): the growth of
   * each total and the seconds it covers; null until a sample is a second old. Counts, not extrapolations: a
   * page opened 2 s after the start shows what happened in those 2 s.
   */
  lastMinute(): { windowSeconds: number; counts: Record<keyof MetricsTotals, number> } | null {
    this.sample();
    const now = { at: this.now(), totals: this.read() };
    // The newest sample at least a window old, else the oldest.
    let first = this.samples[0];
    for (const s of this.samples) if (now.at - s.at >= this.windowMs) first = s;
    if (!first || now.at - first.at < 1_000) return null;
    const counts = {} as Record<keyof MetricsTotals, number>;
    for (const k of Object.keys(now.totals) as Array<keyof MetricsTotals>) counts[k] = now.totals[k] - first.totals[k];
    return { windowSeconds: Math.round((now.at - first.at) / 1000), counts };
  }
}
