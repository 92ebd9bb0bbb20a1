// The TaskStore contract (src/store/task-store.ts), run against both stores: the
// in-memory one on a clock the test moves, and the Redis one on a real Redis with
// real (short) TTLs. Then what only the Redis store does (key layout, replicas
// sharing tasks and limits, Redis's own TTL, no keys left behind), and the
// tasks.store setting (src/store/store-url.ts).
import { createServer, type Server, type Socket, connect as netConnect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RedisTaskStore, type RedisTaskStoreOptions } from "../../src/store/redis-store.js";
import { connectRedis } from "../../src/store/redis-connect.js";
import { parseStoreSpec, redisEndpoints, type RedisStoreSpec } from "../../src/store/store-url.js";
import { FINISH_RESERVE_BYTES, taskBytes } from "../../src/store/task-bytes.js";
import type { TaskRecord } from "../../src/store/task-store.js";
import { pollUntil } from "../helpers/poll.js";
import { getFreePort } from "../helpers/ports.js";
import { TEST_REDIS_URL, testRedis, type TestRedis } from "../helpers/redis.js";
import {
  memoryHarness,
  next,
  recordDrops,
  redisHarness,
  ROOMY,
  stored,
  taskStoreContract,
  tickingClock,
  wireJson,
} from "../helpers/store-contract.js";
import { taskRecord as record } from "../helpers/task-record.js";

let redis: TestRedis;

beforeAll(async () => {
  redis = await testRedis();
});

afterAll(async () => {
  await redis.cleanup();
});

taskStoreContract("MemoryTaskStore", memoryHarness);
taskStoreContract("RedisTaskStore", () =>
  redisHarness(
    () => redis.client,
    () => redis.freshPrefix(),
  ),
);

// ---- what only the Redis store does ----

