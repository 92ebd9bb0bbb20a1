// The grant backend on the shared Redis store (tasks.store redis://), on the store's own command connection:
// single-key commands only, so it runs the same on one node, Sentinel or a cluster. Every key is under the
// store's prefix (store/redis-keys.ts oauth()).
import type { RedisClient } from "../../store/redis-connect.js";
import { redisKeys, type RedisKeys } from "../../store/redis-keys.js";
import type { GrantBackend } from "./grant-store.js";

export class RedisGrantBackend implements GrantBackend {
  private readonly keys: RedisKeys;

  constructor(
    private readonly client: RedisClient,
    prefix: string,
  ) {
    this.keys = redisKeys(prefix);
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.client.get(this.keys.oauth(key))) ?? undefined;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.set(this.keys.oauth(key), value, "PX", Math.max(1, Math.ceil(ttlMs)));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.client.set(this.keys.oauth(key), value, "PX", Math.max(1, Math.ceil(ttlMs)), "NX")) === "OK";
  }

  async delete(key: string): Promise<boolean> {
    return (await this.client.del(this.keys.oauth(key))) > 0;
  }

  /** The connection is the task store's: it closes it. */
  async close(): Promise<void> {}
}
