// The session owner map (store/session-owners.ts) on the real Redis: a claim is readable by another replica at
// once, a session held twice is let go at the second release, renewal keeps a record past its first lifetime,
// close() gives every record up, and a record its owner stopped renewing (killed) lapses by itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { RedisSessionOwners } from "../../src/store/redis-session-owners.js";
import { LocalSessionOwners } from "../../src/store/session-owners.js";
import { testRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../helpers/replicas.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await testRedis();
});
afterAll(async () => {
  await redis?.cleanup();
});

function owners(prefix: string, replicaId: string, leaseMs = 60_000): RedisSessionOwners {
  return new RedisSessionOwners({ client: redis.client, prefix, leaseMs, replicaId, log: createLogger("silent") });
}

describe("RedisSessionOwners", () => {
  it("a claim is seen by another replica; held twice, it is let go at the second release", async () => {
    const prefix = redis.freshPrefix();
    const a = owners(prefix, "replica-a");
    const b = owners(prefix, "replica-b");
    await a.claim("s1");
    await a.claim("s1");
    expect(a.holds("s1")).toBe(true);
    expect(b.holds("s1")).toBe(false);
    expect(await b.ownerOf("s1")).toBe("replica-a");
    a.release("s1");
    expect(await b.ownerOf("s1")).toBe("replica-a");
    a.release("s1");
    expect(a.holds("s1")).toBe(false);
    await waitFor(async () => ((await b.ownerOf("s1")) === undefined ? true : undefined), "the record to go");
    expect(await b.ownerOf("never-claimed")).toBeUndefined();
    await a.close();
  });

  it("renewal keeps the records of live sessions; close() gives them up; a killed owner's record lapses", async () => {
    const prefix = redis.freshPrefix();
    const a = owners(prefix, "replica-a", 300);
    const b = owners(prefix, "replica-b", 300);
    await a.claim("live");
    // Renewed every 250 ms for a record that lives 600 ms: still there well after its first lifetime.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await b.ownerOf("live")).toBe("replica-a");
    await a.close();
    expect(await b.ownerOf("live")).toBeUndefined();

    // What kill -9 leaves: no renewal, no release (an owner whose connection is gone renews nothing).
    const lost = await redis.connect();
    const killed = new RedisSessionOwners({
      client: lost,
      prefix,
      leaseMs: 300,
      replicaId: "replica-k",
      log: createLogger("silent"),
    });
    await killed.claim("orphan");
    lost.disconnect();
    expect(await b.ownerOf("orphan")).toBe("replica-k");
    await waitFor(async () => ((await b.ownerOf("orphan")) === undefined ? true : undefined), "the orphan to lapse");
    await killed.close();
  });
});

describe("LocalSessionOwners", () => {
  it("one process holds every session it claimed, until the last release", async () => {
    const local = new LocalSessionOwners("me");
    await local.claim("s");
    await local.claim("s");
    local.release("s");
    expect(await local.ownerOf("s")).toBe("me");
    local.release("s");
    expect(await local.ownerOf("s")).toBeUndefined();
    expect(local.size).toBe(0);
  });
});
