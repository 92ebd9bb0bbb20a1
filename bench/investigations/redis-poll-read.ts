// What the gateway's process spends per tasks/get read on a Redis store, in process: the read as strings (the
// JSON decoded, then the answer built as a string and encoded for the socket, as before issue 38) against the read
// as bytes (RedisTaskStore.getBytes and pollAnswer, the JSON as Redis sent it). CPU time of this process
// (process.cpuUsage), not wall time, so other load on the machine moves it less; rounds alternate.
//
//   node --import tsx bench/investigations/redis-poll-read.ts [--redis URL] [--tasks 1000] [--rounds 10]
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { pollAnswer } from "../../src/endpoints/task-poll.js";
import { RedisTaskStore } from "../../src/store/redis-store.js";
import { storedTask, type TaskRecord } from "../../src/store/task-store.js";

const { values } = parseArgs({
  options: {
    redis: { type: "string", default: "redis://127.0.0.1:6379" },
    tasks: { type: "string", default: "1000" },
    rounds: { type: "string", default: "10" },
  },
});
const n = Number(values.tasks);
const client = new Redis(values.redis);
const prefix = `bench-poll-read:${process.pid}:`;
const store = new RedisTaskStore({
  client,
  prefix,
  maxBytes: 1 << 30,
  now: Date.now,
  lease: { replicaId: "bench", leaseMs: 60_000 },
});

const ids: string[] = [];
const text = "é".repeat(400) + "x".repeat(224); // 1 KB of UTF-8, multi-byte included
for (let i = 0; i < n; i++) {
  const now = new Date().toISOString();
  const record: TaskRecord = {
    taskId: `t-${i}`,
    owner: "owner",
    status: "completed",
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: 600_000,
    pollIntervalMs: 1000,
    inputRequests: {},
    result: { content: [{ type: "text", text }], isError: false },
  };
  const json = JSON.stringify({ resultType: "complete", ...record, owner: undefined });
  await store.create(storedTask(record, json), { maxTasks: n + 1, maxTasksPerCaller: n + 1 });
  ids.push(record.taskId);
}

/** 64 reads at a time over every id, as 64 pollers would; returns CPU µs per read. */
async function pass(read: (id: string) => Promise<number>): Promise<number> {
  const start = process.cpuUsage();
  let next = 0;
  let bytes = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < ids.length) bytes += await read(ids[next++] as string);
    }),
  );
  const used = process.cpuUsage(start);
  if (bytes === 0) throw new Error("read nothing");
  return (used.user + used.system) / ids.length;
}

const asText = async (id: string): Promise<number> => {
  const task = await store.get(id);
  if (!task) throw new Error(`missing ${id}`);
  const body = `{"jsonrpc":"2.0","id":1,"result":${task.json}}`;
  return Buffer.byteLength(body) + Buffer.from(body).length;
};
const asBytes = async (id: string): Promise<number> => {
  const task = await store.getBytes(id);
  if (!task) throw new Error(`missing ${id}`);
  return pollAnswer(1, task.bytes).length;
};

const results: Record<string, number[]> = { text: [], bytes: [] };
await pass(asText);
await pass(asBytes);
for (let r = 0; r < Number(values.rounds); r++) {
  const order = r % 2 === 0 ? (["text", "bytes"] as const) : (["bytes", "text"] as const);
  for (const which of order) results[which]?.push(await pass(which === "text" ? asText : asBytes));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
for (const [which, xs] of Object.entries(results))
  console.log(`${which}: median ${median(xs).toFixed(1)} µs CPU per read (${xs.map((x) => x.toFixed(1)).join(", ")})`);
await store.close();
const keys = await client.keys(`${prefix}*`);
if (keys.length > 0) await client.del(...keys);
client.disconnect();
