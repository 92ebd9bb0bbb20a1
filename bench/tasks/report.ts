// The Tasks figures as a terminal table and as a markdown section.
import { mdTable, TASKS_MARKERS } from "../lib/markdown.js";
import { renderTextTable } from "../lib/table.js";
import { AIMS, NOISY_CORES } from "./results.js";
import type { HeapReport } from "./children.js";
import type { LoadPoint } from "../lib/load.js";
import type { Completed, PromotionRow, TaskResults, Working } from "./results.js";

const MiB = 1024 * 1024;
const ms = (n: number): string => n.toFixed(3);
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const int = (n: number): string => Math.round(n).toLocaleString("en-US");
const us = (n: number | null): string => (n === null ? "—" : n.toFixed(1));
const signed = (n: number): string => `${n >= 0 ? "+" : ""}${n.toFixed(3)}`;
/** Other processes' load during the point, starred when it makes the point noisy. */
const load = (p: LoadPoint): string => `${p.foreignCores.toFixed(2)}${p.foreignCores > NOISY_CORES ? " *" : ""}`;
const NOISY_NOTE = `other load: cores' worth of CPU used by processes outside the run during the point; * marks a point above ${NOISY_CORES}, whose figures are noisy.`;

function heapNote(h: HeapReport): string {
  const a = h.afterGc;
  return (
    `process.memoryUsage() after a forced full GC: RSS ${mib(a.rss)} MiB, V8 heap used ${mib(a.heapUsed)} of ${mib(a.heapTotal)} MiB, ` +
    `external ${mib(a.external)} MiB (array buffers ${mib(a.arrayBuffers)} MiB); before the GC: heap used ${mib(h.before.heapUsed)} of ${mib(h.before.heapTotal)} MiB.`
  );
}

interface Section {
  title: string;
  header: string[];
  rows: string[][];
  notes: string[];
}

/** Older result files have no concurrency on their rows: they were all c=1. */
const concurrencyOf = (row: PromotionRow): number => row.concurrency ?? 1;

function promotionSection(r: TaskResults): Section | undefined {
  const rows = r.promotion.filter((p) => concurrencyOf(p) === 1);
  if (rows.length === 0) return undefined;
  const direct = rows.find((p) => p.path === "direct");
  const never = rows.find((p) => p.path === "never");
  const added = (row: PromotionRow, base: PromotionRow | undefined): string =>
    base === undefined || base === row ? "—" : signed(row.point.p50 - base.point.p50);
  return {
    title: `Promotion cost: tools/call, ${r.meta.plan.resultBytes} B result, concurrency 1, ${r.meta.plan.pointSec} s per path`,
    header: [
      "path",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "req/s",
      "gateway CPU µs/call",
      "upstream CPU µs/call",
      "wrk CPU µs/call",
      "p50 vs direct",
      "p50 vs never",
      "errors",
      "other load",
    ],
    rows: rows.map((row) => [
      row.label,
      ms(row.point.p50),
      ms(row.point.p90),
      ms(row.point.p99),
      int(row.point.rps),
      us(row.point.gatewayCpuUs),
      us(row.point.upstreamCpuUs),
      us(row.point.wrkCpuUs),
      added(row, direct),
      row.path === "always" ? added(row, never) : "—",
      String(row.point.errors),
      load(row.point),
    ]),
    notes: [
      NOISY_NOTE,
      "always: the answer is the CreateTaskResult; the upstream call then runs in the background and its CPU (reading the 1 KB result into the store) is in the gateway figure.",
      "At concurrency 1 the CPU per call includes waking up for every call, so it overstates the cost of the never path, which waits for the upstream in between; the table under load compares CPU.",
    ],
  };
}

