// RunningGateway.close: the listeners and what startGateway started, around the gateway's own shutdown. The
// order matters, and is kept here in one place.
import type { Server } from "node:http";
import type { StdioHost } from "../stdio/host.js";
import type { Tracing } from "../telemetry/tracing-target.js";
import type { Listeners } from "./listeners.js";
import type { Shutdown } from "./shutdown.js";

export interface Started {
  /** Gateway.shutdown. */
  shutdown: Shutdown;
  /** The stdio host startGateway started (not one the caller gave). */
  stdio: StdioHost | undefined;
  tracing: Tracing | undefined;
}

/** The first call closes (graceMs: Gateway.shutdown's); later calls get its outcome. */
export function closeOnce(listeners: Listeners, started: Started): Shutdown {
  let closing: Promise<{ drained: boolean }> | undefined;
  return function close(graceMs) {
    closing ??= closeRunning(listeners, started, graceMs);
    return closing;
  };
}

/** A start whose listeners failed: nothing was served, but what was started stops. */
export async function undoStart(started: Started): Promise<void> {
  await started.shutdown(0);
  await started.stdio?.close();
  await started.tracing?.shutdown();
}

async function closeNow(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

async function closeRunning(
  listeners: Listeners,
  started: Started,
  graceMs: number | undefined,
): Promise<{ drained: boolean }> {
  const { server, internal, local, metrics } = listeners;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // The internal listener stays open while tasks drain: forwarded tasks/update and tasks/cancel still arrive.
  const result = await started.shutdown(graceMs);
  server.closeAllConnections();
  if (internal) await closeNow(internal);
  // Closing a Unix socket's server removes its file.
  if (local) await closeNow(local.server);
  await closed;
  if (metrics) await closeNow(metrics);
  // After the pool's sessions were closed: every child gets stdin closed, then SIGTERM, then SIGKILL.
  await started.stdio?.close();
  // Last: the spans of everything above are ended by now, and exported before the process may exit.
  await started.tracing?.shutdown();
  return result;
}
