// Push of task changes (TaskEvents): RedisTaskEvents on a real Redis, one
// publisher connection and one subscriber connection per "replica", and
// LocalTaskEvents, the single-process equivalent. Waits are bounded polls; where
// a test shows that something was NOT delivered, it waits for a later message
// that Redis must deliver after it (same publisher connection, same subscriber
// connection: RedisClient keeps their order), never for a stretch of time.
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisClient } from "../../src/store/redis-connect.js";
import { describe, expect, it } from "vitest";
import { LocalTaskEvents } from "../../src/store/local-events.js";
import { RedisTaskEvents } from "../../src/store/redis-events.js";
import { redisKeys } from "../../src/store/redis-keys.js";
import { pollUntil } from "../helpers/poll.js";
import { fileRedis } from "../helpers/redis.js";

/** A listener that records what it hears. */
function recorder(): { heard: string[]; listener: (detailed: string) => void } {
  const heard: string[] = [];
  return { heard, listener: (d) => heard.push(d) };
}

/** Waits until `heard` holds `last` (and returns all of it). */
async function until(heard: string[], last: string): Promise<string[]> {
  return pollUntil(
    async () => [...heard],
    (h) => h.includes(last),
  );
}

/** The file's Redis, and what the running test opened (closed after it); nothing is left under its prefix at the end. */
const { redis, opened } = fileRedis();

interface Replica {
  events: RedisTaskEvents;
  publisher: RedisClient;
  subscriber: RedisClient;
  errors: unknown[];
}

/** One replica's push: its command connection publishes, a connection of its own subscribes. */
async function replica(prefix: string): Promise<Replica> {
  const publisher = await redis.connect();
  const subscriber = await redis.connect();
  const errors: unknown[] = [];
  const events = new RedisTaskEvents(publisher, subscriber, prefix, (err) => errors.push(err));
  opened.push(() => events.close());
  return { events, publisher, subscriber, errors };
}

/** How many connections Redis has subscribed to a channel. */
async function subscribers(channel: string): Promise<number> {
  const reply = (await redis.client.call("PUBSUB", "NUMSUB", channel)) as [string, number | string];
  return Number(reply[1]);
}

