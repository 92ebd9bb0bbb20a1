// Security and durability regression: a Sentinel that has not yet learned of a failover names the old primary,
// and a restarted old primary answers as an empty primary until the Sentinels turn it into a replica. A client
// that believed the first Sentinel to answer wrote there, and the resync erased tasks clients had been told
// existed (the soak lost five that way). Here a real Sentinel is made stale for good: after a real failover
// (epoch 1) it forgets the deployment and monitors a stray empty redis-server under the same name (epoch 0), and
// it is listed first. The gateway's clients must follow the newest configuration; a stock ioredis client, the
// control, shows that the stale Sentinel does mislead.
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeRedis, connectRedis, type RedisClient } from "../../src/store/redis-connect.js";
import { parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";
import { pollUntil } from "../helpers/poll.js";
import { cli, startRedisNode, startRedisSentinel, type PrivateSentinel } from "../helpers/redis-topologies.js";

let sentinel: PrivateSentinel;
let stray: { port: number; stop(): Promise<void> };
let primary: number;
let staleFirst: RedisStoreSpec;
const prefix = `mtg-newest:${randomBytes(6).toString("hex")}:`;

const sentinelPorts = (): number[] => sentinel.sentinels.map((s) => s.port);
const named = async (port: number): Promise<number> =>
  Number((await cli(port, "SENTINEL", "get-master-addr-by-name", sentinel.masterName)).trim().split("\n")[1]);

beforeAll(async () => {
  [sentinel, stray] = await Promise.all([startRedisSentinel(), startRedisNode()]);
  const [s1, s2, s3] = sentinelPorts() as [number, number, number];
  // A real failover: the replica becomes the primary and the configuration epoch goes up.
  const before = await sentinel.primary();
  await cli(s1, "SENTINEL", "FAILOVER", sentinel.masterName);
  primary = await sentinel.promotedFrom(before);
  await pollUntil(
    () => Promise.all(sentinelPorts().map(named)),
    (ports) => ports.every((p) => p === primary),
    20_000,
  );
  // The third Sentinel goes stale: it names the stray under the same name, at epoch 0.
  await cli(s3, "SENTINEL", "REMOVE", sentinel.masterName);
  await cli(s3, "SENTINEL", "MONITOR", sentinel.masterName, "127.0.0.1", String(stray.port), "2");
  expect(await named(s3)).toBe(stray.port);
  const spec = parseStoreSpec(
    `redis-sentinel://127.0.0.1:${s3},127.0.0.1:${s1},127.0.0.1:${s2}#${sentinel.masterName}`,
  );
  if (spec.kind !== "redis") throw new Error("not a Redis spec");
  staleFirst = spec;
}, 90_000);

afterAll(async () => {
  await Promise.allSettled([sentinel?.stop(), stray?.stop()]);
}, 60_000);

/** Which node holds `key`: the primary the Sentinels agreed on, the stray, or neither. */
async function holder(key: string): Promise<"primary" | "stray" | "none"> {
  if ((await cli(primary, "EXISTS", key)).trim() === "1") return "primary";
  if ((await cli(stray.port, "EXISTS", key)).trim() === "1") return "stray";
  return "none";
}

describe("Sentinel: a client follows the newest configuration, not the first Sentinel to answer", () => {
  it("control: a stock ioredis client asking the stale Sentinel first writes to the stray", async () => {
    const [s1, s2, s3] = sentinelPorts() as [number, number, number];
    const stock = new Redis({
      sentinels: [s3, s1, s2].map((port) => ({ host: "127.0.0.1", port })),
      name: sentinel.masterName,
      role: "master",
      maxRetriesPerRequest: 0,
    });
    try {
      await stock.set(`${prefix}control`, "1");
      expect(await holder(`${prefix}control`)).toBe("stray");
    } finally {
      stock.disconnect();
      await cli(stray.port, "DEL", `${prefix}control`);
    }
  });

  it("the store's client writes to the primary the newest Sentinels name, on its first connection and on a reconnection", async () => {
    const client: RedisClient = await connectRedis(staleFirst, { connectTimeoutMs: 10_000 });
    try {
      await client.set(`${prefix}first`, "1");
      expect(await holder(`${prefix}first`)).toBe("primary");
      // A dropped connection resolves the primary again: still not the stray.
      if (!(client instanceof Redis)) throw new Error("a Sentinel client is a Redis");
      const ready = once(client, "ready");
      client.disconnect(true);
      await ready;
      await client.set(`${prefix}again`, "1");
      expect(await holder(`${prefix}again`)).toBe("primary");
      expect(await cli(stray.port, "DBSIZE")).toMatch(/^0\s*$/);
    } finally {
      await client.del(`${prefix}first`, `${prefix}again`).catch(() => undefined);
      await closeRedis(client);
    }
  });

  it("with every Sentinel but one unreachable it still connects, through the one left", async () => {
    const [s1] = sentinelPorts() as [number];
    const spec = parseStoreSpec(`redis-sentinel://127.0.0.1:1,127.0.0.1:${s1}#${sentinel.masterName}`);
    if (spec.kind !== "redis") throw new Error("not a Redis spec");
    const client = await connectRedis(spec, { connectTimeoutMs: 10_000 });
    try {
      await client.set(`${prefix}one-left`, "1");
      expect(await holder(`${prefix}one-left`)).toBe("primary");
    } finally {
      await client.del(`${prefix}one-left`).catch(() => undefined);
      await closeRedis(client);
    }
  });
});
