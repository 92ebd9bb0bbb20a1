// `--workers 2`: a scrape of the shared port shows every worker (issue 23), whichever worker node:cluster hands it
// to. Counters are the sum over the workers (tasks created through either), per-process gauges keep one series per
// worker (its `replica` label, the process metrics included), and the store's gauges are one series, not doubled;
// /status.json sums what each worker runs, and lists each worker (its id, pid and last reload). Every log line
// of a worker carries its `worker`, the primary's worker 0, and its lifecycle lines are JSON lines too.
import { readFile, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { childPids, createTask, replicaConfig, Replicas, waitFor, type ReplicaProcess } from "../helpers/replicas.js";

const replicas = new Replicas();
let redis: TestRedis;
let upstream: SdkUpstream;

beforeAll(async () => {
  redis = await testRedis();
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await replicas.killAll();
  await replicas.cleanup();
  await upstream?.close();
  await redis?.cleanup();
});

/** One scrape on a connection of its own (so node:cluster may hand it to either worker). */
async function scrape(origin: string): Promise<string> {
  const res = await fetch(`${origin}/metrics`, { headers: { connection: "close" } });
  expect(res.status).toBe(200);
  return res.text();
}

function series(text: string, name: string): string[] {
  return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

function total(text: string, name: string): number {
  return series(text, name).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

describe("--workers 2: /metrics and /status.json", () => {
  it("aggregates every worker: counters summed, per-process gauges by replica, store gauges once", async () => {
    const prefix = redis.freshPrefix();
    const primary = await replicas.start(
      "primary",
      replicaConfig(upstream.url, TEST_REDIS_URL, prefix, { rules: [{ tool: "slow_task", mode: "always" }] }),
      ["--workers", "2"],
    );
    // Each task is created on whichever worker its connection reaches.
    for (let i = 0; i < 4; i++) await createTask(primary.url, "slow_task", { durationMs: 50, steps: 1 });
    for (let i = 0; i < 4; i++) {
      const text = await scrape(primary.origin);
      expect(total(text, "mcp_gateway_tasks_created_total")).toBe(4);
      const replicasSeen = new Set(
        series(text, "mcp_gateway_process_resident_memory_bytes").map((l) => /replica="([^"]+)"/.exec(l)?.[1]),
      );
      expect(replicasSeen.size).toBe(2);
      expect(series(text, "mcp_gateway_store_budget_bytes")).toHaveLength(1);
      expect(series(text, "mcp_gateway_store_tasks")).toHaveLength(1);
      expect(total(text, "mcp_gateway_store_tasks")).toBe(4);
    }
    // /status.json too: what each worker runs is summed, whichever worker answers.
    for (let i = 0; i < 2; i++) await createTask(primary.url, "slow_task", { durationMs: 30_000, steps: 300 });
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${primary.origin}/status.json`);
      expect(res.status).toBe(200);
      const status = (await res.json()) as { tasks: { working: number }; workers?: string[]; oldest: unknown[] };
      expect(status.workers).toHaveLength(2);
      expect(status.tasks.working).toBe(2);
      expect(status.oldest).toHaveLength(2);
    }
  }, 60_000);
});

interface WorkerRow {
  worker: number;
  pid: number;
  replica: string;
  reload: { lastOk: boolean; failures: number };
}

/** The JSON log lines a process wrote on stderr. */
function logLines(p: ReplicaProcess): Array<Record<string, unknown>> {
  return p
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("--workers 2: which worker", () => {
  it("lists every worker on /status.json, tags every log line with its worker, and shows a refused SIGHUP per worker", async () => {
    const prefix = redis.freshPrefix();
    const primary = await replicas.start("primary", replicaConfig(upstream.url, TEST_REDIS_URL, prefix), [
      "--workers",
      "2",
    ]);
    const pids = await waitFor(async () => {
      const found = await childPids(primary.pid);
      return found.length === 2 ? found : undefined;
    }, "two workers");
    const rows = async (): Promise<WorkerRow[]> => {
      const res = await fetch(`${primary.origin}/status.json`, { headers: { connection: "close" } });
      return ((await res.json()) as { workers: WorkerRow[] }).workers;
    };
    const before = await rows();
    expect(before.map((w) => w.worker)).toEqual([1, 2]);
    expect(before.map((w) => w.pid).sort((a, b) => a - b)).toEqual(pids);
    for (const w of before) expect(w.reload).toMatchObject({ lastOk: true, failures: 0 });

    // An invalid config, then SIGHUP: each worker refuses it, says so on a line naming it, and keeps the old one.
    const args = primary.child.spawnargs;
    const file = args[args.indexOf("--config") + 1] as string;
    const config = JSON.parse(await readFile(file, "utf8")) as { tasks: Record<string, unknown> };
    await writeFile(file, JSON.stringify({ ...config, tasks: { ...config.tasks, thresholdMs: -1 } }));
    process.kill(primary.pid, "SIGHUP");
    const refused = await waitFor(() => {
      const lines = logLines(primary).filter(
        (l) => l.msg === "configuration reload failed; the old policy stays in force",
      );
      return lines.length === 2 ? lines : undefined;
    }, "both workers to refuse the reload");
    expect(refused.map((l) => l.worker).sort()).toEqual([1, 2]);
    await expect.poll(async () => (await rows()).map((w) => w.reload.lastOk)).toEqual([false, false]);
    const metrics = await (await fetch(`${primary.origin}/metrics`)).text();
    const failures = metrics.split("\n").filter((l) => l.startsWith("mcp_gateway_config_reload_failures_total{"));
    expect(failures).toHaveLength(2);
    for (const l of failures) expect(l.endsWith(" 1")).toBe(true);

    // The primary's own lines are JSON, worker 0.
    process.kill(primary.pid, "SIGTERM");
    expect((await primary.exited).code).toBe(0);
    const lines = logLines(primary);
    expect(lines).toContainEqual(
      expect.objectContaining({ worker: 0, msg: "mcp-task-gateway: SIGTERM received, shutting down 2 workers" }),
    );
    // Every line on stderr is a JSON line, and every one says which worker (or the primary) wrote it.
    const stderr = primary.stderr().trim().split("\n");
    expect(stderr.length).toBe(lines.length);
    for (const l of lines) expect([0, 1, 2]).toContain(l.worker);
  }, 60_000);
});
