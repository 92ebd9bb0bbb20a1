// A real Redis for the tests (127.0.0.1:6379 unless TEST_REDIS_URL says otherwise;
// .ci/run starts one). Each test file gets its own key prefix, so files running in
// parallel never see each other's keys, and a cleanup that deletes every key under
// it (call it in afterAll). fileRedis() does that, and more, from the file's own hooks.
import { randomBytes } from "node:crypto";
import { Cluster } from "ioredis";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { closeRedis, connectRedis, type RedisClient } from "../../src/store/redis-connect.js";
import { parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

function testRedisSpec(url: string): RedisStoreSpec {
  const spec = parseStoreSpec(url);
  if (spec.kind !== "redis") throw new Error(`TEST_REDIS_URL must be a redis:// URL, not ${spec.kind}`);
  return spec;
}

export interface TestRedis {
  /** A client for the test file; cleanup() quits it. */
  client: RedisClient;
  /** The file's prefix: every key a test writes starts with it. */
  prefix: string;
  /** A fresh prefix under the file's one, for a store whose counters start at zero. */
  freshPrefix(): string;
  /** Another client on the same Redis (another "replica"); cleanup() quits it too. */
  connect(): Promise<RedisClient>;
  /** A client for push (RedisTaskEvents' subscriber: sharded pub/sub on a cluster); cleanup() quits it too. */
  subscriber(): Promise<RedisClient>;
  /** The keys under `prefix` (default: the file's). */
  keys(prefix?: string): Promise<string[]>;
  /** Deletes every key under the file's prefix and quits the clients. */
  cleanup(): Promise<void>;
}

async function scanKeys(client: RedisClient, prefix: string): Promise<string[]> {
  // The prefixes made here hold no glob characters (*, ?, [, \), so the pattern is literal.
  const found = new Set<string>();
  // A cluster's keys are spread over its masters: each one is scanned.
  for (const node of client instanceof Cluster ? client.nodes("master") : [client]) {
    let cursor = "0";
    do {
      const [next, batch] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      for (const key of batch) found.add(key);
      cursor = next;
    } while (cursor !== "0");
  }
  return [...found].sort();
}

/** Deletes keys one command each (keys of different slots cannot share a DEL on a cluster); ioredis pipelines them. */
async function deleteKeys(client: RedisClient, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 500) await Promise.all(keys.slice(i, i + 500).map((k) => client.del(k)));
}

/** A TestRedis on the Redis at `url` (default TEST_REDIS_URL; a private cluster's or sentinel's URL works too). */
export async function testRedis(url = TEST_REDIS_URL): Promise<TestRedis> {
  const spec = testRedisSpec(url);
  const clients: RedisClient[] = [];
  const connect = async (subscriber = false): Promise<RedisClient> => {
    const client = await connectRedis(spec, { connectionName: "mcp-task-gateway-test", subscriber });
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
    connect: () => connect(),
    subscriber: () => connect(true),
    keys: (under = prefix) => scanKeys(client, under),
    cleanup: async () => {
      const keys = await scanKeys(client, prefix);
      await deleteKeys(client, keys);
      await Promise.allSettled(clients.map((c) => closeRedis(c)));
    },
  };
}

export interface FileRedis {
  /** The file's TestRedis, usable from its tests and hooks (beforeAll connects it). */
  redis: TestRedis;
  /** What the running test opened; closed, last first, after it. */
  opened: Array<() => Promise<void>>;
}

/**
 * A test file's Redis with its hooks: connect before the tests, close what each
 * test pushed on `opened` after it, and at the end delete the file's keys and check
 * that nothing is left under its prefix (nothing wrote there after the cleanup).
 * Call it once, at the top level of the file.
 */
export function fileRedis(): FileRedis {
  let current: TestRedis | undefined;
  const opened: Array<() => Promise<void>> = [];
  const now = (): TestRedis => {
    if (current === undefined) throw new Error("fileRedis: used before its beforeAll ran");
    return current;
  };

  beforeAll(async () => {
    current = await testRedis();
  });

  afterEach(async () => {
    for (const close of opened.splice(0).reverse()) await close();
  });

  afterAll(async () => {
    const prefix = now().prefix;
    await now().cleanup();
    const checker = await testRedis();
    try {
      expect(await checker.keys(prefix)).toEqual([]);
    } finally {
      await checker.cleanup();
    }
  });

  // A view that reads the file's TestRedis when used, so it can be taken at the top level.
  const redis: TestRedis = {
    get client() {
      return now().client;
    },
    get prefix() {
      return now().prefix;
    },
    freshPrefix: () => now().freshPrefix(),
    connect: () => now().connect(),
    subscriber: () => now().subscriber(),
    keys: (prefix) => now().keys(prefix),
    cleanup: () => now().cleanup(),
  };
  return { redis, opened };
}
