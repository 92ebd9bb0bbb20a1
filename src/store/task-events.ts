// Push of task changes. The replica that changes a task publishes its new
// DetailedTask; a subscriptions/listen on any replica subscribes to the ids it
// acknowledged. Local for the memory store, pub/sub (a channel per task) for Redis.

/** `detailed` is the DetailedTask JSON (what notifications/tasks carries as params). */
export type TaskListener = (detailed: string) => void;

export interface TaskEvents {
  publish(taskId: string, detailed: string): void;
  /** Resolves once the subscription is live (a change published after it is heard); returns the unsubscribe. */
  subscribe(taskId: string, listener: TaskListener): Promise<() => void>;
  /** Tells every replica that `from` offers the task (a handoff ticket waits in the store). */
  announceHandoff(taskId: string, from: string): void;
  /** How many other instances listen for handoff offers (0: nobody to hand a task to). */
  handoffPeers(): Promise<number>;
  /** Hears handoff offers (its own included: the listener skips those). */
  onHandoff(listener: (taskId: string, from: string) => void): Promise<void>;
  close(): Promise<void>;
}
