// What an embedder (or a test) gives createGateway and startGateway besides the config.
import type { Logger } from "../log/logger.js";
import type { SharedTasks } from "../shared-tasks.js";
import type { StdioHost } from "../stdio/host.js";
import type { TaskStore } from "../store/task-store.js";

export interface GatewayOptions {
  logger?: Logger;
  /** A task store of the caller's for one process (tests, embedders); default: memory. */
  store?: TaskStore;
  /** Shared task state (replicas); when given, `store` is ignored. */
  shared?: SharedTasks;
  /** Injected clock (ms since epoch) so time-based logic is testable without sleeping. */
  now?: () => number;
  /**
   * The stdio host serving upstream.command (startGateway starts one and owns it); createGateway
   * needs it when the config names a command, and leaves closing it to the caller.
   */
  stdio?: StdioHost;
}
