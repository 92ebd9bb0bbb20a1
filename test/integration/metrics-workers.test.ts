// `--workers 2`: a scrape of the shared port shows every worker (issue 23), whichever worker node:cluster hands it
// to. Counters are the sum over the workers (tasks created through either), per-process gauges keep one series per
// worker (its `replica` label, the process metrics included), and the store's gauges are one series, not doubled;
// /status.json sums what each worker runs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { createTask, replicaConfig, Replicas } from "../helpers/replicas.js";

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
