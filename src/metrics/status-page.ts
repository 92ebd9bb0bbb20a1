// The operator page (GET /status): a static HTML shell and its script. The page
// holds no data itself; the script polls /status.json once a second and writes
// every value with textContent (never as HTML), so a tool name cannot inject
// markup. With metrics.token, the page takes the token from the URL fragment
// (#token=…), which browsers never send to the server, and sends it as a bearer
// header with each poll.
//
// Upstreams: /status.json's `upstreams` (a StatusUpstream per configured upstream, in the config's order) fills
// a table of them; without it, the page shows the single `upstream` object as it always did.
// Federated endpoints: /status.json's `federated` (present when the config has some) fills a table of their
// members and each one's state (served, or skipped by its circuit breaker until a time).
// Upstream health: a probe's 4xx answer (405 from a server with no OPTIONS) is "reachable", never green; only a
// 2xx or 3xx is (metrics/status-health.ts). The era is the configured one or the probe's; stdio upstreams show
// their processes (live, idle, warm). The last reload (`reload`) and, with --workers, every worker (`workers`)
// have sections of their own.
// Rate limits: /status.json's `rateLimited` (present when a rule refused requests in the last minute) lists the
// rules that refused most, with their counts.
// Pinned definitions: /status.json's `pinning` (present when changes wait for approval) lists each with what
// changed: the fields, a short diff of the description, the schema paths (docs/pinning.md).

import type { ProbeHealth } from "./status-health.js";

/** One row of /status.json's `upstreams`: a configured upstream as the operator page shows it. */
export interface StatusUpstream {
  /** Its configured name (config/upstream-set.ts; the single upstream is default). */
  name: string;
  /** Where the gateway serves it: server.path, or <server.path>/<name>. */
  path: string;
  /**
   * Where it is, for operators: scheme, host and port only (UpstreamClient.displayUrl), never its path or query;
   * "stdio: CMD ARG…" (redacted) for a stdio upstream.
   */
  origin: string;
  /** legacy or modern; unknown until it is configured (upstream.era) or a probe answered. */
  era: string;
  /** Where the era comes from: config (upstream.era), or probe (its answer to server/discover); absent: unknown. */
  eraFrom?: "config" | "probe" | undefined;
  /** The readiness probe's answer (with the HTTP status, or the cause when unreachable); absent: not probed. */
  reachable?: boolean | undefined;
  status?: number | undefined;
  cause?: string | undefined;
  /** What that answer says (metrics/status-health.ts): ok, reachable (a 4xx such as 405: no health), failing, unreachable. */
  health?: ProbeHealth | undefined;
  /** The same, in words. */
  probe?: string | undefined;
  /**
   * A stdio upstream's child processes in this process: live (all, warm ones included), idle (a session's, with
   * nothing in flight: it ends after idleMs, upstream.processIdleMs), warm (started ahead, waiting for a
   * session). Absent for an HTTP upstream.
   */
  processes?: { live: number; idle: number; warm: number; idleMs: number } | undefined;
  /** Its unfinished tasks that this process runs; absent: not counted. */
  tasks?: { working: number; inputRequired: number } | undefined;
  /**
   * upstreams.<name>.oauth: the mode, and how the last token requests went (ISO times; the last failure's stable
   * reason and message, which name no secret). Absent without an oauth block. Never a token.
   */
  credentials?:
    | {
        mode: string;
        lastOkAt?: string | undefined;
        lastError?: { at: string; reason: string; message: string } | undefined;
      }
    | undefined;
}

/** /status.json's `reload`: the configuration's last load (metrics too: mcp_gateway_config_*). */
export interface StatusReload {
  /** When the configuration in force was loaded: the start, or the last successful reload (ISO time). */
  lastSuccessAt: string;
  /** Reloads that failed since the start. */
  failures: number;
  /** The last reload tried (SIGHUP, --watch-config); absent before the first. */
  last?:
    | {
        at: string;
        ok: boolean;
        /** Why it failed (the configuration's problems; secrets cut). */
        error?: string | undefined;
        /** Changed settings it applied, and those that keep their old value until a restart. */
        applied?: string[] | undefined;
        restart?: string[] | undefined;
      }
    | undefined;
}

