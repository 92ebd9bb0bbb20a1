// Which legacy sessions get 2025-11-25 tasks from the gateway: those whose
// client declared capabilities.tasks at initialize, in front of an upstream that
// declared none. Sessions are the upstream's, so an entry is keyed by the
// session id and the caller's identity: another caller presenting the same
// session id finds nothing. Bounded in entries (session id × caller, since one
// session id may hold many callers: a stateless upstream's "" holds every
// caller), least recently used out; an entry also keeps the ids of the tasks
// created on it (tasks/list), newest last, bounded.
import { LRUCache } from "lru-cache";
import type { HeldSessions } from "../protocol/held-sessions.js";
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

/**
 * An entry's key: the caller's identity digest (base64url, never a line feed) first, so the session id is
 * whatever follows the first line feed.
 */
const keyOf = (sessionId: string, caller: string): string => `${caller}\n${sessionId}`;
const sessionOf = (key: string): string => key.slice(key.indexOf("\n") + 1);

export class TaskSessions {
  /** (caller, session id) → state; a get or an open is a use. */
  private made: LRUCache<string, TaskSession> | undefined;
  /** Entries per session id ("" for a stateless upstream), for `has`; kept as entries come and go. */
  private readonly perSession = new Map<string, number>();

  /** `held`: each session id (but a stateless upstream's "") is recorded as this process's while it has entries. */
  constructor(
    private readonly limits: SessionLimits,
    private readonly held?: HeldSessions,
  ) {}

  /**
   * Made at the first session: lru-cache allocates all `max` slots at once (hundreds of KiB), and an upstream
   * no 2025-11-25 client declares tasks to (most of many configured ones) should not pay for them.
   */
  private get entries(): LRUCache<string, TaskSession> {
    return (this.made ??= new LRUCache<string, TaskSession>({
      max: this.limits.maxSessions,
      // An entry that leaves (least recently used out, or closed) no longer counts for its session id; one
      // opened again ("set": replaced in place) still does.
      dispose: (_state, key, reason) => {
        if (reason !== "set") this.uncount(sessionOf(key));
      },
    }));
  }

  /** A cheap first check on the hot path, before the caller's identity is computed. */
  has(sessionId: string | undefined): boolean {
    return this.perSession.has(sessionId ?? "");
  }

  get(sessionId: string | undefined, caller: string): TaskSession | undefined {
    return this.made?.get(keyOf(sessionId ?? "", caller));
  }

  /** Entries held (session, caller); at most maxSessions. */
  get size(): number {
    return this.made?.size ?? 0;
  }

  /** Resolves once the session is recorded as this process's (before the client learns its id). */
  async open(sessionId: string | undefined, caller: string, capabilities: JsonObject): Promise<void> {
    const id = sessionId ?? "";
    const key = keyOf(id, caller);
    const first = !this.perSession.has(id);
    if (!this.entries.has(key)) this.perSession.set(id, (this.perSession.get(id) ?? 0) + 1);
    // At maxSessions, the least recently used entry goes (its dispose uncounts it).
    this.entries.set(key, { capabilities, taskIds: [] });
    if (first && id !== "") await this.held?.claim(id);
  }

  /** The client ended the session (DELETE). */
  close(sessionId: string, caller: string): void {
    this.made?.delete(keyOf(sessionId, caller));
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

  private uncount(sessionId: string): void {
    const n = (this.perSession.get(sessionId) ?? 0) - 1;
    if (n > 0) this.perSession.set(sessionId, n);
    else {
      this.perSession.delete(sessionId);
      if (sessionId !== "") this.held?.release(sessionId);
    }
  }
}
