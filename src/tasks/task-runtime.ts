// The runtime half of a task this process runs: how to reach its upstream call. The engine keeps one per
// unfinished task it writes; handoff.ts moves them between instances.
import type { AuditWho } from "../log/audit.js";
import type { TaskRecord } from "./task.js";

/** How the engine reaches the upstream call behind an unfinished task. */
export interface TaskRuntime {
  /** Delivers the client's answer for an input request key to the upstream. */
  answer(key: string, value: unknown): Promise<void>;
  /** Stops the upstream call (notifications/cancelled with the upstream id, stop reading). */
  cancel(reason: string): void;
  /**
   * Stops reading without stopping the call, and returns what another instance
   * needs to resume it (JSON-able); undefined when the call cannot be resumed.
   * After it, cancel() still reaches the upstream.
   */
  detach?(): unknown;
}

/**
 * Picks up a task another instance handed on: builds the runtime from the
 * ticket, and a start() that begins reading once the task is registered here.
 */
export type TaskResumer = (
  taskId: string,
  ticket: unknown,
  record: TaskRecord,
) => Promise<{ runtime: TaskRuntime; start: () => void }>;

/** What a task is about, for the audit trail: its tool and who started it. */
export interface TaskAbout extends AuditWho {
  tool: string;
  /** The policy mode the task was created under (auto, always, required), for the metrics. */
  mode?: string | undefined;
  /** The configured name of the upstream that runs it (its route); the task id carries it. Default: default. */
  upstream?: string | undefined;
}

/** An unfinished task this process runs: the live record (this process is its only writer) and its runtime. */
export interface RunningTask {
  record: TaskRecord;
  runtime: TaskRuntime;
  /** Unknown for a task taken over from another instance. */
  about: TaskAbout | undefined;
}
