// `--workers 2`: one scrape of /metrics on the shared port shows every worker. Each scrape is a new connection,
// so node:cluster spreads them over both workers; whichever answers, its counters are the sum of both workers'
// (every earlier scrape counted once), each worker's per-process gauges are there under its own replica label,
// and the store's gauges are there once, not once per worker.
import { describe, expect, it } from "vitest";
import { TEST_REDIS_URL } from "../helpers/redis.js";
import { childPids, replicaConfig, waitFor } from "../helpers/replicas.js";
import { replicaSuite } from "../helpers/replica-suite.js";
import { parseExposition, value } from "../helpers/prometheus.js";

const suite = replicaSuite();

async function scrape(origin: string) {
  const res = await fetch(`${origin}/metrics`, { headers: { connection: "close" } });
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

describe("--workers 2: /metrics", () => {
  it("aggregates every worker: counters summed, per-process gauges one series per worker, store gauges once", async () => {
    const prefix = suite.redis.freshPrefix();
    const config = { ...replicaConfig(suite.upstream.url, TEST_REDIS_URL, prefix), metrics: { enabled: true } };
    const primary = await suite.replicas.start("primary", config, ["--workers", "2"]);
    await waitFor(async () => ((await childPids(primary.pid)).length === 2 ? true : undefined), "two workers");
    const scrapes = 8;
    for (let i = 0; i < scrapes; i++) await scrape(primary.origin);
    const samples = await scrape(primary.origin);
    // Every earlier scrape is counted, whichever worker answered it (this one is counted once it is answered).
    expect(value(samples, "mcp_gateway_requests_total", { route: "metrics" })).toBe(scrapes);
    // A per-process gauge: one series per worker, each under its own replica label.
    const replicasSeen = new Set(
      samples.filter((s) => s.name === "mcp_gateway_event_streams").map((s) => s.labels.replica),
    );
    expect(replicasSeen.size, JSON.stringify([...replicasSeen])).toBe(2);
    // A store gauge: the same in both workers, shown once (max), not doubled.
    const budget = samples.filter((s) => s.name === "mcp_gateway_store_budget_bytes");
    expect(budget).toHaveLength(1);
    expect(budget[0]?.value).toBe(256 * 1024 * 1024);
  });
});
