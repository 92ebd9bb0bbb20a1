// Task change push across replicas: Redis pub/sub, one channel per task. The
// replica that changes a task publishes its DetailedTask; every replica with a
// listen on that task is subscribed, through one subscriber connection shared by
// all its listens (a subscribed connection can do nothing else, so it is its own).
import type { Redis } from "ioredis";
import { redisKeys, type RedisKeys } from "./redis-keys.js";
import { closeRedis } from "./store-url.js";
import type { TaskEvents, TaskListener } from "./task-events.js";

export class RedisTaskEvents implements TaskEvents {
  private readonly keys: RedisKeys;
  /** Listeners by channel, and the SUBSCRIBE every listener of the channel waits for. */
  private readonly channels = new Map<string, { listeners: Set<TaskListener>; live: Promise<void> }>();
  private handoffListener: ((taskId: string, from: string) => void) | undefined;

  constructor(
    private readonly publisher: Redis,
    /** A connection for this object alone (ioredis `duplicate()`); close() quits it. */
    private readonly subscriber: Redis,
    prefix: string,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.keys = redisKeys(prefix);
    subscriber.on("message", (channel: string, message: string) => {
      if (channel === this.keys.handoffs) {
        const [taskId, from] = message.split(" ");
        if (taskId && from) this.handoffListener?.(taskId, from);
        return;
      }
      const entry = this.channels.get(channel);
      if (entry) for (const l of [...entry.listeners]) l(message);
    });
  }

  publish(taskId: string, detailed: string): void {
    // Push is best effort (a poll always tells the truth); a store that is away loses the notification only.
    this.publisher.publish(this.keys.events(taskId), detailed).catch(this.onError);
  }

  async subscribe(taskId: string, listener: TaskListener): Promise<() => void> {
    const channel = this.keys.events(taskId);
    let entry = this.channels.get(channel);
    if (!entry) {
      const created = {
        listeners: new Set<TaskListener>(),
        live: this.subscriber.subscribe(channel).then(() => undefined),
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
      this.subscriber.unsubscribe(channel).catch(this.onError);
    };
  }

  announceHandoff(taskId: string, from: string): void {
    this.publisher.publish(this.keys.handoffs, `${taskId} ${from}`).catch(this.onError);
  }

  async handoffPeers(): Promise<number> {
    const reply = (await this.publisher.pubsub("NUMSUB", this.keys.handoffs)) as [string, number | string];
    // This instance listens too.
    return Math.max(0, Number(reply[1] ?? 0) - (this.handoffListener ? 1 : 0));
  }

  async onHandoff(listener: (taskId: string, from: string) => void): Promise<void> {
    this.handoffListener = listener;
    await this.subscriber.subscribe(this.keys.handoffs);
  }

  async close(): Promise<void> {
    this.channels.clear();
    await closeRedis(this.subscriber);
  }
}