function promotionLoadSection(r: TaskResults): Section | undefined {
  const rows = r.promotion.filter((p) => concurrencyOf(p) > 1);
  if (rows.length === 0) return undefined;
  const never = rows.find((p) => p.path === "never");
  const c = rows[0] === undefined ? 0 : concurrencyOf(rows[0]);
  const cpuVsNever = (row: PromotionRow): string =>
    row.path !== "always" || never?.point.gatewayCpuUs == null || row.point.gatewayCpuUs === null
      ? "—"
      : `${row.point.gatewayCpuUs - never.point.gatewayCpuUs >= 0 ? "+" : ""}${(row.point.gatewayCpuUs - never.point.gatewayCpuUs).toFixed(1)}`;
  return {
    title: `Promotion under load: the same calls at concurrency ${c}, ${r.meta.plan.pointSec} s per path`,
    header: [
      "path",
      "req/s",
      "p50 ms",
      "p99 ms",
      "gateway CPU µs/call",
      "CPU vs never µs",
      "upstream CPU µs/call",
      "wrk CPU µs/call",
      "errors",
      "other load",
    ],
    rows: rows.map((row) => [
      row.label,
      int(row.point.rps),
      ms(row.point.p50),
      ms(row.point.p99),
      us(row.point.gatewayCpuUs),
      cpuVsNever(row),
      us(row.point.upstreamCpuUs),
      us(row.point.wrkCpuUs),
      String(row.point.errors),
      load(row.point),
    ]),
    notes: [
      "always: CPU per call counts everything the task costs the gateway (create, store, the upstream call in the background, completion); every answered call was checked to have reached the upstream (none refused at a task limit).",
    ],
  };
}

/** server ÷ floor; null when either is missing or the floor's figure is 0. */
function floorRatio(value: number | null | undefined, floor: number | null | undefined): number | null {
  return value == null || floor == null || floor <= 0 ? null : value / floor;
}

/** The issue 14 verdicts for the gateway's tasks/get point against its floor. */
function tasksGetAims(
  point: LoadPoint,
  floor: LoadPoint | undefined,
): { ratio: "met" | "missed" | "—"; p99: "met" | "missed" } {
  const r = floorRatio(point.rps, floor?.rps);
  return {
    ratio: r === null ? "—" : r >= AIMS.tasksGetFloorRatio ? "met" : "missed",
    p99: point.p99 < AIMS.tasksGetP99Ms ? "met" : "missed",
  };
}

const ratio = (r: number | null): string => (r === null ? "—" : `${r.toFixed(2)}×`);

function tasksGetSection(r: TaskResults): Section | undefined {
  const g = r.tasksGet;
  if (g === null) return undefined;
  const floor = g.floor;
  const row = (label: string, p: LoadPoint, cpu: number | null, vsFloor: boolean, aims: string[]): string[] => [
    label,
    int(p.rps),
    vsFloor ? ratio(floorRatio(p.rps, floor?.rps)) : "—",
    ms(p.p50),
    ms(p.p90),
    ms(p.p99),
    ms(p.p999),
    us(cpu),
    vsFloor ? ratio(floorRatio(cpu, floor?.gatewayCpuUs)) : "—",
    us(p.wrkCpuUs),
    int(p.bytesPerResponse),
    String(p.errors),
    load(p),
    ...aims,
  ];
  const cpu = g.point.gatewayCpuUs;
  const aims = tasksGetAims(g.point, floor);
  const rows = [row("gateway", g.point, cpu, true, [aims.ratio, aims.p99])];
  if (floor !== undefined)
    rows.push(
      row(
        r.meta.store === undefined
          ? "floor: node:http, Map of stored answers"
          : "floor: node:http, the same Redis read",
        floor,
        floor.gatewayCpuUs,
        false,
        ["—", "—"],
      ),
    );
  // Runs before issue 14 measured a fixed-answer reference instead of the floor: shown as it was, no ratio.
  else if (g.reference !== undefined)
    rows.push(
      row("node:http, fixed answer (old reference, not the floor)", g.reference, g.reference.upstreamCpuUs, false, [
        "—",
        "—",
      ]),
    );
  const extra = (g.rounds ?? []).slice(1).filter((p) => p.floor !== undefined);
  return {
    title: `tasks/get: ${r.meta.plan.pollers} concurrent pollers over ${int(g.ids)} completed tasks (${r.meta.plan.resultBytes} B results), ${r.meta.plan.pointSec} s`,
    header: [
      "server",
      "req/s",
      "÷ floor req/s",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "p99.9 ms",
      "server CPU µs/get",
      "÷ floor CPU",
      "wrk CPU µs/get",
      "bytes/response",
      "errors",
      "other load",
      `≥ ${AIMS.tasksGetFloorRatio}× floor`,
      `p99 < ${AIMS.tasksGetP99Ms} ms`,
    ],
    rows,
    notes: [
      NOISY_NOTE,
      `A tasks/get body is ${int(g.checkedBodyBytes)} B; ${g.stillCompleted}/${g.sampled} sampled ids still answered completed after the run.`,
      `At ${us(cpu)} µs of gateway CPU per get, one core would serve ${cpu === null || cpu === 0 ? "—" : int(1e6 / cpu)} gets/s; wrk and loopback networking share the other core.`,
      ...(g.point.storeCpuUs === undefined
        ? []
        : [
            `Store: ${r.meta.store ?? "Redis"}${r.meta.workers === undefined ? "" : `, ${r.meta.workers} worker(s)`}; Redis used ${us(g.point.storeCpuUs)} µs of CPU per get (not in other load), commands per get: ${Object.entries(
              g.point.storeCalls ?? {},
            )
              .filter(([, n]) => n >= 0.005)
              .map(([c, n]) => `${c} ${n}`)
              .join(", ")}.`,
          ]),
      floor !== undefined && r.meta.store !== undefined
        ? `floor: bench/tasks/get-floor.ts --redis, a bare node:http server reading each answer from the gateway's own keys in Redis with the gateway store's read (one pipeline: HMGET owner status json, GET of the lease) and writing the stored bytes with the gateway's headers; it validates nothing. Its answers were checked to equal the gateway's byte for byte (${g.floorChecked ?? 0} ids). The gateway and the floor get the same wrk load, one after the other.`
        : floor !== undefined
          ? `floor: bench/tasks/get-floor.ts, a bare node:http server holding the gateway's own tasks/get answers for the same ${int(g.ids)} ids in a Map (fetched from the gateway once, before the points): it reads the body, JSON.parses it, looks params.taskId up and writes the stored bytes with the gateway's headers; it validates nothing. Its answers were checked to equal the gateway's byte for byte (${g.floorChecked ?? 0} ids). The gateway and the floor get the same wrk load, one after the other.`
          : g.reference !== undefined
            ? `This run predates the tasks/get floor (issue 14): its reference is bench/tasks/legacy-upstream.ts answering one fixed completed task of the same size, so no ratio to the floor is given; re-run bench:tasks for one.`
            : "The floor was not measured in this run, so no ratio to it is given.",
      ...(extra.length === 0
        ? []
        : [
            `More rounds, gateway ÷ floor req/s: ${extra.map((p) => ratio(floorRatio(p.gateway.rps, p.floor?.rps))).join(", ")}.`,
          ]),
    ],
  };
}

