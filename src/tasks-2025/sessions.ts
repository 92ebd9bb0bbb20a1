// Which legacy sessions get 2025-11-25 tasks from the gateway: those whose
// client declared capabilities.tasks at initialize, in front of an upstream that
// declared none. Sessions are the upstream's, so an entry is keyed by the
// session id and the caller's identity: another caller presenting the same
// session id finds nothing. Bounded, least recently used out; an entry also
// keeps the ids of the tasks created on it (tasks/list), newest last, bounded.
import type { JsonObject } from "../protocol/json.js";

export interface TaskSession {
  /** What the client declared at initialize (input requests are asked only for these). */
  readonly capabilities: JsonObject;
  /** Tasks created on this session, oldest first. */
  readonly taskIds: string[];
}

export interface SessionLimits {
  maxSessions: number;
  maxTasksPerSession: number;
}

export class TaskSessions {
  /** session id ("" for a stateless upstream) → caller → state; Map order is recency (both levels). */
  private readonly bySession = new Map<string, Map<string, TaskSession>>();
  /** Entries (session, caller) held: the bound, since one session id (a stateless upstream's "") may hold many callers. */
  private entries = 0;

  constructor(private readonly limits: SessionLimits) {}

  /** A cheap first check on the hot path, before the caller's identity is computed. */
  has(sessionId: string | undefined): boolean {
    return this.bySession.has(sessionId ?? "");
  }

  get(sessionId: string | undefined, caller: string): TaskSession | undefined {
    const key = sessionId ?? "";
    const callers = this.bySession.get(key);
    const state = callers?.get(caller);
    if (callers && state) {
      this.bySession.delete(key);
      this.bySession.set(key, callers);
      callers.delete(caller);
      callers.set(caller, state);
    }
    return state;
  }

  /** Entries held (session, caller); at most maxSessions. */
  get size(): number {
    return this.entries;
  }

  open(sessionId: string | undefined, caller: string, capabilities: JsonObject): void {
    const key = sessionId ?? "";
    const callers = this.bySession.get(key) ?? new Map<string, TaskSession>();
    if (!callers.delete(caller)) this.entries += 1;
    callers.set(caller, { capabilities, taskIds: [] });
    this.bySession.delete(key);
    this.bySession.set(key, callers);
    // Least recently used out: the oldest caller of the least recently used session id.
    while (this.entries > this.limits.maxSessions) {
      const [oldestKey, oldestCallers] = this.bySession.entries().next().value ?? [];
      if (oldestKey === undefined || oldestCallers === undefined) break;
      const oldestCaller = oldestCallers.keys().next().value;
      if (oldestCaller !== undefined && oldestCallers.delete(oldestCaller)) this.entries -= 1;
      if (oldestCallers.size === 0) this.bySession.delete(oldestKey);
    }
  }

  /** The client ended the session (DELETE). */
  close(sessionId: string, caller: string): void {
    const callers = this.bySession.get(sessionId);
    if (callers?.delete(caller)) this.entries -= 1;
    if (callers?.size === 0) this.bySession.delete(sessionId);
  }

  addTask(state: TaskSession, taskId: string): void {
    state.taskIds.push(taskId);
    if (state.taskIds.length > this.limits.maxTasksPerSession)
      state.taskIds.splice(0, state.taskIds.length - this.limits.maxTasksPerSession);
  }

  forgetTask(state: TaskSession, taskId: string): void {
    const i = state.taskIds.indexOf(taskId);
    if (i !== -1) state.taskIds.splice(i, 1);
  }
}