/** One row of /status.json's `workers` (--workers N): a worker process and what it holds. */
export interface StatusWorker {
  /** Its node:cluster id: the `worker` of its log lines. */
  worker: number | null;
  pid: number;
  /** Its replica id (metrics' `replica` label). */
  replica: string;
  tasks: { working: number; inputRequired: number };
  /** Its own last reload (each worker reloads for itself): when, and whether it took. */
  reload: { lastSuccessAt: string; failures: number; lastOk: boolean };
}

/** One member of a federated endpoint on the operator page. */
export interface StatusFederatedMember {
  /** Its configured upstream name. */
  name: string;
  /**
   * served: asked and called; open: skipped by its circuit breaker until `openUntil`; half_open: its back-off has
   * passed and the next request tries it; not_served: its upstream is not served now.
   */
  state: "served" | "open" | "half_open" | "not_served";
  /** While open: when it is tried again (ISO time). */
  openUntil?: string | undefined;
}

/** One row of /status.json's `adaptive`: a tool adaptive promotion tracks, and what a new call of it gets. */
export interface StatusAdaptiveTool {
  tool: string;
  /** The configured upstream whose tool it is. */
  upstream: string;
  /** immediate: a task at once; threshold: a task at the threshold; plain: a plain call. */
  state: "immediate" | "threshold" | "plain";
  samples: number;
  p50Ms: number;
  p90Ms: number;
}

/** One row of /status.json's `rateLimited`: a rate-limit rule that refused requests in the last minute (this replica). */
export interface StatusRateLimited {
  rule: string;
  upstream: string;
  count: number;
}

/** One row of /status.json's `pinning`: a tool definition waiting for approval (upstreams.<name>.pinning). */
export interface StatusPinChange {
  upstream: string;
  tool: string;
  /** new: no pin; changed: differs from its pin. */
  kind: string;
  digest: string;
  /** The approved digest it would replace; absent for a new tool. */
  approved?: string | undefined;
  /** The pinned fields that differ. */
  fields: string[];
  /** The description's change, `…before[-removed-][+added+]after…`. */
  description?: string | undefined;
  /** Schema paths that differ: `+` added, `-` removed, `~` changed. */
  schema?: string[] | undefined;
  /** When it was first seen (ISO time). */
  seenAt: string;
}

/** One row of /status.json's `federated`: a federated endpoint and its members, in the config's order. */
export interface StatusFederated {
  name: string;
  /** Where the gateway serves it: <server.path>/<name>. */
  path: string;
  members: StatusFederatedMember[];
}

