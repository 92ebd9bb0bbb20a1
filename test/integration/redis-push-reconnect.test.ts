// The push subscriber across Redis outages: after a reconnection every listener
// hears again without its owner doing anything, and a reconnection that drops
// again at once (before the subscriptions are back) is reported, raises nothing
// unhandled (which would end the gateway's process), and is recovered from.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { connectRedis, closeRedis, type RedisClient } from "../../src/store/redis-connect.js";
import { RedisTaskEvents } from "../../src/store/redis-events.js";
import { parseStoreSpec, type StoreSpec } from "../../src/store/store-url.js";
import { startPrivateRedis, type PrivateRedis } from "../helpers/redis-server.js";
import { waitFor } from "../helpers/replicas.js";

type RedisSpec = Extract<StoreSpec, { kind: "redis" }>;

let redis: PrivateRedis | undefined;
const clients: RedisClient[] = [];
let events: RedisTaskEvents | undefined;

afterEach(async () => {
  await events?.close();
  events = undefined;
  await Promise.all(clients.splice(0).map((c) => closeRedis(c)));
  await redis?.stop();
  redis = undefined;
});

async function pushPair(url: string) {
  const spec = parseStoreSpec(url) as RedisSpec;
  const errors: string[] = [];
  const publisher = await connectRedis(spec, { maxReconnectDelayMs: 100 });
  const subscriber = await connectRedis(spec, { maxReconnectDelayMs: 100, subscriber: true });
  clients.push(publisher);
  events = new RedisTaskEvents(publisher, subscriber, `push-${randomUUID()}:`, (err) =>
    errors.push((err as Error).message),
  );
  return { events, subscriber, errors };
}

/** Publishes until the listener has heard `message` (a publish while the subscriber is away is lost, by design). */
async function heardAfterPublishing(events: RedisTaskEvents, heard: string[], taskId: string, message: string) {
  await waitFor(
    () => {
      if (heard.includes(message)) return true;
      events.publish(taskId, message);
      return undefined;
    },
    `the listener to hear ${message}`,
    10_000,
    100,
  );
}

describe("the push subscriber across Redis outages", () => {
  it("hears again after Redis restarts, task channels and the handoff channel alike", async () => {
    redis = await startPrivateRedis();
    const { events } = await pushPair(redis.url);
    const heard: string[] = [];
    const handoffs: string[] = [];
    await events.subscribe("t-1", (m) => heard.push(m));
    await events.onHandoff((taskId, from) => handoffs.push(`${taskId}@${from}`));
    await heardAfterPublishing(events, heard, "t-1", "before");

    await redis.stop();
    await redis.start();

    await heardAfterPublishing(events, heard, "t-1", "after");
    await waitFor(() => {
      if (handoffs.includes("t-9@replica-b")) return true;
      events.announceHandoff("t-9", "replica-b");
      return undefined;
    }, "the handoff listener to hear again");
    expect(heard).toContain("before");
  });

  it("a reconnection that drops before the subscriptions are back is reported, and the next one restores them", async () => {
    redis = await startPrivateRedis();
    const { events, subscriber, errors } = await pushPair(redis.url);
    const heard: string[] = [];
    await events.subscribe("t-2", (m) => heard.push(m));

    // The first "ready" after the restart finds its connection gone at once, as when Redis flaps.
    let dropped = false;
    subscriber.prependOnceListener("ready", () => {
      dropped = true;
      (subscriber as unknown as { stream: { destroy(): void } }).stream.destroy();
    });
    await redis.stop();
    await redis.start();

    await heardAfterPublishing(events, heard, "t-2", "back");
    expect(dropped).toBe(true);
    expect(errors.some((m) => /writeable|closed/i.test(m))).toBe(true);
  });
});
