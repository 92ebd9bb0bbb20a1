// Task change push across replicas: Redis pub/sub, one channel per task. The
// replica that changes a task publishes its DetailedTask; every replica with a
// listen on that task is subscribed, through one subscriber connection shared by
// all its listens (a subscribed connection can do nothing else, so it is its own).
//
// On Redis Cluster the channels are sharded (SPUBLISH / SSUBSCRIBE, Redis 7+): a
// classic PUBLISH is broadcast over the cluster bus to every node, so each push
// would cost every master, and PUBSUB NUMSUB counts one node's subscribers only.
// A sharded channel lives on the master of its slot (a task's channel carries the
// task's hash tag, so it sits beside the task), SPUBLISH reaches that master
// alone, and PUBSUB SHARDNUMSUB there counts every replica's subscription. The
// ioredis cluster subscriber keeps one connection per master and moves the
// subscriptions when slots move (failover, resharding). On a single node and on
// Sentinel the classic commands stay (they work on Redis before 7 too).
import { Cluster, type Redis } from "ioredis";
import { redisKeys, type RedisKeys } from "./redis-keys.js";
import { closeRedis, type RedisClient } from "./redis-connect.js";
import type { TaskEvents, TaskListener } from "./task-events.js";

export class RedisTaskEvents implements TaskEvents {
  private readonly keys: RedisKeys;
  /** Listeners by channel, and the SUBSCRIBE every listener of the channel waits for. */
  private readonly channels = new Map<string, { listeners: Set<TaskListener>; live: Promise<void> }>();
  private handoffListener: ((taskId: string, from: string) => void) | undefined;
  /** Sharded pub/sub: on a cluster. */
  private readonly sharded: boolean;

  constructor(
    private readonly publisher: RedisClient,
    /** A connection for this object alone (ioredis `duplicate()`); close() quits it. */
    private readonly subscriber: RedisClient,
    prefix: string,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.keys = redisKeys(prefix);
    this.sharded = subscriber instanceof Cluster;
    subscriber.on(this.sharded ? "smessage" : "message", (channel: string, message: string) => {
      if (channel === this.keys.handoffs) {
        const [taskId, from] = message.split(" ");
        if (taskId && from) this.handoffListener?.(taskId, from);
        return;
      }
      const entry = this.channels.get(channel);
      if (entry) for (const l of [...entry.listeners]) l(message);
    });
    // A cluster's subscriber moves its subscriptions itself; a single connection
    // (autoResubscribe off, see connectRedis) is given them back on each reconnection.
    if (!this.sharded) subscriber.on("ready", () => this.resubscribe(subscriber as Redis));
  }

  /**
   * Subscribes a fresh connection to every channel that has listeners. If that
   * fails (the connection dropped again at once), the error is reported and, should
   * the connection still stand, it is restarted so that the next "ready" tries again:
   * a listener never stays deaf while Redis answers.
   */
  private resubscribe(subscriber: Redis): void {
    const channels = [...this.channels.keys()];
    if (this.handoffListener) channels.push(this.keys.handoffs);
    if (channels.length === 0) return;
    subscriber.subscribe(...channels).catch((err: unknown) => {
      this.onError(err);
      if (subscriber.status === "ready") subscriber.disconnect(true);
    });
  }

  publish(taskId: string, detailed: string): void {
    // Push is best effort (a poll always tells the truth); a store that is away loses the notification only.
    this.send(this.keys.events(taskId), detailed);
  }

  async subscribe(taskId: string, listener: TaskListener): Promise<() => void> {
    const channel = this.keys.events(taskId);
    let entry = this.channels.get(channel);
    if (!entry) {
      const created = {
        listeners: new Set<TaskListener>(),
        live: this.listen(channel),
      };
      entry = created;
      this.channels.set(channel, created);
      // A SUBSCRIBE that fails takes its channel entry with it, for every listener that waited on it.
      created.live.catch(() => {
        if (this.channels.get(channel) === created) this.channels.delete(channel);
      });
    }
    const own = entry;
    own.listeners.add(listener);
    try {
      // Every caller, not only the first, resolves once Redis has the subscription.
      await own.live;
    } catch (err) {
      own.listeners.delete(listener);
      throw err;
    }
    return () => {
      own.listeners.delete(listener);
      if (own.listeners.size > 0 || this.channels.get(channel) !== own) return;
      this.channels.delete(channel);
      (this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)).catch(this.onError);
    };
  }

  announceHandoff(taskId: string, from: string): void {
    this.send(this.keys.handoffs, `${taskId} ${from}`);
  }

  private send(channel: string, message: string): void {
    (this.sharded ? this.publisher.spublish(channel, message) : this.publisher.publish(channel, message)).catch(
      this.onError,
    );
  }

  private async listen(channel: string): Promise<void> {
    await (this.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel));
  }

  /** How many connections listen on the handoff channel: on a cluster, asked of the master of its slot. */
  private async handoffSubscribers(): Promise<number> {
    const channel = this.keys.handoffs;
    if (!(this.publisher instanceof Cluster)) {
      const reply = (await this.publisher.pubsub("NUMSUB", channel)) as [string, number | string];
      return Number(reply[1] ?? 0);
    }
    // A keyed command routes the pipeline to the master of the channel's slot, which counts its shard subscribers.
    const replies = await this.publisher.pipeline().exists(channel).pubsub("SHARDNUMSUB", channel).exec();
    const [err, reply] = replies?.[1] ?? [new Error("Redis answered no reply to PUBSUB SHARDNUMSUB"), []];
    if (err) throw err;
    return Number((reply as [string, number | string])[1] ?? 0);
  }

  async handoffPeers(): Promise<number> {
    const subscribed = await this.handoffSubscribers();
    // This instance listens too.
    return Math.max(0, subscribed - (this.handoffListener ? 1 : 0));
  }

  async onHandoff(listener: (taskId: string, from: string) => void): Promise<void> {
    this.handoffListener = listener;
    await this.listen(this.keys.handoffs);
  }

  async close(): Promise<void> {
    this.channels.clear();
    await closeRedis(this.subscriber);
  }
}
