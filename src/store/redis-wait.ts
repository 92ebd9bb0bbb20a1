// WAIT: a write is acknowledged only once N replicas of its primary hold it
// (tasks.redisWaitReplicas). Redis replicates asynchronously, so without it a
// failover can lose the last writes a client was already told about.
//
// WAIT covers every write its connection sent before it, on the server it is sent
// to. On a single node or a Sentinel-managed primary that is the one connection;
// on a cluster, each slot's master has its own, so one WAIT goes to the master of
// each key written (a pipeline whose one keyed command routes it there: ioredis
// sends a cluster pipeline to the node of its keys' slot).
//
// WAIT blocks the connection it is sent on until it returns, and the store's
// commands share that connection: concurrent writes therefore share one WAIT per
// node (a WAIT asked for while one is in flight joins the next one), so the cost
// is about one replication round trip per batch, not per write.
import { Cluster } from "ioredis";
import type { RedisClient } from "./redis-connect.js";

export interface WaitSettings {
  /** Replicas that must hold a write (WAIT numreplicas). */
  replicas: number;
  /** How long to wait for them (WAIT timeout, ms). */
  timeoutMs: number;
}

/** A write that the replicas did not confirm in time: it was not acknowledged (and may be lost in a failover). */
class NotReplicatedError extends Error {
  override readonly name = "NotReplicatedError";
}

interface Batch {
  promise: Promise<number>;
  started: boolean;
}

export class ReplicaWait {
  /** Per node route (the key that reaches it): the WAIT in flight, and the next one writers join. */
  private readonly inFlight = new Map<string, Promise<number>>();
  private readonly next = new Map<string, Batch>();

  constructor(
    private readonly client: RedisClient,
    private readonly settings: WaitSettings,
  ) {}

  /** Resolves once the replicas hold every write sent so far to the masters of `keys`; NotReplicatedError otherwise. */
  async confirm(keys: readonly string[]): Promise<void> {
    // One connection unless a cluster: one WAIT covers every key.
    const routes = this.client instanceof Cluster ? [...new Set(keys)] : keys.slice(0, 1);
    const counts = await Promise.all(routes.map((key) => this.joined(key)));
    const least = Math.min(...counts);
    if (least < this.settings.replicas)
      throw new NotReplicatedError(
        `the task store's replicas did not confirm the write within ${this.settings.timeoutMs} ms ` +
          `(${least} of ${this.settings.replicas})`,
      );
  }

  /** The WAIT this call can rely on: the next one on the route (it starts once the one in flight ends). */
  private joined(route: string): Promise<number> {
    const waiting = this.next.get(route);
    if (waiting && !waiting.started) return waiting.promise;
    const before = this.inFlight.get(route) ?? Promise.resolve(0);
    const batch: Batch = { promise: Promise.resolve(0), started: false };
    batch.promise = before
      .catch(() => 0)
      .then(() => {
        batch.started = true;
        if (this.next.get(route) === batch) this.next.delete(route);
        const sent = this.send(route);
        this.inFlight.set(route, sent);
        void sent
          .finally(() => {
            if (this.inFlight.get(route) === sent) this.inFlight.delete(route);
          })
          .catch(() => undefined);
        return sent;
      });
    this.next.set(route, batch);
    return batch.promise;
  }

  private async send(route: string): Promise<number> {
    const { replicas, timeoutMs } = this.settings;
    if (!(this.client instanceof Cluster)) return Number(await this.client.wait(replicas, timeoutMs));
    const replies = await this.client.pipeline().exists(route).wait(replicas, timeoutMs).exec();
    const [err, count] = replies?.[1] ?? [new Error("Redis answered no reply to WAIT"), 0];
    if (err) throw err;
    return Number(count);
  }
}
