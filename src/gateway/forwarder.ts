// The replica forwarder: tasks/update, tasks/cancel and MRTR retries for a call another replica runs go to
// that replica's internal listener, with a credential under a key derived from the shared secret.
import { randomBytes } from "node:crypto";
import { internalAdvertisedHost, internalInClear, type GatewayConfig } from "../config/schema.js";
import { readInternalSocketDir } from "./internal-socket.js";
import { readInternalTls } from "./internal-tls.js";
import { ReplicaForwarder } from "../replicas/forward.js";
import { forwardingKey } from "../replicas/forward-token.js";
import type { InFlight } from "../http/inflight.js";
import type { Logger } from "../log/logger.js";
import type { TaskState } from "./shared-state.js";

export function replicaForwarder(
  config: GatewayConfig,
  parts: { state: TaskState; inflight: InFlight; log: Logger; now: () => number },
): ReplicaForwarder {
  const { state } = parts;
  if (state.shared && config.server.internalInsecure && internalInClear(config.server))
    parts.log.warn(
      "server.internalInsecure: requests forwarded between replicas, clients' credentials included, cross the network in clear text",
      { advertised: internalAdvertisedHost(config.server) },
    );
  return new ReplicaForwarder({
    tls: state.shared && readInternalTls(config),
    local: state.shared && readInternalSocketDir(config),
    leases: state.leases,
    // Shared state always brings a key; without it nothing is forwarded (every task runs here), and any key will do.
    key: forwardingKey(state.requestStateKey ?? randomBytes(32)),
    config,
    inflight: parts.inflight,
    log: parts.log,
    now: parts.now,
  });
}