describe("RedisTaskStore on Redis", () => {
  const opened: RedisTaskStore[] = [];
  const open = (opts: Partial<RedisTaskStoreOptions> & { prefix: string }): RedisTaskStore => {
    const store = new RedisTaskStore({ client: redis.client, maxBytes: 16 * 1024 * 1024, now: Date.now, ...opts });
    opened.push(store);
    return store;
  };

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  /** The hash tag of a key: what Redis Cluster hashes to pick its slot. */
  const hashTag = (key: string): string | undefined => /\{([^}]+)\}/.exec(key)?.[1];

  it("key layout: a task is one hash tagged {id}; every counter is tagged {counters}", async () => {
    const prefix = redis.freshPrefix();
    const store = open({ prefix });
    const r = record("Xy_9-abc", Date.now(), { owner: "owner-1" });
    await store.create(stored(r), ROOMY);
    const keys = await redis.keys(prefix);
    expect(keys).toContain(`${prefix}task:{Xy_9-abc}`);
    const taskKeys = keys.filter((k) => k.includes("task:"));
    expect(taskKeys).toEqual([`${prefix}task:{Xy_9-abc}`]);
    expect(hashTag(taskKeys[0] ?? "")).toBe("Xy_9-abc");
    const counterKeys = keys.filter((k) => !k.includes("task:"));
    expect(counterKeys.length).toBeGreaterThan(0);
    for (const key of counterKeys) expect(hashTag(key)).toBe("counters");
    expect(counterKeys).toContain(`${prefix}{counters}:owner:owner-1`);
    expect(await redis.client.type(`${prefix}task:{Xy_9-abc}`)).toBe("hash");
    expect(await redis.client.hmget(`${prefix}task:{Xy_9-abc}`, "owner", "status", "json")).toEqual([
      "owner-1",
      "working",
      wireJson(r),
    ]);
  });

  it("the TTL is Redis's own, set at creation; an update keeps it (never reset)", async () => {
    const prefix = redis.freshPrefix();
    const store = open({ prefix });
    const r = record("ttl", Date.now(), { ttlMs: 60_000 });
    await store.create(stored(r), ROOMY);
    const key = `${prefix}task:{ttl}`;
    const before = await redis.client.pttl(key);
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThanOrEqual(60_000);
    await store.update(stored(next(r, "working", { statusMessage: "progress" })));
    await store.update(stored(next(r, "completed")));
    const after = await redis.client.pttl(key);
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(before);
  });

  it("every key the store writes expires by itself: an idle store leaves nothing behind", async () => {
    const prefix = redis.freshPrefix();
    const store = open({ prefix });
    const a = record("a", Date.now(), { owner: "o1" });
    await store.create(stored(a), ROOMY);
    await store.create(stored(record("b", Date.now(), { owner: "o2" })), ROOMY);
    await store.update(stored(next(a, "completed")));
    await store.stats();
    const keys = await redis.keys(prefix);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(await redis.client.pttl(key), key).toBeGreaterThan(0);
  });

  it("two instances on one prefix (two replicas) see each other's tasks and share the limits", async () => {
    const prefix = redis.freshPrefix();
    const other = await redis.connect();
    const a = open({ prefix });
    const b = open({ prefix, client: other });
    const limits = { maxTasks: 3, maxTasksPerCaller: 2 };
    const t1 = record("t1", Date.now(), { owner: "alice" });
    expect(await a.create(stored(t1), limits)).toEqual({ ok: true });
    expect((await b.get("t1"))?.record).toEqual(t1);
    expect(await b.create(stored(record("t2", Date.now(), { owner: "alice" })), limits)).toEqual({ ok: true });
    expect(await a.create(stored(record("t3", Date.now(), { owner: "alice" })), limits)).toEqual({
      ok: false,
      refusal: "max_tasks_per_caller",
    });
    expect(await a.create(stored(record("t4", Date.now(), { owner: "bob" })), limits)).toEqual({ ok: true });
    expect(await b.create(stored(record("t5", Date.now(), { owner: "carol" })), limits)).toEqual({
      ok: false,
      refusal: "max_tasks",
    });
    // A finishes its task; B sees it, and the slot is free for B at once.
    const done = next(t1, "completed");
    expect(await a.update(stored(done))).toBe("ok");
    expect((await b.get("t1"))?.json).toBe(wireJson(done));
    expect(await b.update(stored(next(t1, "failed")))).toBe("final");
    expect(await b.create(stored(record("t3", Date.now(), { owner: "alice" })), limits)).toEqual({ ok: true });
    expect(await a.stats()).toEqual(await b.stats());
    expect((await a.stats()).unfinished).toBe(3);
  });

  it("concurrent creates on two replicas are admitted exactly up to the per-caller limit", async () => {
    const prefix = redis.freshPrefix();
    const a = open({ prefix });
    const b = open({ prefix, client: await redis.connect() });
    const limits = { maxTasks: 1_000, maxTasksPerCaller: 3 };
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? a : b).create(stored(record(`p${i}`, Date.now(), { owner: "mallory" })), limits),
      ),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(3);
    expect((await a.stats()).unfinished).toBe(3);
  });

  it("the byte budget is shared: past it unfinished tasks are refused, and expired tasks' bytes leave the count by themselves", async () => {
    const prefix = redis.freshPrefix();
    const one = stored(record("probe", Date.now(), { ttlMs: 300 }));
    const budget = (taskBytes(one) + FINISH_RESERVE_BYTES) * 3;
    const a = open({ prefix, maxBytes: budget, bucketMs: 50 });
    const b = open({ prefix, maxBytes: budget, bucketMs: 50, client: await redis.connect() });
    for (const id of ["f1", "f2", "f3"]) {
      expect(await a.create(stored(record(id, Date.now(), { ttlMs: 300 })), ROOMY)).toEqual({ ok: true });
    }
    expect(await b.create(stored(record("f4", Date.now(), { ttlMs: 300 })), ROOMY)).toEqual({
      ok: false,
      refusal: "store_full",
    });
    // Nothing was evicted to make room.
    for (const id of ["f1", "f2", "f3"]) expect(await b.get(id)).toBeDefined();
    const drained = await pollUntil(
      () => b.stats(),
      (s) => s.bytes === 0 && s.stored === 0,
    );
    expect(drained).toEqual({ stored: 0, bytes: 0, unfinished: 0 });
    expect(await b.create(stored(record("f4", Date.now(), { ttlMs: 300 })), ROOMY)).toEqual({ ok: true });
  });

  it("the recency order is shared: a get on one replica saves a task from another's eviction, whose key is deleted for all", async () => {
    const prefix = redis.freshPrefix();
    const done = (id: string): TaskRecord =>
      next(record(id, Date.now(), { owner: "o1" }), "completed", {
        result: { content: [{ type: "text", text: "d".repeat(1_000) }] },
      });
    const size = taskBytes(stored(done("x1")));
    const clock = tickingClock();
    const a = open({ prefix, maxBytes: Math.floor(size * 3.5), now: clock });
    const b = open({ prefix, maxBytes: Math.floor(size * 3.5), now: clock, client: await redis.connect() });
    const dropsA = recordDrops(a);
    const dropsB = recordDrops(b);
    for (const id of ["k1", "k2", "k3"]) expect(await a.create(stored(done(id)), ROOMY)).toEqual({ ok: true });
    // A poll on replica B is a use; its recency write goes out before B's next command.
    expect((await b.get("k1"))?.status).toBe("completed");
    await b.stats();
    expect(await a.create(stored(done("k4")), ROOMY)).toEqual({ ok: true });
    // The replica that evicted reports it; the key is gone for every replica.
    expect(dropsA).toEqual([["k2", "evicted"]]);
    expect(dropsB).toEqual([]);
    expect(await redis.client.exists(`${prefix}task:{k2}`)).toBe(0);
    expect(await b.get("k2")).toBeUndefined();
    for (const id of ["k1", "k3", "k4"]) expect(await b.get(id), id).toBeDefined();
    expect((await b.stats()).bytes).toBe(3 * size);
  });

  it("onEvict reports the unfinished tasks this instance created when Redis expires them, not finished ones", async () => {
    const prefix = redis.freshPrefix();
    const store = open({ prefix });
    const drops = recordDrops(store);
    const u = record("unfinished", Date.now(), { ttlMs: 300 });
    const f = record("finished", Date.now(), { ttlMs: 300 });
    await store.create(stored(u), ROOMY);
    await store.create(stored(f), ROOMY);
    await store.update(stored(next(f, "completed")));
    const seen = await pollUntil(
      async () => drops,
      (d) => d.length > 0,
    );
    expect(seen).toEqual([["unfinished", "expired"]]);
    const gone = await pollUntil(
      () => Promise.all([store.get("unfinished"), store.get("finished")]),
      (both) => both.every((t) => t === undefined),
    );
    expect(gone).toEqual([undefined, undefined]);
    expect(drops).toEqual([["unfinished", "expired"]]);
  });

  it("works on after Redis forgets its scripts (SCRIPT FLUSH, as after a restart)", async () => {
    const prefix = redis.freshPrefix();
    const store = open({ prefix });
    const r = record("s1", Date.now());
    await store.create(stored(r), ROOMY);
    await redis.client.script("FLUSH");
    expect(await store.update(stored(next(r, "completed")))).toBe("ok");
    await redis.client.script("FLUSH");
    expect(await store.create(stored(record("s2", Date.now())), ROOMY)).toEqual({ ok: true });
    await redis.client.script("FLUSH");
    expect(await store.stats()).toMatchObject({ stored: 2, unfinished: 1 });
  });

  it("close() leaves a client it does not own connected, and quits one it owns", async () => {
    const shared = await redis.connect();
    const borrowed = new RedisTaskStore({
      client: shared,
      prefix: redis.freshPrefix(),
      maxBytes: 1_000_000,
      now: Date.now,
    });
    await borrowed.close();
    expect(await shared.ping()).toBe("PONG");
    const owned = await redis.connect();
    const owner = new RedisTaskStore({
      client: owned,
      prefix: redis.freshPrefix(),
      maxBytes: 1_000_000,
      now: Date.now,
      ownsClient: true,
    });
    await owner.close();
    await expect(owned.ping()).rejects.toThrow();
  });

  it("ping rejects at once while the client is disconnected", async () => {
    const client = await redis.connect();
    const store = open({ prefix: redis.freshPrefix(), client });
    client.disconnect();
    await expect(store.ping()).rejects.toThrow();
  });

  it("the test cleanup deletes every key under its prefix", async () => {
    const scratch = await testRedis();
    const store = new RedisTaskStore({
      client: scratch.client,
      prefix: scratch.freshPrefix(),
      maxBytes: 1_000_000,
      now: Date.now,
    });
    await store.create(stored(record("a", Date.now())), ROOMY);
    await store.create(stored(record("b", Date.now(), { owner: "bob" })), ROOMY);
    await store.close();
    expect((await scratch.keys()).length).toBeGreaterThan(0);
    await scratch.cleanup();
    expect(await redis.keys(scratch.prefix)).toEqual([]);
  });
});

