// Push of task changes. The replica that changes a task publishes its new
// DetailedTask; a subscriptions/listen on any replica subscribes to the ids it
// acknowledged. Local for the memory store, pub/sub (a channel per task) for Redis.

/** `detailed` is the DetailedTask JSON (what notifications/tasks carries as params). */
export type TaskListener = (detailed: string) => void;

export interface TaskEvents {
  publish(taskId: string, detailed: string): void;
  /** Resolves once the subscription is live (a change published after it is heard); returns the unsubscribe. */
  subscribe(taskId: string, listener: TaskListener): Promise<() => void>;
  close(): Promise<void>;
}
