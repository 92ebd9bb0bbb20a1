// Gateway.shutdown: the order matters, and is kept here in one place.
import type { GatewayConfig } from "../config/schema.js";
import type { GatewayParts } from "./parts.js";

type ShutdownParts = Pick<
  GatewayParts,
  "state" | "engine" | "history" | "upstreams" | "forwarder" | "metricsRoutes" | "inflight"
> & {
  /** The federated endpoints: their legacy sessions and loopback connections. */
  federation?: { close(): Promise<void> } | undefined;
};

export type Shutdown = (graceMs?: number) => Promise<{ drained: boolean }>;

/** Gateway.shutdown: the first call shuts down (graceMs defaults to server.shutdownGraceMs); later calls get its outcome. */
export function gatewayShutdown(config: GatewayConfig, parts: ShutdownParts): Shutdown {
  let shuttingDown: Promise<{ drained: boolean }> | undefined;
  return function shutdown(graceMs = config.server.shutdownGraceMs) {
    shuttingDown ??= shutDown(config, parts, graceMs);
    return shuttingDown;
  };
}

const ABANDONED =
  "The gateway instance running this task shut down before it finished, and its upstream call could not be handed to another instance; the call was cancelled";

/**
 * Ends long-lived event streams, waits up to `graceMs` for calls in progress (and, with shared state,
 * tasks.drainMs for the tasks running here), cuts the rest, hands on or ends the unfinished tasks, then closes
 * the parts, the engine before the upstream's sessions and connections.
 */
async function shutDown(config: GatewayConfig, parts: ShutdownParts, graceMs: number): Promise<{ drained: boolean }> {
  const { state, engine, history, upstreams, forwarder, metricsRoutes, inflight, federation } = parts;
  const { shared } = state;
  inflight.stopLongLived();
  // With shared state, tasks running here get drainMs to finish (clients poll other replicas meanwhile);
  // what is left is handed on or ended failed, never silently dropped.
  const [drained, unfinished] = await Promise.all([
    inflight.drained(graceMs),
    shared ? engine.drain(config.tasks.drainMs) : Promise.resolve([]),
  ]);
  if (!drained) inflight.stopAll();
  // What is left: handed to another instance where the upstream can resume the call's stream
  // (it gave its events ids), else cancelled upstream and ended failed, saying so.
  // Settled one by one: a store that fails for one task must not stop the rest of the shutdown.
  await Promise.allSettled(
    unfinished.map(async (id) => {
      if (await engine.handOff(id, config.tasks.forwardTimeoutMs)) return;
      await engine.abandon(id, ABANDONED);
    }),
  );
  upstreams.endExchanges();
  // Legacy sessions on federated endpoints end, and their connections to the gateway's own listener close.
  await federation?.close();
  metricsRoutes?.close();
  await forwarder.close();
  // Its sessions' records go: another replica answers 404 (re-initialize) at once, not only once they lapse.
  await state.sessions.close();
  await shared?.leave?.();
  // The last samples go to the shared store before its connection closes with the engine.
  await history.close();
  // The engine cancels the upstream calls still here: every upstream's sessions and connections close after it.
  await engine.close();
  await upstreams.close();
  return { drained };
}