// ---- tasks.store and the connection ----

describe("parseStoreSpec", () => {
  it("memory", () => {
    expect(parseStoreSpec("memory")).toEqual({ kind: "memory" });
  });

  it("redis://host:port: database 0, no TLS", () => {
    expect(parseStoreSpec("redis://127.0.0.1:6379")).toEqual({
      kind: "redis",
      mode: "single",
      url: "redis://127.0.0.1:6379",
      db: 0,
      tls: false,
      display: "redis://127.0.0.1:6379",
    });
  });

  it("a database number in the path selects it", () => {
    expect(parseStoreSpec("redis://cache.internal/3")).toMatchObject({ db: 3, display: "redis://cache.internal/3" });
    expect(parseStoreSpec("redis://cache.internal:6380/0")).toMatchObject({ db: 0 });
    expect(parseStoreSpec("redis://cache.internal/")).toMatchObject({ db: 0 });
  });

  it("rediss:// is TLS; the password is kept in url and replaced by *** in display", () => {
    const spec = parseStoreSpec("rediss://gateway:s3cr%40t-pw@redis.example.com:6380/2");
    expect(spec).toEqual({
      kind: "redis",
      mode: "single",
      url: "rediss://gateway:s3cr%40t-pw@redis.example.com:6380/2",
      db: 2,
      tls: true,
      display: "rediss://gateway:***@redis.example.com:6380/2",
    });
    expect(parseStoreSpec("redis://:only-a-password@h")).toMatchObject({ display: "redis://:***@h" });
    expect(parseStoreSpec("redis://user-only@h")).toMatchObject({ display: "redis://user-only@h" });
  });

  it("an IPv6 host in brackets", () => {
    expect(parseStoreSpec("redis://[::1]:6379/1")).toMatchObject({ db: 1, display: "redis://[::1]:6379/1" });
  });

  it("redis-sentinel://: the Sentinels, a database and the primary's name; the password redacted", () => {
    const spec = parseStoreSpec("redis-sentinel://gw:hunter2@10.0.0.1:26379,10.0.0.2:26380,s3/2#mymaster");
    expect(spec).toEqual({
      kind: "redis",
      mode: "sentinel",
      url: "redis-sentinel://gw:hunter2@10.0.0.1:26379,10.0.0.2:26380,s3/2#mymaster",
      db: 2,
      tls: false,
      display: "redis-sentinel://gw:***@10.0.0.1:26379,10.0.0.2:26380,s3/2#mymaster",
    });
    expect(redisEndpoints(spec as RedisStoreSpec)).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 26379 },
        { host: "10.0.0.2", port: 26380 },
        { host: "s3", port: 26379 },
      ],
      username: "gw",
      password: "hunter2",
      db: 2,
      masterName: "mymaster",
    });
    expect(parseStoreSpec("rediss-sentinel://[::1]:26379#m")).toMatchObject({ mode: "sentinel", tls: true });
  });

  it("redis-cluster://: the seed nodes; TLS with rediss-cluster://", () => {
    const spec = parseStoreSpec("redis-cluster://:p%40ss@n1:7000,n2:7001,n3");
    expect(spec).toMatchObject({
      mode: "cluster",
      db: 0,
      tls: false,
      display: "redis-cluster://:***@n1:7000,n2:7001,n3",
    });
    expect(redisEndpoints(spec as RedisStoreSpec)).toEqual({
      nodes: [
        { host: "n1", port: 7000 },
        { host: "n2", port: 7001 },
        { host: "n3", port: 6379 },
      ],
      username: "",
      password: "p@ss",
      db: 0,
    });
    expect(parseStoreSpec("rediss-cluster://cfg.example.cache.amazonaws.com:6379")).toMatchObject({ tls: true });
  });

  it.each([
    ["redis-sentinel://h:26379", /name the primary/],
    ["redis-sentinel://h:26379#", /name the primary/],
    ["redis-cluster://h:7000/2", /database 0 only/],
    ["redis-cluster://h:7000#x", /no #fragment/],
    ["redis-cluster://h:7000,,h2", /not a host\[:port\]/],
    ["redis-cluster://h:99999", /not a host\[:port\]/],
    ["redis-cluster://", /no host/],
    ["redis-cluster:h", /expected redis-cluster:\/\/host/],
    ["redis-cluster://h?x=1", /query parameters/],
    ["redis-sentinel://u:%zz@h#m", /malformed %-escape/],
  ])("%s is refused with a clear message", (value, message) => {
    expect(() => parseStoreSpec(value)).toThrow(message);
  });

  it.each([
    ["http://h:6379", /unsupported scheme "http:"/],
    ["memcached", /unsupported "memcached"/],
    ["redis://h/not-a-db", /database number/],
    ["redis://h/1/2", /database number/],
    ["redis://h:6379?family=6", /query parameters/],
    ["redis://", /no host|not a valid URL/],
    ["redis:h", /expected redis:\/\/host/],
    ["redis://u:%zz@h", /malformed %-escape/],
  ])("%s is refused with a clear message", (value, message) => {
    expect(() => parseStoreSpec(value)).toThrow(message);
  });

  it("no error message shows the password, even for a malformed URL", () => {
    for (const value of [
      "redis://u:hunter2@[bad-host/0",
      "redis://u:hunter2@h/abc",
      "ftp://u:hunter2@h",
      "redis://u:hunter2@h?x=1",
      "redis-sentinel://u:hunter2@h:1",
      "redis-cluster://u:hunter2@h:1/5",
      "redis-cluster://u:hunter2@h:x",
    ]) {
      let message = "";
      try {
        parseStoreSpec(value);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, value).not.toBe("");
      expect(message, value).not.toContain("hunter2");
    }
  });
});

