// What one tasks/get read costs on the memory store, in process: MemoryTaskStore.getBytesNow over finished tasks,
// the lookup, the expiry check and the use that moves the task to the front of the LRU (issue 38, item 3). Ids are
// read in turn, as the bench's pollers cycle over theirs, so every read moves a task that is not already the most
// recently used. CPU time of this process (process.cpuUsage) and time in the collector (PerformanceObserver "gc")
// per read, not wall time, so other load on the machine moves it less; the median of the rounds is printed.
//
//   node --import tsx bench/investigations/memory-poll-read.ts [--tasks 10000] [--owners 1] [--reads 2000000] [--rounds 10] [--answer]
//
// --answer also builds the poll's answer (pollAnswer: the JSON-RPC envelope around the stored bytes), as the lean
// path does. To compare two trees, copy this file into the other and run both in turn (each imports its own src/).
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { pollAnswer } from "../../src/endpoints/task-poll.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import { storedTask, type TaskRecord } from "../../src/store/task-store.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "10000" },
    owners: { type: "string", default: "1" },
    reads: { type: "string", default: "2000000" },
    rounds: { type: "string", default: "10" },
    answer: { type: "boolean", default: false },
  },
});
const n = Number(values.tasks);
const owners = Number(values.owners);
const reads = Number(values.reads);
const rounds = Number(values.rounds);

const store = new MemoryTaskStore(1 << 30, Date.now);
const ids: string[] = [];
const text = "x".repeat(1_000); // a 1 KB result, as the bench's tasks have
for (let i = 0; i < n; i++) {
  const now = new Date().toISOString();
  const record: TaskRecord = {
    taskId: `task-${i.toString().padStart(8, "0")}-${Math.random().toString(36).slice(2)}`,
    owner: `owner-${i % owners}`,
    status: "completed",
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: 3_600_000,
    pollIntervalMs: 1000,
    inputRequests: {},
    result: { content: [{ type: "text", text }], isError: false },
  };
  const json = JSON.stringify({ resultType: "complete", ...record, owner: undefined });
  const created = await store.create(storedTask(record, json), { maxTasks: n + 1, maxTasksPerCaller: n + 1 });
  if (!created.ok) throw new Error(`create refused: ${created.refusal}`);
  ids.push(record.taskId);
}

let gcMs = 0;
let gcs = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcMs += entry.duration;
    gcs++;
  }
});
observer.observe({ entryTypes: ["gc"] });

let sink = 0;
function pass(count: number): void {
  let cursor = 0;
  for (let i = 0; i < count; i++) {
    const entry = store.getBytesNow(ids[cursor] as string);
    if (entry === undefined) throw new Error(`missing ${ids[cursor]}`);
    sink += values.answer ? pollAnswer(i, entry.bytes).length : entry.bytes.length;
    if (++cursor === ids.length) cursor = 0;
  }
}

/** Lets the observer's entries arrive (they are delivered from a later turn of the event loop). */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

pass(reads); // warm-up: compiled code and a steady Map
await settle();
const cpu: number[] = [];
const gc: number[] = [];
const gcCount: number[] = [];
for (let r = 0; r < rounds; r++) {
  gcMs = 0;
  gcs = 0;
  const start = process.cpuUsage();
  pass(reads);
  const used = process.cpuUsage(start);
  await settle();
  cpu.push(((used.user + used.system) * 1000) / reads);
  gc.push((gcMs * 1e6) / reads);
  gcCount.push(gcs);
}
observer.disconnect();
await store.close();
if (sink === 0) throw new Error("read nothing");

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};
const fmt = (xs: number[]): string =>
  `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
console.log(
  `${n} finished tasks, ${owners} owner(s), ${reads} reads × ${rounds} rounds${values.answer ? ", with pollAnswer" : ""}: ` +
    `CPU ns/read ${fmt(cpu)}, GC ns/read ${fmt(gc)}, collections/round ${median(gcCount)}`,
);
