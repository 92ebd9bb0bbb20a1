// The upstreams served now, by path: server.path for the single upstream, <server.path>/<name> for each named
// one. The app looks a request's path up here; the composition root (gateway/upstream-set.ts) fills it, and a
// reload changes it while requests run.
import {
  createUpstreamHandler,
  type SharedHandlerDeps,
  type UpstreamHandler,
  type UpstreamHandlerDeps,
} from "./named-route.js";
import { createFederatedHandler, type FederatedDeps, type FederatedHandler } from "../federated/endpoint.js";

/** The upstreams served now, by path; a reload changes it while requests run. */
export interface RouteTable {
  /** Serves an upstream at its path, replacing what was served there (its old handler keeps its requests). */
  serve(deps: UpstreamHandlerDeps): UpstreamHandler;
  /** The upstream at `path` was removed: only its tasks are served there from now on. */
  retire(path: string): void;
  /** Nothing is served at `path` any more (404). */
  drop(path: string): void;
  /** The handlers in the table, retired ones included. */
  handlers(): UpstreamHandler[];
  /** The handler at exactly `path`, or undefined (404). */
  at(path: string): UpstreamHandler | undefined;
  /** Serves a federated endpoint at its path (federated/endpoint.ts), replacing what was there. */
  serveFederated(deps: FederatedDeps): void;
  dropFederated(path: string): void;
  /** The federated endpoint at exactly `path`, or undefined. */
  federatedAt(path: string): FederatedHandler | undefined;
}

export function createRouteTable(shared: SharedHandlerDeps): RouteTable {
  const table = new Map<string, UpstreamHandler>();
  const federated = new Map<string, FederatedHandler>();
  return {
    serve(own) {
      const handler = createUpstreamHandler(shared, own);
      table.set(own.path, handler);
      return handler;
    },
    retire(path) {
      table.get(path)?.retire();
    },
    drop(path) {
      table.delete(path);
    },
    handlers: () => [...table.values()],
    at: (path) => table.get(path),
    serveFederated(deps) {
      federated.set(deps.path, createFederatedHandler(deps));
    },
    dropFederated(path) {
      federated.delete(path);
    },
    federatedAt: (path) => federated.get(path),
  };
}