function workingSection(w: Working | { skipped: string }): Section {
  if ("skipped" in w) return { title: "Working tasks", header: ["skipped"], rows: [[w.skipped]], notes: [] };
  const met = w.after.rss < AIMS.workingRssBytes;
  return {
    title: `${int(w.tasks)} tasks working at once (the upstream holds every call open)`,
    header: [
      "RSS before MiB",
      "RSS after MiB",
      "delta MiB",
      "RSS B/task",
      "live heap B/task",
      "peak RSS MiB",
      "gateway fds",
      "held upstream",
      "create s",
      `aim < ${AIMS.workingRssBytes / 1e6} MB`,
    ],
    rows: [
      [
        mib(w.before.rss),
        mib(w.after.rss),
        mib(w.after.rss - w.before.rss),
        int(w.bytesPerTask),
        int((w.heap.afterGc.heapUsed - w.heapBefore.afterGc.heapUsed) / w.tasks),
        mib(w.after.hwm),
        int(w.gatewayOpenFiles),
        int(w.heldByUpstream),
        w.createSec.toFixed(1),
        met ? "met" : "missed",
      ],
    ],
    notes: [
      `${w.sampledWorking}/${w.sampled} sampled tasks answered working; loader retries at a task limit: ${w.retries}.`,
      "live heap B/task: V8 heap used after a forced full GC, after minus before, per task; gateway fds: one upstream socket per working task.",
      heapNote(w.heap),
    ],
  };
}

