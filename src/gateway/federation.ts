// Federated endpoints (federated.<name>): each is served at <server.path>/<name> over the upstreams it names
// that are served now. Synced with the config at the start and on every reload; a member request goes
// through the app to the member's own route (federated/endpoint.ts). The only connections are those of a
// legacy client's session (federated/legacy-sessions.ts): to the gateway's own listener, once it listens.
// The members' circuit breakers (federation/breaker.ts) are kept here, outside the handlers, so that /metrics
// and /status read them: built first (federationBreakers), handed to the endpoints, read by federationStatus.
import type { SessionRouting } from "../replicas/session-routing.js";
import type { AuthGate } from "../policy/sets/auth-gate.js";
import type { GatewayConfig } from "../config/schema.js";
import { namedUpstreamPath } from "../config/upstream-set.js";
import { Breakers } from "../federation/breaker.js";
import type { FederatedObserver } from "../federated/endpoint.js";
import type { RouteTable } from "../endpoints/route-table.js";
import type { Logger } from "../log/logger.js";
import type { StatusFederated, StatusFederatedMember } from "../metrics/status-page.js";
import type { UpstreamSet } from "./upstream-set.js";
import type { Exchange } from "../server/exchange.js";
import { callerOf } from "../server/identify.js";
import { randomBytes } from "node:crypto";
import { TaskHandles } from "../federation/task-handles.js";
import type { Callers } from "../policy/sets/identity.js";
import type { LiveConfig } from "./live-config.js";
import { packageInfo } from "../version.js";

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

/** The members' circuit breakers, with the settings of the configuration in force (read at each use). */
export function federationBreakers(config: () => GatewayConfig, now: () => number): Breakers {
  return new Breakers(() => {
    const f = config().federation;
    return { failures: f.breakerFailures, backoffMs: f.breakerBackoffMs, maxBackoffMs: f.breakerMaxBackoffMs };
  }, now);
}

/** The handles' key comes from the requestState key, so replicas sharing a store open each other's handles. */
export function federatedTaskHandles(requestStateKey: Buffer | undefined): TaskHandles {
  return new TaskHandles(requestStateKey ?? randomBytes(32));
}

/** The identity digest `member`'s route computes for the same request: a handle is bound to the caller it names. */
export function memberCaller(live: LiveConfig, callers: Callers): (ex: Exchange, member: string) => string {
  return (ex, member) => {
    const policy = live.policies.get(member);
    if (!policy) return "";
    // The member's policy, not the endpoint's request's: the same request as the member's route will see it.
    const view = ex.set;
    ex.set = policy.current;
    try {
      return callerOf(callers, ex);
    } finally {
      ex.set = view;
    }
  };
}

/** Every federated endpoint of `config` with each member's state (a scrape, the status page: no I/O). */
export function federationStatus(config: GatewayConfig, upstreams: UpstreamSet, breakers: Breakers): StatusFederated[] {
  const entries = Object.entries(config.federated);
  if (entries.length === 0) return [];
  const served = new Set(upstreams.serving().map((r) => r.entry.name));
  return entries.map(([name, endpoint]) => ({
    name,
    path: namedUpstreamPath(config.server.path, name),
    members: endpoint.upstreams.map((member): StatusFederatedMember => {
      if (!served.has(member)) return { name: member, state: "not_served" };
      const b = breakers.state(name, member);
      if (b.state === "open") return { name: member, state: "open", openUntil: new Date(b.until).toISOString() };
      return { name: member, state: b.state === "half-open" ? "half_open" : "served" };
    }),
  }));
}

export function federation(
  config: GatewayConfig,
  parts: {
    table: RouteTable;
    upstreams: UpstreamSet;
    dispatch: (request: Request) => Promise<Response>;
    /** The auth gate in force (live-config.ts), read at each request. */
    gate: () => AuthGate | undefined;
    /** Registers a long-lived stream (a legacy session's GET stream) for graceful shutdown. */
    track: (stop: () => void) => () => void;
    now: () => number;
    breakers: Breakers;
    /** The task handles of members that keep their own tasks, one key for every endpoint (and every replica). */
    handles: TaskHandles;
    /** The identity digest a member's route gives a request's caller. */
    caller: (ex: Exchange, member: string) => string;
    /** Who is calling (shared by every endpoint). */
    callers: Callers;
    /** Metrics: the observer of a federated endpoint, by its name; undefined with metrics off. */
    observer?: ((federated: string) => FederatedObserver) | undefined;
    /** Legacy sessions on every replica (issue 23). */
    sessions: SessionRouting;
    log: Logger;
  },
): Federation {
  const { table, upstreams, breakers } = parts;
  let current = config;
  let served = new Set<string>();
  let origin: string | undefined;
  const drop = (path: string): void => {
    const gone = table.federatedAt(path);
    table.dropFederated(path);
    void gone?.close();
  };
  /** Every upstream each endpoint had as a member since it was made: its tasks stay readable there. */
  const everMembers = new Map<string, Set<string>>();
  /** The members each endpoint served at the last apply, to tell its listeners when they change. */
  const lastMembers = new Map<string, string>();
  const apply = (next: GatewayConfig): void => {
    current = next;
    const wanted = new Set(Object.keys(next.federated));
    for (const name of served) if (!wanted.has(name)) drop(namedUpstreamPath(next.server.path, name));
    // A member removed from an endpoint (or an endpoint removed) starts afresh if it comes back.
    for (const name of new Set([...served, ...wanted])) breakers.keep(name, next.federated[name]?.upstreams);
    for (const name of wanted) {
      const ever = everMembers.get(name) ?? new Set<string>();
      for (const member of next.federated[name]?.upstreams ?? []) ever.add(member);
      everMembers.set(name, ever);
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
        taskMembers: () =>
          upstreams
            .all()
            .filter((r) => everMembers.get(name)?.has(r.entry.name) === true)
            .map((r) => ({ name: r.entry.name, path: r.entry.path })),
        dispatch: parts.dispatch,
        memberHandler: (path) => table.at(path),
        gate: parts.gate,
        // The config in force, read at each request: a reload's live settings (tasks.identityHeader: what a
        // legacy session carries to the member routes) apply to an endpoint that was there before it.
        get config() {
          return current;
        },
        get listTimeoutMs() {
          return current.federation.listTimeoutMs;
        },
        selfOrigin: () => origin,
        track: parts.track,
        now: parts.now,
        breaker: (member) => breakers.of(name, member),
        handles: parts.handles,
        caller: parts.caller,
        callers: parts.callers,
        upstreamTasks: (member) => {
          const era = upstreams.serving().find((r) => r.entry.name === member)?.era;
          return era?.tasksKnown ? era.upstreamServesTasks : undefined;
        },
        observer: parts.observer?.(name),
        sessions: parts.sessions,
        version: packageInfo().version,
        log: parts.log,
      });
    }
    served = wanted;
    for (const name of wanted) {
      const path = namedUpstreamPath(next.server.path, name);
      const endpoint = table.federatedAt(path);
      const members = endpoint?.deps
        .members()
        .map((m) => m.name)
        .join(",");
      if (members !== undefined && lastMembers.has(name) && lastMembers.get(name) !== members) endpoint?.listsChanged();
      if (members !== undefined) lastMembers.set(name, members);
    }
    for (const name of lastMembers.keys()) if (!wanted.has(name)) lastMembers.delete(name);
    for (const name of everMembers.keys()) if (!wanted.has(name)) everMembers.delete(name);
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