describe("connectRedis", () => {
  it("connects to the database the URL names", async () => {
    const base = parseStoreSpec(`${TEST_REDIS_URL.replace(/\/\d*$/, "")}/3`);
    if (base.kind !== "redis") throw new Error("expected a redis spec");
    const client = await connectRedis(base);
    try {
      expect(String(await client.call("CLIENT", "INFO"))).toMatch(/\bdb=3\b/);
    } finally {
      await client.quit();
    }
  });

  it("a Redis that does not answer fails within the bound, naming the URL without its password", async () => {
    const port = await getFreePort();
    const spec = parseStoreSpec(`redis://gw:topsecret@127.0.0.1:${port}/0`) as RedisStoreSpec;
    const failure = await connectRedis(spec, { connectTimeoutMs: 1_000 }).then(
      () => new Error("connected to a closed port"),
      (err: unknown) => err as Error,
    );
    expect(failure.message).toContain(`redis://gw:***@127.0.0.1:${port}/0`);
    expect(failure.message).not.toContain("topsecret");
    expect(failure.message).toMatch(/ECONNREFUSED|Connection is closed|no answer/);
  });

  describe("after a successful start", () => {
    // A TCP relay to the test Redis that the test can take down and bring back on the same port.
    let relay: { port: number; stop(): Promise<void>; start(): Promise<void> };

    beforeAll(async () => {
      const url = new URL(TEST_REDIS_URL);
      const target = { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port === "" ? 6379 : Number(url.port) };
      const sockets = new Set<Socket>();
      let server: Server | undefined;
      const listen = (port: number): Promise<number> =>
        new Promise((resolve, reject) => {
          const s = createServer((inbound) => {
            const outbound = netConnect(target.port, target.host);
            for (const sock of [inbound, outbound]) {
              sockets.add(sock);
              sock.on("close", () => sockets.delete(sock));
              sock.on("error", () => sock.destroy());
            }
            inbound.pipe(outbound).pipe(inbound);
          });
          s.once("error", reject);
          s.listen(port, "127.0.0.1", () => {
            server = s;
            const addr = s.address();
            resolve(typeof addr === "object" && addr ? addr.port : port);
          });
        });
      const port = await listen(0);
      relay = {
        port,
        stop: () =>
          new Promise<void>((resolve) => {
            for (const sock of sockets) sock.destroy();
            if (!server) return resolve();
            server.close(() => resolve());
            server = undefined;
          }),
        start: async () => {
          // The port was ours a moment ago; retry briefly should something else hold it.
          for (let i = 0; ; i++) {
            try {
              await listen(port);
              return;
            } catch (err) {
              if (i >= 50) throw err;
              await sleep(100);
            }
          }
        },
      };
    });

    afterAll(async () => {
      await relay.stop();
    });

    it("commands fail promptly while Redis is away, and the client reconnects by itself when it is back", async () => {
      const errors: Error[] = [];
      const spec = parseStoreSpec(`redis://127.0.0.1:${relay.port}`) as RedisStoreSpec;
      const client = await connectRedis(spec, {
        maxReconnectDelayMs: 100,
        onError: (err) => errors.push(err),
      });
      try {
        expect(await client.ping()).toBe("PONG");
        await relay.stop();
        // Down: a command is refused, not queued until Redis returns.
        const down = await pollUntil(
          () =>
            client.ping().then(
              () => "answered",
              () => "failed",
            ),
          (r) => r === "failed",
        );
        expect(down).toBe("failed");
        // It keeps trying on its own (each failed attempt reaches onError)...
        const attempts = await pollUntil(
          () => Promise.resolve(errors.length),
          (n) => n >= 3,
        );
        expect(attempts).toBeGreaterThanOrEqual(3);
        expect(errors.some((e) => /ECONNREFUSED/.test(e.message))).toBe(true);
        // ...and is back once Redis is.
        await relay.start();
        const back = await pollUntil(
          () => client.ping().catch(() => "failed"),
          (r) => r === "PONG",
          10_000,
        );
        expect(back).toBe("PONG");
      } finally {
        client.disconnect();
      }
    });
  });
});
