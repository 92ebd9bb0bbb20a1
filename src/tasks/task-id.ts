// Task ids. 128 bits from the CSPRNG, base64url; a task of a named upstream carries the upstream's name in
// front (`github.Q3v9…`), so every route can tell its own tasks from any other's without reading the store,
// on every replica and on the lean poll path alike. base64url never contains ".", and names never do either.
import { DEFAULT_UPSTREAM_NAME } from "../config/schema.js";
import { randomToken } from "../protocol/random-token.js";

/** A new task id for a task of `upstream` (the single upstream's when not given: a bare id, as always). */
export function newTaskId(upstream: string = DEFAULT_UPSTREAM_NAME): string {
  return upstream === DEFAULT_UPSTREAM_NAME ? randomToken() : `${upstream}.${randomToken()}`;
}

/** The upstream whose task this id names: the prefix before ".", or the single upstream's for a bare id. */
export function taskUpstream(taskId: string): string {
  const dot = taskId.indexOf(".");
  return dot === -1 ? DEFAULT_UPSTREAM_NAME : taskId.slice(0, dot);
}

/**
 * How much of a task id's random part log lines and the status page show: 12 base64url characters, 72 of its 128
 * bits. Enough to correlate (collisions are unlikely below 2^36 tasks) and to find a task a client names; never the
 * whole id, which a reader of the logs could otherwise replay as the caller (see log/audit.ts).
 */
const TASK_REF_CHARS = 12;

/** The part of a task id that log lines and the status page show (TASK_REF_CHARS of its random part). */
export function taskRef(taskId: string): string {
  const dot = taskId.indexOf(".");
  return taskId.slice(dot + 1, dot + 1 + TASK_REF_CHARS);
}
