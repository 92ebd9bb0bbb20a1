// What one finished task really costs the memory store beyond the bytes taskBytes
// counts for it (its tasks/get JSON and its owner): the figure behind
// ENTRY_OVERHEAD_BYTES (src/store/task-bytes.ts).
//
//   node --expose-gc --import tsx bench/investigations/store-entry-cost.ts [--tasks 38000] [--text 1024]
//
// One process, no gateway: a MemoryTaskStore with room for every task, then N
// finished tasks shaped as the engine stores them (a 1 KB text result by
// default, a 22-character id, an owner digest of its own). Memory is read after a full GC
// before and after: V8's heap used, what V8 counts as external (the Buffers'
// bytes), and the resident part of the brk heap ([heap] in /proc/self/smaps),
// where glibc keeps small native allocations: the Buffers' bytes with their
// chunk headers, and V8's per-ArrayBuffer bookkeeping that no counter shows.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { callerIdentity } from "../../src/policy/sets/identity.js";
import { MemoryTaskStore } from "../../src/store/memory-store.js";
import { ENTRY_OVERHEAD_BYTES, taskBytes } from "../../src/store/task-bytes.js";
import { storedTask } from "../../src/store/task-store.js";
import { newTaskId } from "../../src/tasks/task-id.js";
import { taskResultJson, type TaskRecord } from "../../src/tasks/task.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "38000" },
    text: { type: "string", default: "1024" },
  },
});

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

/** Resident KiB of the brk heap, glibc's main arena. */
function brkHeapBytes(): number {
  const smaps = readFileSync("/proc/self/smaps", "utf8");
  const at = smaps.indexOf("[heap]");
  if (at === -1) return 0;
  const rss = /\nRss:\s+(\d+) kB/.exec(smaps.slice(at));
  return Number(rss?.[1] ?? 0) * 1024;
}

function measure(): { heapUsed: number; external: number; brk: number } {
  gc?.();
  gc?.();
  const { heapUsed, external } = process.memoryUsage();
  return { heapUsed, external, brk: brkHeapBytes() };
}

async function main(): Promise<void> {
  const n = Number(values.tasks);
  const text = "x".repeat(Number(values.text));
  const store = new MemoryTaskStore(Number.MAX_SAFE_INTEGER, Date.now);
  const limits = { maxTasks: n, maxTasksPerCaller: n };
  let counted = 0;
  const before = measure();
  for (let i = 0; i < n; i++) {
    const stamp = new Date().toISOString();
    const record: TaskRecord = {
      taskId: newTaskId(),
      // A copy of its own, as each request computes its caller's digest afresh.
      owner: callerIdentity(""),
      status: "completed",
      createdAt: stamp,
      lastUpdatedAt: stamp,
      ttlMs: 3_600_000,
      pollIntervalMs: 1_000,
      inputRequests: {},
      result: { content: [{ type: "text", text }], isError: false },
    };
    const task = storedTask(record, taskResultJson(record));
    const created = await store.create(task, limits);
    if (!created.ok) throw new Error(`create refused: ${created.refusal}`);
    // What taskBytes counts without its fixed overhead.
    counted += taskBytes(task) - ENTRY_OVERHEAD_BYTES;
  }
  const after = measure();
  const per = (bytes: number): number => Math.round(bytes / n);
  const heap = per(after.heapUsed - before.heapUsed);
  const external = per(after.external - before.external);
  const brk = per(after.brk - before.brk);
  const point = {
    tasks: n,
    countedPerTask: per(counted),
    heapPerTask: heap,
    externalPerTask: external,
    brkHeapPerTask: brk,
    // V8's heap plus the native heap, beyond what taskBytes counts without its overhead.
    overheadPerTask: heap + brk - per(counted),
    entryOverheadBytes: ENTRY_OVERHEAD_BYTES,
    stored: (await store.stats()).stored,
  };
  process.stdout.write(`${JSON.stringify(point)}\n`);
  await store.close();
}

void main();
