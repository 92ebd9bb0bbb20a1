// Leases for one process (the memory store): it runs every task it has, so it
// holds every lease, none lapses, and there is nobody to forward to.
import { randomBytes } from "node:crypto";
import type { TaskLeases } from "./task-leases.js";
import type { StoredTask, TaskStore } from "./task-store.js";
import { TERMINAL } from "./task-store.js";

export class LocalLeases implements TaskLeases {
  readonly replicaId = randomBytes(16).toString("base64url");

  constructor(private readonly store: TaskStore) {}

  async runner(taskId: string): Promise<string | undefined> {
    const task = await this.store.get(taskId);
    return task && !TERMINAL.has(task.status) ? this.replicaId : undefined;
  }

  async renew(taskIds: readonly string[]): Promise<string[]> {
    const gone: string[] = [];
    for (const id of taskIds) {
      const task = await this.store.get(id);
      if (!task || TERMINAL.has(task.status)) gone.push(id);
    }
    return gone;
  }

  release(): Promise<void> {
    return Promise.resolve();
  }

  lapsed(): Promise<string[]> {
    return Promise.resolve([]);
  }

  endLapsed(_ended: StoredTask): Promise<boolean> {
    return Promise.resolve(false);
  }

  adopt(): Promise<boolean> {
    return Promise.resolve(false);
  }

  offer(): Promise<void> {
    return Promise.resolve();
  }

  takeTicket(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }

  withdraw(): Promise<void> {
    return Promise.resolve();
  }

  register(): Promise<void> {
    return Promise.resolve();
  }

  addressOf(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  }
}
