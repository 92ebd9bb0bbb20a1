// server.internalSocketDir: the directory where replicas of one host listen on Unix sockets for each other
// (replicas/local-sockets.ts), checked once at start: a directory other local users could reach or write stops the
// start, naming the setting, since forwarded requests carry clients' credentials.
import type { GatewayConfig } from "../config/schema.js";
import { ConfigError } from "../config/validate.js";
import { LocalSockets, unsafeSocketDir } from "../replicas/local-sockets.js";

export function readInternalSocketDir(config: GatewayConfig): LocalSockets | undefined {
  const dir = config.server.internalSocketDir;
  if (dir === undefined) return undefined;
  const why = unsafeSocketDir(dir);
  if (why !== undefined) throw new ConfigError([`server.internalSocketDir ${dir} ${why}`]);
  return new LocalSockets(dir);
}

/** This replica's socket path (server.internalSocketDir), or undefined without one. Checked by the forwarder. */
export function internalSocketPath(config: GatewayConfig, replicaId: string): string | undefined {
  const dir = config.server.internalSocketDir;
  return dir === undefined ? undefined : new LocalSockets(dir).pathOf(replicaId);
}
