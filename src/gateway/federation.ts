// Federated endpoints (federated.<name>): each is served at <server.path>/<name> over the upstreams it names
// that are served now. Synced with the config at the start and on every reload; a member request goes
// through the app to the member's own route (http/federated-handler.ts). The only connections are those of a
// legacy client's session (http/federated-legacy.ts): to the gateway's own listener, once it listens.
import type { GatewayConfig } from "../config/schema.js";
import { namedUpstreamPath } from "../config/upstream-set.js";
import type { RouteTable } from "../http/route-table.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamSet } from "./upstream-set.js";

export interface Federation {
  /** A reload: endpoints added, removed, or with other members. */
  apply(config: GatewayConfig): void;
  /** The gateway listens at `origin` (startGateway): legacy sessions reach the endpoints through it from now on. */
  listening(origin: string): void;
  /** Shutdown: every endpoint's legacy sessions end and their loopback connections close. */
  close(): Promise<void>;
}

/**
 * Where the gateway reaches its own listener: its origin, with a wildcard address (0.0.0.0, ::) replaced by
 * the loopback address of its family, since a wildcard is where one listens, not where one connects.
 */
function loopbackOrigin(origin: string): string {
  const url = new URL(origin);
  if (url.hostname === "0.0.0.0" || url.hostname === "") url.hostname = "127.0.0.1";
  else if (url.hostname === "[::]") url.hostname = "[::1]";
  return url.origin;
}

export function federation(
  config: GatewayConfig,
  parts: {
    table: RouteTable;
    upstreams: UpstreamSet;
    dispatch: (request: Request) => Promise<Response>;
    /** Registers a long-lived stream (a legacy session's GET stream) for graceful shutdown. */
    track: (stop: () => void) => () => void;
    now: () => number;
    log: Logger;
  },
): Federation {
  const { table, upstreams } = parts;
  let current = config;
  let served = new Set<string>();
  let origin: string | undefined;
  const drop = (path: string): void => {
    const gone = table.federatedAt(path);
    table.dropFederated(path);
    void gone?.close();
  };
  const apply = (next: GatewayConfig): void => {
    current = next;
    const wanted = new Set(Object.keys(next.federated));
    for (const name of served) if (!wanted.has(name)) drop(namedUpstreamPath(next.server.path, name));
    for (const name of wanted) {
      if (served.has(name)) continue;
      table.serveFederated({
        name,
        path: namedUpstreamPath(next.server.path, name),
        // Read at each request: a reload that changes the members, or the upstreams served, applies at once.
        members: () => {
          const names = current.federated[name]?.upstreams ?? [];
          return upstreams
            .serving()
            .filter((r) => names.includes(r.entry.name))
            .map((r) => ({ name: r.entry.name, path: r.entry.path }));
        },
        dispatch: parts.dispatch,
        config: next,
        get listTimeoutMs() {
          return current.federation.listTimeoutMs;
        },
        selfOrigin: () => origin,
        track: parts.track,
        now: parts.now,
        log: parts.log,
      });
    }
    served = wanted;
  };
  apply(config);
  return {
    apply,
    listening(at) {
      origin = loopbackOrigin(at);
    },
    async close() {
      const paths = [...served].map((name) => namedUpstreamPath(current.server.path, name));
      served = new Set();
      await Promise.all(paths.map(async (path) => table.federatedAt(path)?.close()));
    },
  };
}
