// The task state every upstream route shares: the store, the leases, push, and the MRTR signing key. With
// replicas it is the state in Redis that every replica shares (startGateway connects it first); otherwise
// this process's own.
import type { GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { openSharedTasks, secretKey, type SharedTasks } from "../shared-tasks.js";
import { LocalTaskEvents } from "../store/local-events.js";
import { LocalLeases } from "../store/local-leases.js";
import { MemoryTaskStore } from "../store/memory-store.js";
import type { TaskEvents } from "../store/task-events.js";
import type { TaskLeases } from "../store/task-leases.js";
import type { TaskStore } from "../store/task-store.js";
import { LocalSessionOwners, type SessionOwners } from "../store/session-owners.js";
import type { GatewayOptions } from "./options.js";

export interface TaskState {
  store: TaskStore;
  leases: TaskLeases;
  events: TaskEvents;
  /** Which replica holds each gateway-held session (issue 23). */
  sessions: SessionOwners;
  /** The MRTR requestState signing key: the replicas' shared one, else the configured secret's, else none. */
  requestStateKey: Buffer | undefined;
  /** The state replicas share (latency share, /readyz, handoffs, leaving); undefined for one process. */
  shared: SharedTasks | undefined;
}

export function taskState(
  config: GatewayConfig,
  options: Pick<GatewayOptions, "store" | "shared">,
  now: () => number,
): TaskState {
  const { shared } = options;
  const store =
    shared?.store ??
    options.store ??
    new MemoryTaskStore(config.tasks.storeBytes, now, { maxBytesPerCaller: config.tasks.maxBytesPerCaller });
  const leases = shared?.leases ?? new LocalLeases(store);
  return {
    store,
    leases,
    sessions: shared?.sessions ?? new LocalSessionOwners(leases.replicaId, config.server.maxSessionsPerCaller),
    events: shared?.events ?? new LocalTaskEvents(),
    requestStateKey: shared?.requestStateKey ?? secretKey(config.eraBridge.requestStateSecret),
    shared,
  };
}

/**
 * startGateway's first step: the shared store named by `tasks.store`, connected before anything else, so a
 * gateway that cannot reach it does not start (StoreStartError). The given one when the caller has its own;
 * undefined for the memory store.
 */
export async function connectSharedTasks(
  config: GatewayConfig,
  given: SharedTasks | undefined,
  log: Logger,
  now: () => number,
): Promise<SharedTasks | undefined> {
  if (given !== undefined) return given;
  if (config.tasks.store === "memory") return undefined;
  const opened = await openSharedTasks(config, log, now);
  return { ...opened, leave: () => opened.leases.close() };
}

/**
 * A start that fails after connectSharedTasks opened the store (the gateway, whose shutdown would close it, was
 * never built): its connections close here, so they cannot keep the process alive. One given by the caller
 * stays the caller's.
 */
export async function closeUnusedSharedTasks(
  shared: SharedTasks | undefined,
  given: SharedTasks | undefined,
): Promise<void> {
  if (shared === undefined || shared === given) return;
  await shared.leave?.();
  await shared.events.close();
  await shared.store.close();
}
