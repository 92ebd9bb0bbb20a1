// With shared state, this instance takes over the tasks other instances hand on when they shut down (a
// rolling deploy): the era bridge resumes each upstream call from its ticket.
import type { Logger } from "../log/logger.js";
import type { SharedTasks } from "../shared-tasks.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { UpstreamSet } from "./upstream-set.js";

/** Resolves once this instance hears offers (Gateway.ready); at once without shared state. Never rejects. */
export function hearHandoffs(
  engine: TaskEngine,
  upstreams: UpstreamSet,
  shared: SharedTasks | undefined,
  log: Logger,
): Promise<void> {
  if (!shared) return Promise.resolve();
  return engine
    .acceptHandoffs(upstreams.resumeTask)
    .catch((err: unknown) => log.warn("cannot hear task handoffs", { cause: (err as Error).message }));
}
