// What the Redis store's scripts cost Redis per operation, measured on a private
// redis-server (nothing else runs commands on it, so INFO commandstats counts only
// this store): create, a progress update that grows the task, one of the same size,
// the completion (1 KB result), a get of a finished task, and (when the store
// evicts) a create that has to evict a finished task.
//
//   node --import tsx bench/investigations/store-scripts.ts [--src DIR] [--label NAME] [--n 2000] [--port 6391]
//
// --src: a directory holding src/store/ (default: this repository). To compare with
// an older commit, extract its store into a directory first, e.g.
//   for f in redis-store redis-scripts redis-keys task-bytes task-store store-url; do git show REV:src/store/$f.ts > DIR/src/store/$f.ts; done
//   (and src/protocol/json.ts, jsonrpc.ts), with a package.json {"type":"module"} and node_modules linked.
// Prints one Markdown table row per operation.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";

const { values } = parseArgs({
  options: { src: { type: "string" }, label: { type: "string" }, n: { type: "string" }, port: { type: "string" } },
});
const root = resolve(values.src ?? resolve(import.meta.dirname, "../.."));
const label = values.label ?? root;
const N = Number(values.n ?? 2_000);
const PORT = Number(values.port ?? 6391);

type Store = {
  create(t: unknown, l: unknown): Promise<unknown>;
  update(t: unknown): Promise<unknown>;
  get(id: string): Promise<unknown>;
  stats(): Promise<{ bytes: number }>;
  close(): Promise<void>;
};
const { RedisTaskStore } = (await import(`${root}/src/store/redis-store.ts`)) as {
  RedisTaskStore: new (o: unknown) => Store;
};
const { storedTask } = (await import(`${root}/src/store/task-store.ts`)) as {
  storedTask: (r: unknown, json: string) => unknown;
};

const server = spawn(
  "redis-server",
  ["--port", String(PORT), "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"],
  { stdio: "ignore" },
);
await sleep(300);
const client = new Redis({ port: PORT, host: "127.0.0.1" });

const T = Date.now();
interface Rec {
  taskId: string;
  owner: string;
  status: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  inputRequests: Record<string, unknown>;
  statusMessage?: string;
  result?: unknown;
}
const rec = (taskId: string, owner: string, extra: Partial<Rec> = {}): Rec => ({
  taskId,
  owner,
  status: "working",
  createdAt: new Date(T).toISOString(),
  lastUpdatedAt: new Date(T).toISOString(),
  ttlMs: 3_600_000,
  pollIntervalMs: 1_000,
  inputRequests: {},
  ...extra,
});
const wire = (r: Rec): string => {
  const { owner: _o, inputRequests: _i, ...rest } = r;
  return JSON.stringify({ resultType: "complete", ...rest });
};
const st = (r: Rec): unknown => storedTask(r, wire(r));
const LIMITS = { maxTasks: 1_000_000, maxTasksPerCaller: 1_000_000 };
const IGNORED = new Set(["info", "config", "ping", "client", "hello", "select"]);

async function counts(): Promise<{ scripts: number; usec: number; inner: number; cpu: number }> {
  let scripts = 0;
  let usec = 0;
  let inner = 0;
  for (const line of (await client.info("commandstats")).split("\n")) {
    const m = /^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (!m) continue;
    const [, name = "", calls, us] = m;
    if (name === "evalsha" || name === "eval") {
      scripts += Number(calls);
      usec += Number(us);
    } else if (!IGNORED.has(name.split("|")[0] ?? "")) inner += Number(calls);
  }
  const cpu = await client.info("cpu");
  const user = Number(/used_cpu_user:([\d.]+)/.exec(cpu)?.[1]);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(cpu)?.[1]);
  return { scripts, usec, inner, cpu: (user + sys) * 1e6 };
}

async function phase(name: string, op: (i: number) => Promise<unknown>): Promise<void> {
  await client.config("RESETSTAT");
  const cpu0 = (await counts()).cpu;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await op(i);
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  const c = await counts();
  const f = (v: number): string => v.toFixed(1);
  console.log(
    `| ${label} | ${name} | ${f(c.scripts / N)} | ${f(c.usec / N)} | ${f(c.inner / N)} | ${f((c.cpu - cpu0) / N)} | ${f(us / N)} |`,
  );
}

const owner = (i: number): string => `owner-${String(i % 10).padStart(2, "0")}`;
const id = (i: number): string => `task-${String(i).padStart(6, "0")}`;
const lease = { replicaId: "r1", leaseMs: 300_000 };
const store = new RedisTaskStore({ client, prefix: "sb:", maxBytes: 256 * 1024 * 1024, now: Date.now, lease });
const result = { content: [{ type: "text", text: "x".repeat(1_024) }], isError: false };
try {
  console.log("| code | operation | scripts/op | script µs/op | commands inside/op | Redis CPU µs/op | client µs/op |");
  console.log("|---|---|---:|---:|---:|---:|---:|");
  await phase("create", (i) => store.create(st(rec(id(i), owner(i))), LIMITS));
  await phase("progress, grows (first message)", (i) =>
    store.update(st(rec(id(i), owner(i), { statusMessage: "progress 1/3" }))),
  );
  await phase("progress, same size", (i) => store.update(st(rec(id(i), owner(i), { statusMessage: "progress 2/3" }))));
  await phase("complete (1 KB result)", (i) => store.update(st(rec(id(i), owner(i), { status: "completed", result }))));
  await phase("get (finished)", (i) => store.get(id(i)));
  // A budget exactly full of finished tasks: every create evicts one (a store that evicts; an older one refuses).
  const full = new RedisTaskStore({
    client,
    prefix: "sb:",
    maxBytes: (await store.stats()).bytes,
    now: Date.now,
    lease,
  });
  await phase("create at a full budget", (i) =>
    full.create(st(rec(`evict-${String(i).padStart(5, "0")}`, owner(i))), LIMITS),
  );
  await full.close();
} finally {
  await store.close();
  client.disconnect();
  server.kill("SIGKILL");
}
