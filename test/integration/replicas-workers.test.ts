// `--workers N`: one port served by N cluster workers that share tasks in the
// real Redis. It starts with one start line for all, serves tasks whatever
// worker a request lands on, replaces a worker killed with SIGKILL (or all of
// them) while the others keep serving, keeps trying when a replacement cannot
// start (Redis away), and stops on SIGTERM even while a worker is starting.
// Without a shared store, on a port in use, or with a Redis it cannot reach, it
// refuses to start (exit 2), naming the setting and never a password.
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { getFreePort } from "../helpers/ports.js";
import { startPrivateRedis } from "../helpers/redis-server.js";
import { connectRedis } from "../../src/store/redis-connect.js";
import { parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";
import { TEST_REDIS_URL } from "../helpers/redis.js";
import { replicaSuite } from "../helpers/replica-suite.js";
import {
  childPids,
  createTask,
  getTask,
  isTerminal,
  last,
  must,
  pollTask,
  REDIS_START_LINE,
  replicaConfig,
  rpc,
  textOf,
  waitFor,
} from "../helpers/replicas.js";

const suite = replicaSuite();
const { replicas } = suite;

const config = (prefix: string) =>
  replicaConfig(suite.upstream.url, TEST_REDIS_URL, prefix, { rules: [{ tool: "slow_task", mode: "always" }] });

// Each test starts a primary and two worker processes (and replaces some): on a loaded machine, two Node starts
// take seconds each, so the suite's default 20 s is too short for a test, not a sign of a fault.
describe("--workers 2 with the redis store", { timeout: 60_000 }, () => {
  it("starts with one start line, serves tasks across workers, and replaces a worker killed with SIGKILL", async () => {
    const prefix = suite.redis.freshPrefix();
    const primary = await replicas.start("primary", config(prefix), ["--workers", "2"]);
    const line = REDIS_START_LINE.exec(primary.stdout());
    expect(line?.[3]).toBe("redis://127.0.0.1:6379");
    expect(line?.[4]).toBe("2");
    expect(primary.stdout().match(/listening on/g)).toHaveLength(1);
    const workers = await waitFor(async () => {
      const pids = await childPids(primary.pid);
      return pids.length === 2 ? pids : undefined;
    }, "two worker processes");
    // Each worker is a replica of its own: two registrations in the store.
    expect(await suite.redis.keys(`${prefix}replica:`)).toHaveLength(2);

    // Every request is a new connection, so the cluster spreads them over both workers: task control
    // lands on the worker that does not run the task about half the time, and is forwarded.
    const done = await createTask(primary.url, "slow_task", { durationMs: 300, steps: 3 });
    const result = last(await pollTask(primary.url, done.taskId, isTerminal));
    expect(result.status, primary.stderr()).toBe("completed");
    expect(textOf(result.result)).toBe("done after 300 ms in 3 steps");
    for (let i = 0; i < 4; i++) {
      const long = await createTask(primary.url, "slow_task", { durationMs: 30_000, steps: 300 });
      const ack = await rpc(primary.url, "tasks/cancel", { taskId: long.taskId });
      expect(ack.result, `${ack.text}\n${primary.stderr()}`).toEqual({ resultType: "complete" });
      expect((await getTask(primary.url, long.taskId)).result?.status).toBe("cancelled");
    }

    const victim = workers[0] as number;
    process.kill(victim, "SIGKILL");
    // Once the primary has seen the death (before that, Node's round-robin may still hand a new
    // connection to the dead worker, where it is lost: see the report), the other worker serves alone.
    await waitFor(
      () => (primary.stderr().includes(`worker ${victim} exited (SIGKILL); starting a replacement`) ? true : undefined),
      "the primary to notice",
    );
    for (let i = 0; i < 4; i++) {
      const reply = await getTask(primary.url, done.taskId);
      expect(reply.result, reply.text).toEqual(result);
    }
    const replaced = await waitFor(
      async () => {
        const pids = await childPids(primary.pid);
        return pids.length === 2 && !pids.includes(victim) ? pids : undefined;
      },
      "a replacement worker",
      15_000,
      100,
    );
    expect(replaced).toContain(workers[1]);
    expect(primary.running()).toBe(true);
    // The replacement serves too (requests alternate between the two workers).
    for (let i = 0; i < 4; i++) {
      const reply = await getTask(primary.url, done.taskId);
      expect(reply.result, reply.text).toEqual(result);
    }
    const fresh = await createTask(primary.url, "slow_task", { durationMs: 100, steps: 1 });
    expect(last(await pollTask(primary.url, fresh.taskId, isTerminal)).status).toBe("completed");

    // SIGTERM to the primary while a replacement is still starting: every worker stops, the primary exits 0.
    const second = workers[1] as number;
    process.kill(second, "SIGKILL");
    const starting = await waitFor(
      async () => (await childPids(primary.pid)).find((pid) => !replaced.includes(pid)),
      "the second replacement to be forked",
      10_000,
      10,
    );
    expect(await primary.terminate(15_000)).toEqual({ code: 0, signal: null });
    expect(await childPids(primary.pid)).toEqual([]);
    for (const pid of [...replaced, starting]) expect(() => process.kill(pid, 0)).toThrow();
  });

  it("replaces every worker when all die at once", async () => {
    const prefix = suite.redis.freshPrefix();
    // A port of its own: with port 0, workers that all died would leave Node's shared handle, and
    // their replacements would listen on a new random port.
    const port = await getFreePort();
    const primary = await replicas.start("primary", { ...config(prefix), server: { host: "127.0.0.1", port } }, [
      "--workers",
      "2",
    ]);
    const workers = await waitFor(async () => {
      const pids = await childPids(primary.pid);
      return pids.length === 2 ? pids : undefined;
    }, "two worker processes");
    for (const pid of workers) process.kill(pid, "SIGKILL");
    await waitFor(
      async () => {
        const pids = await childPids(primary.pid);
        return pids.length === 2 && pids.every((p) => !workers.includes(p)) ? true : undefined;
      },
      `two replacements\n${primary.stderr()}`,
      15_000,
      100,
    );
    expect(primary.running()).toBe(true);
    const created = await waitFor(
      () => createTask(primary.url, "slow_task", { durationMs: 100, steps: 1 }).catch(() => undefined),
      "the replacements to serve",
      15_000,
      100,
    );
    expect(last(await pollTask(primary.url, created.taskId, isTerminal)).status).toBe("completed");
  });

  it("a worker that dies while Redis is down: the other keeps serving, and the replacement is tried again until Redis is back", async () => {
    const store = await startPrivateRedis();
    try {
      const prefix = `mtg-test:${process.pid}:workers-outage:`;
      const primary = await replicas.start(
        "primary",
        {
          ...replicaConfig(suite.upstream.url, store.url, prefix, { rules: [{ tool: "slow_task", mode: "always" }] }),
          log: { level: "error" },
        },
        ["--workers", "2"],
      );
      const [victim, survivor] = await waitFor(async () => {
        const pids = await childPids(primary.pid);
        return pids.length === 2 ? pids : undefined;
      }, "two worker processes");
      await store.stop();
      process.kill(victim as number, "SIGKILL");
      // Its replacement cannot reach the store (about connectTimeout + the respawn pause)…
      await waitFor(
        () => (/replacement worker \d+ did not start/.test(primary.stderr()) ? true : undefined),
        "a failed replacement",
        20_000,
        100,
      );
      // …and the gateway does not give up: the survivor still serves what needs no store.
      expect(primary.running(), primary.stderr()).toBe(true);
      expect(await childPids(primary.pid)).toContain(survivor);
      for (let i = 0; i < 3; i++) {
        const plain = await rpc(primary.url, "tools/call", { name: "add", arguments: { a: 2, b: 3 } });
        expect(plain.result, plain.text).toMatchObject({ structuredContent: { sum: 5 } });
      }
      await store.start();
      // Back: the replacement starts, and both workers are registered again (the store came back empty).
      const client = await connectRedis(
        must(
          parseStoreSpec(store.url).kind === "redis" ? (parseStoreSpec(store.url) as RedisStoreSpec) : undefined,
          "a redis spec",
        ),
      );
      try {
        await waitFor(
          async () => ((await client.keys(`${prefix}replica:*`)).length === 2 ? true : undefined),
          `two registered workers once Redis is back\n${primary.stderr()}`,
          40_000,
          200,
        );
      } finally {
        client.disconnect();
      }
      expect(await childPids(primary.pid)).toContain(survivor);
      const created = await waitFor(
        () => createTask(primary.url, "slow_task", { durationMs: 100, steps: 1 }).catch(() => undefined),
        "tasks to work again",
        15_000,
        100,
      );
      expect(last(await pollTask(primary.url, created.taskId, isTerminal)).status).toBe("completed");
      expect(await primary.terminate()).toEqual({ code: 0, signal: null });
    } finally {
      await store.stop();
    }
  });
});

describe("refusing to start", () => {
  it("--workers 2 with the memory store exits 2 and names --store", async () => {
    const p = await replicas.spawn(
      "memory",
      { upstream: { url: suite.upstream.url }, server: { port: 0 }, tasks: { store: "memory" } },
      ["--workers", "2"],
    );
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toContain("--store");
    expect(p.stdout()).not.toMatch(/listening on/);
  });

  it("--workers 2 on a port in use exits 2, like one process", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    try {
      const port = (blocker.address() as AddressInfo).port;
      const p = await replicas.spawn(
        "busy-port",
        { ...config(suite.redis.freshPrefix()), server: { host: "127.0.0.1", port } },
        ["--workers", "2"],
      );
      expect((await p.exited).code, p.stderr()).toBe(2);
      expect(p.stderr()).toMatch(/cannot listen: .*EADDRINUSE/);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it("an unreachable Redis URL with a password exits 2, names the URL, and never prints the password (one process or workers)", async () => {
    const port = await getFreePort();
    const url = `redis://user:secret@127.0.0.1:${port}`;
    const [single, workers] = await Promise.all([
      replicas.spawn("dead-redis", { upstream: { url: suite.upstream.url }, server: { port: 0 } }, ["--store", url]),
      replicas.spawn(
        "dead-redis-workers",
        { upstream: { url: suite.upstream.url }, server: { port: 0 }, tasks: { store: url } },
        ["--workers", "2"],
      ),
    ]);
    for (const p of [single, workers]) {
      expect((await p.exited).code, p.name).toBe(2);
      expect(p.stderr(), p.name).toContain(`redis://user:***@127.0.0.1:${port}`);
      expect(p.stdout() + p.stderr(), p.name).not.toContain("secret");
      expect(p.stdout(), p.name).not.toMatch(/listening on/);
    }
  });
});
