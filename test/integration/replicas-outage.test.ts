// A replica whose task store (a private redis-server of this test's own) goes
// away mid-run and comes back, empty, without the gateway being restarted:
// while it is down, everything that needs no task keeps working (pass-through,
// plain calls, an `auto` call that would have become a task), an `always` call
// and tasks/get get clear errors (store_unavailable), and /readyz says so;
// once it is back, new tasks work again and /readyz says the store is ready, and
// a replica started after Redis lost its data agrees with the older one on the
// key that signs MRTR requestState.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis } from "../../src/store/redis-connect.js";
import { parseStoreSpec, type RedisStoreSpec } from "../../src/store/store-url.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { startPrivateRedis, type PrivateRedis } from "../helpers/redis-server.js";
import { connectSdkClient } from "../helpers/sdk-client.js";
import {
  createTask,
  DECLARING,
  getTask,
  isTerminal,
  last,
  NOT_DECLARING,
  pollTask,
  readyz,
  replicaConfig,
  Replicas,
  rpc,
  textOf,
  waitFor,
  type ReplicaProcess,
} from "../helpers/replicas.js";

const PREFIX = `mtg-test:${process.pid}:outage:`;
const privateSpec = (url: string): RedisStoreSpec => {
  const spec = parseStoreSpec(url);
  if (spec.kind !== "redis") throw new Error(`not a redis URL: ${url}`);
  return spec;
};

const replicas = new Replicas();
let redis: PrivateRedis | undefined;
let upstream: SdkUpstream;
let g: ReplicaProcess;

beforeAll(async () => {
  redis = await startPrivateRedis();
  upstream = await startSdkUpstream({ host: "127.0.0.1", port: 0 });
  g = await replicas.start(
    "G",
    replicaConfig(upstream.url, redis.url, PREFIX, {
      thresholdMs: 100,
      rules: [{ tool: "echo", mode: "always" }],
    }),
  );
});

afterAll(async () => {
  await replicas.cleanup();
  await upstream?.close();
  // The private server holds nothing on disk; stopping it is the cleanup.
  await redis?.stop();
});

describe("the task store goes away and comes back", () => {
  it("degrades to what needs no store while Redis is down, and recovers by itself once it is back", async () => {
    const store = redis;
    if (!store) throw new Error("no private redis");
    const before = await createTask(g.url, "echo", { text: "before the outage" });
    expect(last(await pollTask(g.url, before.taskId, isTerminal)).status).toBe("completed");
    expect((await readyz(g.origin)).body).toMatchObject({ status: "ready", store: "ready" });

    await store.stop();

    // /readyz notices (it caches its probe for a moment): the store is unavailable, the replica still serves.
    const down = await waitFor(async () => {
      const r = await readyz(g.origin);
      return r.body.store === "unavailable" ? r : undefined;
    }, "/readyz to report the store unavailable");
    expect(down.status).toBe(200);
    expect(down.body.status).toBe("degraded");

    // Pass-through: a legacy (2025-11-25) session client through the gateway.
    const legacy = await connectSdkClient(g.url);
    try {
      const sum = await legacy.client.callTool({ name: "add", arguments: { a: 40, b: 2 } });
      expect(sum.structuredContent).toEqual({ sum: 42 });
    } finally {
      await legacy.close();
    }
    // Plain modern calls, from clients with and without the Tasks extension.
    for (const caps of [DECLARING, NOT_DECLARING]) {
      const plain = await rpc(g.url, "tools/call", { name: "add", arguments: { a: 1, b: 2 } }, { caps });
      expect(plain.result, plain.text).toMatchObject({ resultType: "complete", structuredContent: { sum: 3 } });
    }
    // An `auto` call that runs past the threshold cannot become a task: it is answered plainly.
    const auto = await rpc(g.url, "tools/call", { name: "slow_task", arguments: { durationMs: 600, steps: 2 } });
    expect(auto.result, `${auto.text}\n${g.stderr()}`).toMatchObject({ resultType: "complete" });
    expect(textOf(auto.result)).toBe("done after 600 ms in 2 steps");
    // An `always` call needs the store: a clear JSON-RPC error.
    const always = await rpc(g.url, "tools/call", { name: "echo", arguments: { text: "during the outage" } });
    expect(always.result, always.text).toBeUndefined();
    expect(always.error).toMatchObject({ code: -32603, data: { reason: "store_unavailable" } });
    expect(always.status).toBe(503);
    // tasks/get: 503 with store_unavailable (and a Retry-After), not a hang or a crash.
    const get = await getTask(g.url, before.taskId);
    expect(get.status).toBe(503);
    expect(get.error).toMatchObject({ code: -32603, data: { reason: "store_unavailable" } });
    expect(get.headers["retry-after"]).toBeDefined();
    for (const method of ["tasks/cancel", "tasks/update"] as const) {
      const params =
        method === "tasks/update" ? { taskId: before.taskId, inputResponses: {} } : { taskId: before.taskId };
      const control = await rpc(g.url, method, params);
      expect(control.error, `${method}: ${control.text}`).toMatchObject({
        code: -32603,
        data: { reason: "store_unavailable" },
      });
    }

    await store.start();

    // Back (empty: the private server keeps nothing): new tasks work again, without a restart of the gateway.
    const after = await waitFor(
      async () => {
        const reply = await rpc(g.url, "tools/call", { name: "echo", arguments: { text: "after the outage" } });
        return reply.result?.resultType === "task" ? String(reply.result.taskId) : undefined;
      },
      "a new task to be created once Redis is back",
      15_000,
      200,
    );
    const done = last(await pollTask(g.url, after, isTerminal));
    expect(done.status).toBe("completed");
    expect(textOf(done.result)).toBe("after the outage");
    const ready = await waitFor(async () => {
      const r = await readyz(g.origin);
      return r.body.store === "ready" ? r : undefined;
    }, "/readyz to report the store ready");
    expect(ready.body.status).toBe("ready");
    expect(g.running()).toBe(true);
  });

  it("a replica started after Redis lost its data agrees with the older one on the MRTR key", async () => {
    const store = redis;
    if (!store) throw new Error("no private redis");
    await store.stop();
    await store.start();
    // G writes its registration again once it has reconnected (and, with it, the secrets it uses).
    const client = await connectRedis(privateSpec(store.url));
    try {
      await waitFor(
        async () => ((await client.keys(`${PREFIX}replica:*`)).length === 1 ? true : undefined),
        "G to register again",
        15_000,
        100,
      );
    } finally {
      client.disconnect();
    }
    const h = await replicas.start("H", replicaConfig(upstream.url, store.url, PREFIX));
    const args = { question: "Which key?" };
    const first = await rpc(g.url, "tools/call", { name: "ask_user", arguments: args }, { caps: NOT_DECLARING });
    const ir = first.result ?? {};
    expect(ir, first.text).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    const key =
      Object.keys(typeof ir.inputRequests === "object" && ir.inputRequests !== null ? ir.inputRequests : {})[0] ?? "";
    const retry = await rpc(
      h.url,
      "tools/call",
      {
        name: "ask_user",
        arguments: args,
        inputResponses: { [key]: { action: "accept", content: { name: "Same key" } } },
        requestState: ir.requestState,
      },
      { caps: NOT_DECLARING },
    );
    expect(retry.result, `${retry.text}\n${h.stderr()}`).toMatchObject({ resultType: "complete" });
    expect(textOf(retry.result)).toBe('action: accept; content: {"name":"Same key"}');
  });
});