describe("RedisTaskEvents", () => {
  it("a listener on one replica hears what another replica publishes for its task, in order, and nothing else", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const t1 = recorder();
    const t2 = recorder();
    await b.events.subscribe("t1", t1.listener);
    await b.events.subscribe("t2", t2.listener);
    // The same task id under another prefix is another deployment's task.
    const otherPrefix = redis.freshPrefix();
    const elsewhere = await replica(otherPrefix);
    const foreign = recorder();
    await elsewhere.events.subscribe("t1", foreign.listener);

    a.events.publish("t3", '{"taskId":"t3"}');
    a.events.publish("t2", '{"taskId":"t2","n":1}');
    a.events.publish("t1", '{"taskId":"t1","n":1,"text":"héllo 🚀"}');
    a.events.publish("t1", '{"taskId":"t1","n":2}');
    expect(await until(t1.heard, '{"taskId":"t1","n":2}')).toEqual([
      '{"taskId":"t1","n":1,"text":"héllo 🚀"}',
      '{"taskId":"t1","n":2}',
    ]);
    expect(t2.heard).toEqual(['{"taskId":"t2","n":1}']);
    // A marker after A's publishes, on the other deployment's channel: it heard none of them.
    await a.publisher.publish(redisKeys(otherPrefix).events("t1"), "marker");
    expect(await until(foreign.heard, "marker")).toEqual(["marker"]);
    // A replica hears its own publishes too.
    const own = recorder();
    await a.events.subscribe("t1", own.listener);
    a.events.publish("t1", "own");
    expect(await until(own.heard, "own")).toEqual(["own"]);
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
  });

  it("two listeners on one task both hear each change once, on one replica and on another", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const first = recorder();
    const second = recorder();
    const onA = recorder();
    await b.events.subscribe("t1", first.listener);
    await b.events.subscribe("t1", second.listener);
    await a.events.subscribe("t1", onA.listener);
    // One subscription per connection, however many listeners.
    expect(await subscribers(redisKeys(prefix).events("t1"))).toBe(2);
    a.events.publish("t1", "1");
    b.events.publish("t1", "2");
    for (const r of [first, second, onA]) {
      const heard = await pollUntil(
        async () => [...r.heard],
        (h) => h.length >= 2,
      );
      expect([...heard].sort()).toEqual(["1", "2"]);
    }
    // Exactly once each: a marker from each publisher arrives after that publisher's earlier message.
    a.events.publish("t1", "mark-a");
    b.events.publish("t1", "mark-b");
    for (const r of [first, second, onA]) {
      const heard = await pollUntil(
        async () => [...r.heard],
        (h) => h.includes("mark-a") && h.includes("mark-b"),
      );
      expect([...heard].sort()).toEqual(["1", "2", "mark-a", "mark-b"]);
    }
  });

  it("unsubscribe stops delivery to that listener; the channel is released when its last listener leaves", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const channel = redisKeys(prefix).events("t1");
    const first = recorder();
    const second = recorder();
    const unsubFirst = await b.events.subscribe("t1", first.listener);
    const unsubSecond = await b.events.subscribe("t1", second.listener);

    unsubFirst();
    a.events.publish("t1", "after-first-left");
    // The second listener hears it, from the same delivery the first would have.
    expect(await until(second.heard, "after-first-left")).toEqual(["after-first-left"]);
    expect(first.heard).toEqual([]);
    expect(await subscribers(channel)).toBe(1);

    unsubSecond();
    expect(
      await pollUntil(
        () => subscribers(channel),
        (n) => n === 0,
      ),
    ).toBe(0);
    a.events.publish("t1", "after-both-left");
    // A marker on another task of the same replica, after it: delivered in order, so the one before was not.
    const sentinel = recorder();
    await b.events.subscribe("sentinel", sentinel.listener);
    a.events.publish("sentinel", "marker");
    await until(sentinel.heard, "marker");
    expect(first.heard).toEqual([]);
    expect(second.heard).toEqual(["after-first-left"]);

    // A stale unsubscribe (called again, after the task was subscribed anew) does not end the new subscription.
    const third = recorder();
    await b.events.subscribe("t1", third.listener);
    unsubFirst();
    unsubSecond();
    a.events.publish("t1", "to-third");
    expect(await until(third.heard, "to-third")).toEqual(["to-third"]);
    expect(await subscribers(channel)).toBe(1);
  });

  it("subscribe resolves once the subscription is live: a publish right after it is heard", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    for (let i = 0; i < 10; i++) {
      const r = recorder();
      await b.events.subscribe(`t${i}`, r.listener);
      // Redis already counts the subscriber: the publish reaches it.
      expect(await a.publisher.publish(redisKeys(prefix).events(`t${i}`), `now-${i}`)).toBe(1);
      expect(await until(r.heard, `now-${i}`)).toEqual([`now-${i}`]);
    }
  });

  it("a second subscribe to a task whose subscription is still being set up resolves only once it is live too", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const channel = redisKeys(prefix).events("t1");
    // Hold B's subscriber connection: RedisClient runs its commands in order, so the SUBSCRIBE
    // sent next waits behind this BLPOP until the test pushes to the list.
    const gate = `${prefix}gate`;
    const held = b.subscriber.blpop(gate, 0);
    const first = recorder();
    const second = recorder();
    const firstLive = b.events.subscribe("t1", first.listener);
    // When the second subscribe resolves, publish at once: how many subscribers did Redis reach?
    const reachedWhenSecondResolved = b.events
      .subscribe("t1", second.listener)
      .then(() => a.publisher.publish(channel, "right-after"));
    // Give a subscribe that resolves too early every chance to do so, then let Redis go on.
    await Promise.race([reachedWhenSecondResolved, sleep(200)]);
    await redis.client.lpush(gate, "go");
    expect(await held).toEqual([gate, "go"]);
    await firstLive;
    expect(await reachedWhenSecondResolved).toBe(1);
    expect(await until(second.heard, "right-after")).toEqual(["right-after"]);
  });

  it("close() quits its subscriber connection (not the publisher's), and nothing is delivered after it", async () => {
    const prefix = redis.freshPrefix();
    const a = await replica(prefix);
    const b = await replica(prefix);
    const channel = redisKeys(prefix).events("t1");
    const r = recorder();
    await b.events.subscribe("t1", r.listener);
    expect(await subscribers(channel)).toBe(1);
    await b.events.close();
    // quit() resolves on Redis's OK; the connection closes right after.
    expect(
      await pollUntil(
        async () => b.subscriber.status,
        (status) => status === "end",
      ),
    ).toBe("end");
    expect(
      await pollUntil(
        () => subscribers(channel),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect(await a.publisher.publish(channel, "after-close")).toBe(0);
    expect(r.heard).toEqual([]);
    // The publisher belongs to the caller: still usable.
    expect(await b.publisher.ping()).toBe("PONG");
    // A second close is harmless.
    await b.events.close();
  });

  it("push is best effort: a publish while the store is away goes to onError and does not throw; a subscribe then rejects", async () => {
    const prefix = redis.freshPrefix();
    const publisher = await redis.connect();
    const subscriber = await redis.connect();
    const errors: unknown[] = [];
    const events = new RedisTaskEvents(publisher, subscriber, prefix, (err) => errors.push(err));
    opened.push(() => events.close());
    publisher.disconnect();
    subscriber.disconnect();
    expect(() => events.publish("t1", "lost")).not.toThrow();
    const reported = await pollUntil(
      async () => errors.length,
      (n) => n > 0,
    );
    expect(reported).toBe(1);
    await expect(events.subscribe("t1", () => undefined)).rejects.toThrow();
  });
});

describe("LocalTaskEvents", () => {
  it("delivers a task's publishes to its listeners only, at once, and stops at unsubscribe, forget or close", async () => {
    const events = new LocalTaskEvents();
    const first = recorder();
    const second = recorder();
    const other = recorder();
    const unsubFirst = await events.subscribe("t1", first.listener);
    const unsubSecond = await events.subscribe("t1", second.listener);
    await events.subscribe("t2", other.listener);

    events.publish("t1", "a");
    events.publish("t3", "nobody");
    expect(first.heard).toEqual(["a"]);
    expect(second.heard).toEqual(["a"]);
    expect(other.heard).toEqual([]);

    unsubFirst();
    events.publish("t1", "b");
    expect(first.heard).toEqual(["a"]);
    expect(second.heard).toEqual(["a", "b"]);

    // A stale unsubscribe does not remove a listener subscribed anew.
    unsubSecond();
    const third = recorder();
    await events.subscribe("t1", third.listener);
    unsubFirst();
    unsubSecond();
    events.publish("t1", "c");
    expect(third.heard).toEqual(["c"]);
    expect(second.heard).toEqual(["a", "b"]);

    await events.close();
    events.publish("t1", "d");
    expect(third.heard).toEqual(["c"]);
    events.publish("t2", "e");
    expect(other.heard).toEqual([]);
  });
});