export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>mcp-task-gateway status</title>
<style>
  :root { color-scheme: light dark; --muted: #888; --ok: #2e7d32; --bad: #c62828; --warn: #ef6c00; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; max-width: 72rem; }
  h1 { font-size: 1.3rem; margin: 0 0 .2rem; }
  h2 { font-size: 1rem; margin: 0 0 .5rem; }
  .sub { color: var(--muted); margin-bottom: 1rem; }
  .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: 1rem; }
  section { border: 1px solid #8884; border-radius: 6px; padding: .8rem 1rem; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: .2rem 1rem; margin: 0; }
  dt { color: var(--muted); }
  dd { margin: 0; font-variant-numeric: tabular-nums; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: left; padding: .25rem .6rem .25rem 0; border-bottom: 1px solid #8883; }
  code { font-size: 13px; }
  .ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
  .bar { height: .5rem; background: #8883; border-radius: 3px; overflow: hidden; margin-top: .4rem; }
  .bar > div { height: 100%; background: var(--ok); width: 0; }
  #error { color: var(--bad); min-height: 1.2em; }
</style>
</head>
<body>
<h1>mcp-task-gateway</h1>
<div class="sub">replica <code id="replica">…</code> · updated <span id="updated">never</span> · <span id="error" role="status"></span></div>
<div class="grid">
  <section id="upstream"><h2>Upstream</h2><dl>
    <dt>name</dt><dd data-field="upstream.name">…</dd>
    <dt>health</dt><dd data-field="upstream.health">…</dd>
    <dt>era</dt><dd data-field="upstream.era">…</dd>
    <dt>address</dt><dd data-field="upstream.url">…</dd>
    <dt>stdio processes</dt><dd data-field="upstream.processes">…</dd>
  </dl></section>
  <section id="reload"><h2>Configuration</h2><dl>
    <dt>loaded</dt><dd data-field="reload.lastSuccessAt">…</dd>
    <dt>last reload</dt><dd data-field="reload.last">…</dd>
    <dt>error</dt><dd data-field="reload.error">…</dd>
    <dt>failed reloads</dt><dd data-field="reload.failures">…</dd>
  </dl></section>
  <section id="tasks"><h2>Tasks</h2><dl>
    <dt>working (here)</dt><dd data-field="tasks.working">…</dd>
    <dt>input required (here)</dt><dd data-field="tasks.inputRequired">…</dd>
    <dt>unfinished (store)</dt><dd data-field="tasks.unfinished">…</dd>
    <dt>stored</dt><dd data-field="tasks.stored">…</dd>
  </dl></section>
  <section id="store"><h2>Store</h2><dl>
    <dt>used</dt><dd data-field="store.used">…</dd>
    <dt>budget</dt><dd data-field="store.budget">…</dd>
  </dl><div class="bar"><div id="store-bar"></div></div></section>
  <section id="sessions"><h2>Sessions</h2><dl>
    <dt>legacy sessions</dt><dd data-field="sessions.legacy">…</dd>
    <dt>MRTR pending</dt><dd data-field="sessions.pendingInputs">…</dd>
    <dt>event streams</dt><dd data-field="sessions.eventStreams">…</dd>
    <dt>in flight</dt><dd data-field="sessions.inFlight">…</dd>
  </dl></section>
  <section id="rates"><h2>Last minute <span class="sub" data-field="rates.window"></span></h2><dl>
    <dt>requests</dt><dd data-field="rates.requests">…</dd>
    <dt>upstream requests</dt><dd data-field="rates.upstreamRequests">…</dd>
    <dt>upstream errors</dt><dd data-field="rates.upstreamErrors">…</dd>
    <dt>tasks created</dt><dd data-field="rates.tasksCreated">…</dd>
    <dt>tasks finished</dt><dd data-field="rates.tasksFinished">…</dd>
    <dt>promoted</dt><dd data-field="rates.promoted">…</dd>
  </dl></section>
</div>
<section id="upstreams" style="margin-top:1rem" hidden><h2>Upstreams</h2>
<table id="upstream-list"><thead><tr><th>name</th><th>path</th><th>address</th><th>era</th><th>health</th><th>credentials</th><th>stdio processes (live / idle / warm)</th><th>working (here)</th><th>input required (here)</th></tr></thead><tbody></tbody></table>
</section>
<section id="workers" style="margin-top:1rem" hidden><h2>Workers</h2>
<table id="worker-list"><thead><tr><th>worker</th><th>pid</th><th>replica</th><th>working</th><th>input required</th><th>last reload</th></tr></thead><tbody></tbody></table>
</section>
<section id="federated" style="margin-top:1rem" hidden><h2>Federated endpoints</h2>
<table id="federated-list"><thead><tr><th>endpoint</th><th>path</th><th>member</th><th>state</th></tr></thead><tbody></tbody></table>
</section>
<section id="adaptive" style="margin-top:1rem" hidden><h2>Adaptive promotion</h2>
<table id="adaptive-list"><thead><tr><th>tool</th><th>upstream</th><th>a new call gets</th><th>samples</th><th>p50</th><th>p90</th></tr></thead><tbody></tbody></table>
</section>
<section id="rate-limited" style="margin-top:1rem" hidden><h2>Most rate-limited rules, last minute (this replica)</h2>
<table id="rate-limited-list"><thead><tr><th>rule</th><th>upstream</th><th>refused</th></tr></thead><tbody></tbody></table>
</section>
<section id="pinning" style="margin-top:1rem" hidden><h2>Tool changes waiting for approval</h2>
<table id="pinning-list"><thead><tr><th>upstream</th><th>tool</th><th>kind</th><th>what changed</th><th>digest</th><th>seen</th></tr></thead><tbody></tbody></table>
</section>
<section style="margin-top:1rem"><h2>Oldest running tasks (this replica)</h2>
<table id="oldest"><thead><tr><th>task</th><th>upstream</th><th>tool</th><th>state</th><th>age</th></tr></thead><tbody></tbody></table>
<p id="none" class="sub">No task is running.</p>
</section>
<script src="status.js"></script>
</body>
</html>
`;

export const STATUS_PAGE_SCRIPT = `"use strict";
(() => {
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get("token");
  const headers = token ? { authorization: "Bearer " + token } : {};
  const $ = (sel) => document.querySelector(sel);
  const set = (field, text, cls) => {
    const el = document.querySelector('[data-field="' + field + '"]');
    if (!el) return;
    el.textContent = text;
    el.className = cls || "";
  };
  const bytes = (n) => n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B";
  const age = (s) => s < 60 ? s.toFixed(0) + " s" : s < 3600 ? (s / 60).toFixed(1) + " min" : (s / 3600).toFixed(1) + " h";
  const num = (n) => n === null || n === undefined ? "–" : String(n);
  // Only an answer that says the upstream serves is green: a 405 (no OPTIONS) is reachable, not healthy.
  const HEALTH_CLASS = { ok: "ok", reachable: "", failing: "bad", unreachable: "bad" };
  const health = (u) => u.health === undefined ? ["–", ""] : [u.probe || u.health, HEALTH_CLASS[u.health] || ""];
  const era = (u) => u.era + (u.eraFrom ? " (" + (u.eraFrom === "config" ? "configured" : "probed") + ")" : "");
  const processes = (u) => u.processes ? u.processes.live + " / " + u.processes.idle + " / " + u.processes.warm : "–";
  const when = (iso) => new Date(iso).toLocaleString();
  // upstreams.<name>.oauth: the mode, red while the last token request failed.
  const credentials = (u) => !u.credentials ? ["–", ""] : u.credentials.lastError ? [u.credentials.mode + ": " + u.credentials.lastError.reason, "bad"] : [u.credentials.mode, u.credentials.lastOkAt ? "ok" : ""];
  const cell = (tr, text, cls) => {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  };
  function renderUpstreams(list) {
    const body = document.createElement("tbody");
    for (const u of list) {
      const tr = document.createElement("tr");
      tr.dataset.upstream = u.name;
      const [text, cls] = health(u);
      cell(tr, u.name);
      cell(tr, u.path);
      cell(tr, u.origin);
      cell(tr, era(u));
      cell(tr, text, cls);
      const [creds, credsClass] = credentials(u);
      cell(tr, creds, credsClass);
      cell(tr, processes(u));
      cell(tr, u.tasks ? num(u.tasks.working) : "–");
      cell(tr, u.tasks ? num(u.tasks.inputRequired) : "–", u.tasks && u.tasks.inputRequired > 0 ? "warn" : "");
      body.appendChild(tr);
    }
    $("#upstream-list tbody").replaceWith(body);
  }
  const memberState = (m) => m.state === "served" ? ["served", "ok"] : m.state === "open" ? ["breaker open until " + new Date(m.openUntil).toLocaleTimeString(), "bad"] : m.state === "half_open" ? ["trying again", "warn"] : ["not served", "warn"];
  function renderFederated(list) {
    const body = document.createElement("tbody");
    for (const f of list) {
      for (const m of f.members) {
        const tr = document.createElement("tr");
        tr.dataset.federated = f.name;
        tr.dataset.upstream = m.name;
        const [text, cls] = memberState(m);
        cell(tr, f.name);
        cell(tr, f.path);
        cell(tr, m.name);
        cell(tr, text, cls);
        body.appendChild(tr);
      }
    }
    $("#federated-list tbody").replaceWith(body);
  }
  const stateText = (s) => s === "immediate" ? ["a task at once", "warn"] : s === "threshold" ? ["a task at the threshold", ""] : ["a plain call", "ok"];
  function renderAdaptive(list) {
    const body = document.createElement("tbody");
    for (const t of list) {
      const tr = document.createElement("tr");
      tr.dataset.tool = t.tool;
      const [text, cls] = stateText(t.state);
      cell(tr, t.tool);
      cell(tr, t.upstream);
      cell(tr, text, cls);
      cell(tr, String(t.samples));
      cell(tr, Math.round(t.p50Ms) + " ms");
      cell(tr, Math.round(t.p90Ms) + " ms");
      body.appendChild(tr);
    }
    $("#adaptive-list tbody").replaceWith(body);
  }
  function renderRateLimited(list) {
    const body = document.createElement("tbody");
    for (const r of list) {
      const tr = document.createElement("tr");
      tr.dataset.rule = r.rule;
      cell(tr, r.rule);
      cell(tr, r.upstream);
      cell(tr, String(r.count), "warn");
      body.appendChild(tr);
    }
    $("#rate-limited-list tbody").replaceWith(body);
  }
  function renderWorkers(list) {
    const body = document.createElement("tbody");
    for (const w of list) {
      const tr = document.createElement("tr");
      tr.dataset.worker = String(w.worker);
      cell(tr, String(w.worker));
      cell(tr, String(w.pid));
      cell(tr, w.replica);
      cell(tr, num(w.tasks.working));
      cell(tr, num(w.tasks.inputRequired), w.tasks.inputRequired > 0 ? "warn" : "");
      cell(tr, (w.reload.lastOk ? "ok" : "failed") + ", loaded " + when(w.reload.lastSuccessAt), w.reload.lastOk ? "" : "bad");
      body.appendChild(tr);
    }
    $("#worker-list tbody").replaceWith(body);
  }
  function renderReload(r) {
    set("reload.lastSuccessAt", when(r.lastSuccessAt));
    const last = r.last;
    set("reload.last", last ? (last.ok ? "ok" : "failed") + " at " + when(last.at) : "none since the start", last ? (last.ok ? "ok" : "bad") : "");
    set("reload.error", last && last.error ? last.error : "–", last && last.error ? "bad" : "");
    set("reload.failures", String(r.failures), r.failures > 0 ? "warn" : "");
  }
  function renderPinning(list) {
    const body = document.createElement("tbody");
    for (const p of list) {
      const tr = document.createElement("tr");
      tr.dataset.upstream = p.upstream;
      tr.dataset.tool = p.tool;
      const what = [p.fields.join(", ")];
      if (p.description) what.push("description: " + p.description);
      if (p.schema) what.push("schema: " + p.schema.join(" "));
      cell(tr, p.upstream);
      cell(tr, p.tool);
      cell(tr, p.kind, "warn");
      cell(tr, what.join("; "));
      cell(tr, p.digest.slice(0, 19) + "…");
      cell(tr, new Date(p.seenAt).toLocaleString());
      body.appendChild(tr);
    }
    $("#pinning-list tbody").replaceWith(body);
  }
  function render(d) {
    $("#replica").textContent = d.replica;
    $("#updated").textContent = new Date(d.at).toLocaleTimeString();
    const many = Array.isArray(d.upstreams);
    $("#upstreams").hidden = !many;
    $("#upstream").hidden = many;
    if (many) renderUpstreams(d.upstreams);
    const federated = Array.isArray(d.federated) && d.federated.length > 0;
    $("#federated").hidden = !federated;
    if (federated) renderFederated(d.federated);
    const adaptive = Array.isArray(d.adaptive) && d.adaptive.length > 0;
    $("#adaptive").hidden = !adaptive;
    if (adaptive) renderAdaptive(d.adaptive);
    const limited = Array.isArray(d.rateLimited) && d.rateLimited.length > 0;
    $("#rate-limited").hidden = !limited;
    if (limited) renderRateLimited(d.rateLimited);
    const workers = Array.isArray(d.workers) && d.workers.length > 0;
    $("#workers").hidden = !workers;
    if (workers) renderWorkers(d.workers);
    if (d.reload) renderReload(d.reload);
    const pinning = Array.isArray(d.pinning) && d.pinning.length > 0;
    $("#pinning").hidden = !pinning;
    if (pinning) renderPinning(d.pinning);
    if (!many) {
      const u = d.upstream;
      const [text, cls] = health(u);
      set("upstream.name", u.name);
      set("upstream.health", text, cls);
      set("upstream.era", era(u));
      set("upstream.url", u.url);
      set("upstream.processes", u.processes ? processes(u) + " (live / idle / warm; idle ones end after " + age(u.processes.idleMs / 1000) + ")" : "–");
    }
    const t = d.tasks;
    set("tasks.working", num(t.working));
    set("tasks.inputRequired", num(t.inputRequired), t.inputRequired > 0 ? "warn" : "");
    set("tasks.unfinished", t.storeUp ? num(t.unfinished) : "store unavailable", t.storeUp ? "" : "bad");
    set("tasks.stored", num(t.stored));
    const share = t.budgetBytes > 0 && t.bytes !== null ? t.bytes / t.budgetBytes : 0;
    set("store.used", t.bytes === null ? "–" : bytes(t.bytes) + " (" + (share * 100).toFixed(1) + " %)", share > 0.9 ? "bad" : share > 0.7 ? "warn" : "");
    set("store.budget", bytes(t.budgetBytes));
    $("#store-bar").style.width = Math.min(100, share * 100).toFixed(1) + "%";
    const s = d.sessions;
    set("sessions.legacy", num(s.legacy));
    set("sessions.pendingInputs", num(s.pendingInputs));
    set("sessions.eventStreams", num(s.eventStreams));
    set("sessions.inFlight", num(s.inFlight));
    const r = d.lastMinute;
    set("rates.window", r ? (r.windowSeconds >= 60 ? "" : "(first " + r.windowSeconds + " s)") : "(collecting)");
    for (const k of ["requests", "upstreamRequests", "upstreamErrors", "tasksCreated", "tasksFinished", "promoted"]) {
      set("rates." + k, r ? num(r.counts[k]) : "–", k === "upstreamErrors" && r && r.counts[k] > 0 ? "bad" : "");
    }
    const body = document.createElement("tbody");
    for (const task of d.oldest) {
      const tr = document.createElement("tr");
      tr.dataset.task = task.id;
      tr.dataset.state = task.state;
      for (const text of [task.id, task.upstream, task.tool, task.state, age(task.ageSeconds)]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    $("#oldest tbody").replaceWith(body);
    $("#none").hidden = d.oldest.length > 0;
  }
  async function poll() {
    try {
      const res = await fetch("status.json", { headers, cache: "no-store" });
      if (!res.ok) throw new Error("status.json answered " + res.status);
      render(await res.json());
      $("#error").textContent = "";
    } catch (err) {
      $("#error").textContent = String(err.message || err);
    } finally {
      setTimeout(poll, 1000);
    }
  }
  poll();
})();
`;
