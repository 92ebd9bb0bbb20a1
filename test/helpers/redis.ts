// A real Redis for the tests (127.0.0.1:6379 unless TEST_REDIS_URL says otherwise;
// .ci/run starts one). Each test file gets its own key prefix, so files running in
// parallel never see each other's keys, and a cleanup that deletes every key under
// it (call it in afterAll).
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { connectRedis, parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export function testRedisSpec(): RedisStoreSpec {
  const spec = parseStoreSpec(TEST_REDIS_URL);
  if (spec.kind !== "redis") throw new Error(`TEST_REDIS_URL must be a redis:// URL, not ${spec.kind}`);
  return spec;
}

export interface TestRedis {
  /** A client for the test file; cleanup() quits it. */
  client: Redis;
  /** The file's prefix: every key a test writes starts with it. */
  prefix: string;
  /** A fresh prefix under the file's one, for a store whose counters start at zero. */
  freshPrefix(): string;
  /** Another client on the same Redis (another "replica"); cleanup() quits it too. */
  connect(): Promise<Redis>;
  /** The keys under `prefix` (default: the file's). */
  keys(prefix?: string): Promise<string[]>;
  /** Deletes every key under the file's prefix and quits the clients. */
  cleanup(): Promise<void>;
}

async function scanKeys(client: Redis, prefix: string): Promise<string[]> {
  // The prefixes made here hold no glob characters (*, ?, [, \), so the pattern is literal.
  const found = new Set<string>();
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    for (const key of batch) found.add(key);
    cursor = next;
  } while (cursor !== "0");
  return [...found].sort();
}

export async function testRedis(): Promise<TestRedis> {
  const spec = testRedisSpec();
  const clients: Redis[] = [];
  const connect = async (): Promise<Redis> => {
    const client = await connectRedis(spec, { connectionName: "mcp-task-gateway-test" });
    clients.push(client);
    return client;
  };
  const client = await connect();
  const prefix = `mtg-test:${process.pid}:${randomBytes(6).toString("hex")}:`;
  let n = 0;
  return {
    client,
    prefix,
    freshPrefix: () => `${prefix}${++n}:`,
    connect,
    keys: (under = prefix) => scanKeys(client, under),
    cleanup: async () => {
      const keys = await scanKeys(client, prefix);
      for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
      await Promise.allSettled(clients.map((c) => c.quit()));
    },
  };
}
