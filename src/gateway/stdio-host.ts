// A stdio upstream (upstream.command): its host serves Streamable HTTP in process, one child per session. startGateway starts one unless the caller gave its own, and then owns it.
import { DEFAULT_UPSTREAM_NAME, type GatewayConfig } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { StdioHost, type StdioUpstreamConfig } from "../stdio/host.js";

/** The host startGateway starts (and closes); undefined for an HTTP upstream or a host the caller gave. */
export async function startStdioHost(
  config: GatewayConfig,
  given: StdioHost | undefined,
  log: Logger,
  now: () => number,
): Promise<StdioHost | undefined> {
  const { upstream } = config;
  const command = upstream?.command;
  if (!upstream || !command || given) return undefined;
  return StdioHost.start({ ...upstream, command } satisfies StdioUpstreamConfig, {
    log,
    now,
    name: DEFAULT_UPSTREAM_NAME,
    callerShare: callerShare(upstream, config),
  });
}

/**
 * A stdio upstream's per-caller share of its processes: upstream.maxProcessesPerCaller, else a quarter of
 * maxProcesses (at least 1) once auth.jwt verifies callers; undefined (no share) without verified callers, whose
 * identity is only what their headers say, so that a share would be one new header away.
 */
export function callerShare(
  upstream: { maxProcesses: number; maxProcessesPerCaller?: number | undefined },
  config: GatewayConfig,
): number | undefined {
  if (upstream.maxProcessesPerCaller !== undefined) return upstream.maxProcessesPerCaller;
  return config.auth ? Math.max(1, Math.floor(upstream.maxProcesses / 4)) : undefined;
}
