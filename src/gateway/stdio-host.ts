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
  });
}