function completedSection(c: Completed | null): Section | undefined {
  if (c === null) return undefined;
  return {
    title: `${int(c.created)} completed tasks with 1 KB results against tasks.storeBytes = ${mib(c.storeBytes)} MiB`,
    header: [
      "record B",
      "capacity",
      "still resolve",
      "evicted",
      "budget used MiB",
      "RSS before MiB",
      "RSS after MiB",
      "delta MiB",
      "delta ÷ budget",
      "live heap delta MiB",
      "peak RSS MiB",
      "budget holds",
    ],
    rows: [
      [
        int(c.recordBytes),
        int(c.capacity),
        int(c.resolved),
        int(c.notFound),
        mib(c.resolved * c.recordBytes),
        mib(c.before.rss),
        mib(c.after.rss),
        mib(c.after.rss - c.before.rss),
        ((c.after.rss - c.before.rss) / c.storeBytes).toFixed(2),
        mib(c.heap.afterGc.heapUsed - c.heapBefore.afterGc.heapUsed),
        mib(c.after.hwm),
        c.holds ? (c.exact ? "yes, exactly" : "yes (not full)") : "NO",
      ],
    ],
    notes: [
      "live heap delta: V8 heap used after a forced full GC, after minus before; the RSS beyond it is garbage not yet collected and heap V8 keeps.",
      'capacity = floor(storeBytes / record B), record B being what src/store/memory-store.ts charges (JSON length + fixed overhead); "still resolve" counts tasks/get answers over every created id.',
      `created in ${c.createSec.toFixed(1)} s; other answers: ${c.other}; loader retries at a task limit: ${c.retries}.`,
      heapNote(c.heap),
    ],
  };
}

function sections(r: TaskResults): Section[] {
  return [
    promotionSection(r),
    promotionLoadSection(r),
    tasksGetSection(r),
    workingSection(r.working),
    completedSection(r.completed),
  ].filter((s): s is Section => s !== undefined);
}

export function renderText(r: TaskResults): string {
  const out: string[] = [];
  for (const s of sections(r)) {
    out.push("", s.title, renderTextTable(s.header, s.rows));
    for (const n of s.notes) out.push(`  ${n}`);
  }
  return out.join("\n");
}

function runMarkdown(r: TaskResults, file: string): string[] {
  const m = r.meta.machine;
  const out: string[] = [
    "",
    `### Gateway: ${r.meta.gateway}, ${r.meta.mode} run of ${r.meta.date}`,
    "",
    `\`${r.meta.command}\`, ${r.meta.elapsedSec.toFixed(0)} s${r.meta.commit === undefined ? "" : `, gateway at ${r.meta.commit}`}. Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Linux ${m.kernel};`,
    `Node ${m.node}; ${m.wrk?.replace(/\s*Copyright.*$/, "") ?? "wrk ?"}; open files limit ${r.meta.openFilesLimit ?? "?"}. Raw figures: \`bench/out/${file}\`.`,
  ];
  for (const s of sections(r)) {
    out.push("", `#### ${s.title}`, "", mdTable(s.header, s.rows));
    if (s.notes.length > 0) out.push("", ...s.notes.map((n) => `- ${n}`));
  }
  out.push("", `Plan: \`${JSON.stringify(r.meta.plan)}\``);
  return out;
}

/** The section for every run given (the gateway under tsx and/or compiled), newest figures of each. */
export function renderMarkdown(runs: ReadonlyArray<{ results: TaskResults; file: string }>): string {
  const out: string[] = [
    TASKS_MARKERS.start,
    "",
    "## Tasks (generated)",
    "",
    "Every program is its own process on loopback: the legacy (2025-11-25) upstream `bench/tasks/legacy-upstream.ts`,",
    "the gateway (`--config …`, log level warn, upstream era legacy), wrk with `bench/wrk/mcp.lua`, and for",
    "tasks/get its floor `bench/tasks/get-floor.ts` (node:http answering the gateway's stored answers from a Map).",
    "Requests through the gateway are 2026-07-28 requests declaring `io.modelcontextprotocol/tasks`; the gateway opens",
    "the legacy session upstream on the client's behalf. CPU is read from `/proc/<pid>/stat` of each process tree;",
    "memory from `/proc/<pid>/status` (VmRSS, VmHWM) of the gateway's node process, a fresh one per memory scenario.",
    "The heap figures come from a probe preloaded into that process (`bench/lib/mem-probe.ts`), read after VmRSS.",
    "",
    "```sh",
    "npm run bench -- tasks                   # quick: 20,000 completed tasks, 5 s points (< 2 min)",
    "npm run bench -- tasks --full            # 100,000 completed tasks, 15 s points (also run by npm run bench -- --full)",
    "npm run bench -- --src tasks             # the gateway from src/ under tsx instead of the compiled dist/",
    "npm run bench -- tasks --report          # rewrite this section from bench/out/tasks-results*.json",
    "```",
  ];
  for (const run of runs) out.push(...runMarkdown(run.results, run.file));
  out.push("", TASKS_MARKERS.end);
  return out.join("\n");
}
