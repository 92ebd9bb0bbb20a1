// Rate limits shared through Redis (a redis:// tasks.store): two replica processes, and `--workers 2`, spend one
// budget between them (5 allowed in total, not 10), in keys that carry one hash tag and a TTL. With Redis gone
// mid-run (killed, or hanging under SIGSTOP), limits.onStoreDown decides: allow lets requests through, deny
// refuses them with 503; once Redis is back, limits apply again. The outage uses a private redis-server (never the shared one at 6379).
import { afterAll, describe, expect, it } from "vitest";
import { startGateway } from "../../src/index.js";
import { startPrivateRedis, type PrivateRedis } from "../helpers/redis-server.js";
import { TEST_REDIS_URL } from "../helpers/redis.js";
import { childPids, replicaConfig, rpc, waitFor, type Json } from "../helpers/replicas.js";
import { replicaSuite } from "../helpers/replica-suite.js";

const suite = replicaSuite();

const FIVE: Json = { rules: [{ name: "five", tool: "echo", per: "caller", requests: 5, perMs: 60_000 }] };
const WHO = { authorization: "Bearer one-caller" };

function configWith(prefix: string, limits: Json, store = TEST_REDIS_URL): Json {
  return { ...replicaConfig(suite.upstream.url, store, prefix), limits };
}

async function statuses(urls: readonly string[], n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const url = urls[i % urls.length] as string;
    out.push((await rpc(url, "tools/call", { name: "echo", arguments: { text: `${i}` } }, { headers: WHO })).status);
  }
  return out;
}

describe("one budget across processes (the shared Redis)", () => {
  it("two replicas: 5 allowed in total, not 10; the keys share one hash tag and expire", async () => {
    const prefix = suite.redis.freshPrefix();
    const [a, b] = await Promise.all([
      suite.replicas.start("a", configWith(prefix, FIVE)),
      suite.replicas.start("b", configWith(prefix, FIVE)),
    ]);
    const got = await statuses([a.url, b.url], 10);
    expect(got.filter((s) => s === 200)).toHaveLength(5);
    expect(got.filter((s) => s === 429)).toHaveLength(5);
    const keys = await suite.redis.keys(`${prefix}{${prefix}rl}:`);
    expect(keys).toHaveLength(1);
    const ttl = await suite.redis.client.pttl(keys[0] as string);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("--workers 2: 5 allowed in total, not 10", async () => {
    const prefix = suite.redis.freshPrefix();
    const primary = await suite.replicas.start("primary", configWith(prefix, FIVE), ["--workers", "2"]);
    await waitFor(async () => ((await childPids(primary.pid)).length === 2 ? true : undefined), "two workers");
    // Every request is a connection of its own: the cluster spreads them over both workers.
    const got = await statuses([primary.url], 10);
    expect(got.filter((s) => s === 200)).toHaveLength(5);
    expect(got.filter((s) => s === 429)).toHaveLength(5);
  });
});

describe("Redis stopped mid-run", () => {
  let privateRedis: PrivateRedis | undefined;
  afterAll(async () => {
    await privateRedis?.stop();
  });

  it("onStoreDown allow passes requests, deny refuses them with 503; limits apply again once Redis is back", async () => {
    privateRedis = await startPrivateRedis();
    const limits = (onStoreDown: "allow" | "deny") => ({
      rules: [{ name: "one", tool: "echo", requests: 1, perMs: 60_000 }],
      onStoreDown,
    });
    const start = (onStoreDown: "allow" | "deny") =>
      startGateway({
        upstream: { url: suite.upstream.url },
        server: { host: "127.0.0.1", port: 0 },
        log: { level: "silent" },
        tasks: { store: privateRedis?.url as string, storePrefix: `rl-outage-${onStoreDown}:` },
        limits: limits(onStoreDown),
      });
    const allow = await start("allow");
    const deny = await start("deny");
    try {
      expect(await statuses([allow.url], 2)).toEqual([200, 429]);
      expect(await statuses([deny.url], 2)).toEqual([200, 429]);

      await privateRedis.stop();
      // Fail open: every call passes (and reaches the upstream).
      expect(await statuses([allow.url], 3)).toEqual([200, 200, 200]);
      // Fail closed: a clear 503, never the upstream.
      const refused = await rpc(deny.url, "tools/call", { name: "echo", arguments: { text: "x" } }, { headers: WHO });
      expect(refused.status).toBe(503);
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.error?.data).toMatchObject({ reason: "rate_limit_unavailable" });

      await privateRedis.start();
      // The connection comes back by itself (capped back-off); then the (empty) Redis counts again.
      await waitFor(
        async () => ((await statuses([allow.url], 1))[0] === 429 ? true : undefined),
        "limits applied again after Redis came back",
        15_000,
      );

      // A Redis that hangs (SIGSTOP) rather than refusing: the check gives up (after 1 s, not the connection's 10 s
      // command timeout) and onStoreDown answers, as for a Redis that is gone.
      privateRedis.pause();
      try {
        expect((await statuses([deny.url], 1))[0]).toBe(503);
        expect(await statuses([allow.url], 2)).toEqual([200, 200]);
      } finally {
        privateRedis.resume();
      }
    } finally {
      await allow.close(0);
      await deny.close(0);
    }
  });
});
