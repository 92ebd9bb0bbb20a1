// Federated endpoints (federated.<name>): each is served at <server.path>/<name> over the upstreams it names
// that are served now. Synced with the config at the start and on every reload; a member request goes
// through the app to the member's own route (http/federated-handler.ts), so nothing here holds a connection.
import type { GatewayConfig } from "../config/schema.js";
import { namedUpstreamPath } from "../config/upstream-set.js";
import type { RouteTable } from "../http/route-table.js";
import type { Logger } from "../log/logger.js";
import type { UpstreamSet } from "./upstream-set.js";

export interface Federation {
  /** A reload: endpoints added, removed, or with other members. */
  apply(config: GatewayConfig): void;
}

export function federation(
  config: GatewayConfig,
  parts: { table: RouteTable; upstreams: UpstreamSet; dispatch: (request: Request) => Promise<Response>; log: Logger },
): Federation {
  const { table, upstreams } = parts;
  let current = config;
  let served = new Set<string>();
  const apply = (next: GatewayConfig): void => {
    current = next;
    const wanted = new Set(Object.keys(next.federated));
    for (const name of served) if (!wanted.has(name)) table.dropFederated(namedUpstreamPath(next.server.path, name));
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
        log: parts.log,
      });
    }
    served = wanted;
  };
  apply(config);
  return { apply };
}
