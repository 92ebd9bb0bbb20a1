// Task change push inside one process: the memory store's TaskEvents.
import type { TaskEvents, TaskListener } from "./task-events.js";

export class LocalTaskEvents implements TaskEvents {
  private readonly listeners = new Map<string, Set<TaskListener>>();

  publish(taskId: string, detailed: string): void {
    const set = this.listeners.get(taskId);
    if (!set) return;
    for (const l of [...set]) l(detailed);
  }

  subscribe(taskId: string, listener: TaskListener): Promise<() => void> {
    let set = this.listeners.get(taskId);
    if (!set) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(listener);
    const own = set;
    return Promise.resolve(() => {
      own.delete(listener);
      if (own.size === 0 && this.listeners.get(taskId) === own) this.listeners.delete(taskId);
    });
  }

  /** One process has nobody to hand a task to. */
  announceHandoff(): void {}

  handoffPeers(): Promise<number> {
    return Promise.resolve(0);
  }

  onHandoff(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.listeners.clear();
    return Promise.resolve();
  }
}
