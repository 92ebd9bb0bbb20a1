// The upstreams served now, each one an UpstreamRoute behind its path in the app's route table, and what a
// reload does to them:
//   - an added upstream is built and served at once;
//   - a removed one is retired: its path answers 404 except for its tasks, which keep running for up to
//     tasks.drainMs (then they are ended failed) and stay readable there until tasks.maxTtlMs has passed;
//   - a changed one (its connection settings) gets a new route for new calls, while the calls and tasks that
//     run on the old one finish there; the old one closes when they are done (at most tasks.maxTtlMs).
// A change of policy only (tasks, access, auth of the block) needs no new route: its live policy is swapped.
import type { HeldSessions } from "../protocol/held-sessions.js";
import type { GatewayConfig } from "../config/schema.js";
import { upstreamEntries, type UpstreamEntry } from "../config/upstream-set.js";
import type { RouteTable } from "../endpoints/route-table.js";
import type { Logger } from "../log/logger.js";
import { StdioHost } from "../stdio/host.js";
import type { TaskEngine } from "../tasks/engine.js";
import type { TaskResumer } from "../tasks/task-runtime.js";
import { taskUpstream } from "../tasks/task-id.js";
import type { UpstreamObserver } from "../upstream/client.js";
import { policyOf, type LiveConfig } from "./live-config.js";
import { callerShare } from "./stdio-host.js";
import { buildUpstreamRoute, type UpstreamRoute } from "./upstream-route.js";
import type { CredentialObserver } from "../credentials/source.js";
import type { ConsentService } from "../credentials/consent/flow.js";

export interface UpstreamSetParts {
  engine: TaskEngine;
  live: LiveConfig;
  table: RouteTable;
  replicaId: string;
  requestStateKey: Buffer | undefined;
  /** The stdio host of the single upstream's command (its owner's to close); named ones get hosts of their own. */
  defaultStdio: StdioHost | undefined;
  /** Gateway-held sessions (issue 23): a stdio host records each of its sessions as this process's. */
  sessions: HeldSessions;
  /** Times every request to an upstream (metrics on). */
  observer: ((name: string) => UpstreamObserver | undefined) | undefined;
  /** Counts upstream tokens (upstreams.<name>.oauth); undefined with metrics off. */
  credentialObserver?: CredentialObserver | undefined;
  /** The consent flow of userConsent upstreams; undefined without auth.vault. */
  consent?: ConsentService | undefined;
  log: Logger;
  now: () => number;
}

/** How often a route that is being let go checks whether its last tasks ended. */
const SETTLE_CHECK_MS = 1_000;

interface Leaving {
  route: UpstreamRoute;
  /** The tasks it ran when it was let go: it closes once none of them runs here any more. */
  tasks: Set<string>;
  timers: NodeJS.Timeout[];
}

function sameConnection(a: UpstreamEntry, b: UpstreamEntry): boolean {
  return JSON.stringify(a.upstream) === JSON.stringify(b.upstream) && a.path === b.path;
}

export class UpstreamSet {
  private readonly active = new Map<string, UpstreamRoute>();
  private readonly leaving = new Set<Leaving>();
  /** Hosts this set started (named stdio upstreams), by route. */
  private readonly hosts = new Map<UpstreamRoute, StdioHost>();
  private readonly starting = new Set<Promise<void>>();
  private closed = false;
  /** The config's upstreams, in its order: read by every federated request (serving), so listed once per config. */
  private entries: UpstreamEntry[];

  constructor(
    private config: GatewayConfig,
    private readonly parts: UpstreamSetParts,
  ) {
    this.entries = upstreamEntries(config);
    for (const entry of this.entries) this.add(entry);
  }

  /** Resolves once every upstream of the start is served (named stdio upstreams start their hosts first). */
  get ready(): Promise<void> {
    return Promise.all(this.starting).then(() => undefined);
  }

  /** Every route, the ones being let go included (their calls and tasks still run). */
  all(): UpstreamRoute[] {
    return [...this.active.values(), ...[...this.leaving].map((l) => l.route)];
  }

  /** The routes served now, in the config's order (a route a reload replaced keeps its place). */
  serving(): UpstreamRoute[] {
    return this.entries.flatMap((e) => this.active.get(e.name) ?? []);
  }

  /** Hands a task another instance hands on to the route of its upstream (its id names it). */
  readonly resumeTask: TaskResumer = (taskId, ticket, record) => {
    const route = this.active.get(taskUpstream(taskId));
    if (!route) return Promise.reject(new Error(`no upstream ${taskUpstream(taskId)} is served here`));
    return route.bridge.resumeTask(taskId, ticket, record);
  };

  /**
   * A reload: adds, retires and replaces routes to match `config` (policies were swapped already). An upstream
   * whose new settings cannot be used (an unreadable caFile) is logged and keeps its old route, or is not added.
   */
  apply(config: GatewayConfig): void {
    if (this.closed) return;
    this.config = config;
    this.entries = upstreamEntries(config);
    const next = new Map(this.entries.map((e) => [e.name, e]));
    for (const [name, route] of [...this.active]) {
      const entry = next.get(name);
      if (!entry) this.retire(route);
      else if (!sameConnection(route.entry, entry)) this.tryAdd(entry, route);
    }
    for (const [name, entry] of next) if (!this.active.has(name)) this.tryAdd(entry, undefined);
  }

  /** Whether the config in force still has `entry` as it is. */
  private wants(entry: UpstreamEntry): boolean {
    return this.entries.some((e) => e.name === entry.name && sameConnection(e, entry));
  }

  private tryAdd(entry: UpstreamEntry, replacing: UpstreamRoute | undefined): void {
    try {
      this.add(entry);
    } catch (err) {
      this.parts.log.error(replacing ? "upstream change not applied: its old settings stay" : "upstream not added", {
        upstream: entry.name,
        cause: (err as Error).message,
      });
    }
  }

  /**
   * Builds and serves `entry`; the route that served its name before is let go once the new one serves.
   * Throws (synchronously) when the route cannot be built; a stdio host that cannot start is logged.
   */
  private add(entry: UpstreamEntry): void {
    const { command } = entry.upstream;
    if (command === undefined || !entry.own) {
      this.serve(entry, entry.own ? undefined : this.parts.defaultStdio);
      return;
    }
    const { log, now } = this.parts;
    const started = StdioHost.start(
      { ...entry.upstream, command },
      { log, now, name: entry.name, callerShare: callerShare(entry.upstream, this.config) },
    ).then(
      async (host) => {
        // A later reload may have removed or changed it while its host started.
        if (this.closed || !this.wants(entry)) return host.close();
        try {
          this.hosts.set(this.serve(entry, host), host);
        } catch (err) {
          log.error("upstream not served", { upstream: entry.name, cause: (err as Error).message });
          await host.close();
        }
      },
      (err: unknown) =>
        log.error("stdio upstream could not start", { upstream: entry.name, cause: (err as Error).message }),
    );
    this.starting.add(started);
    void started.finally(() => this.starting.delete(started));
  }

  private serve(entry: UpstreamEntry, stdio: StdioHost | undefined): UpstreamRoute {
    const { config, parts } = this;
    if (stdio) stdio.held = parts.sessions;
    const route = buildUpstreamRoute(config, entry, {
      engine: parts.engine,
      replicaId: parts.replicaId,
      requestStateKey: parts.requestStateKey,
      stdio,
      observer: parts.observer?.(entry.name),
      credentialObserver: parts.credentialObserver,
      consent: parts.consent,
      log: parts.log,
      now: parts.now,
    });
    parts.table.serve({
      path: entry.path,
      upstream: route.upstream,
      era: route.era,
      bridge: route.bridge,
      listens: route.listens,
      modernTasks: route.modernTasks,
      live: policyOf(parts.live, entry),
      controlTimeoutMs: entry.upstream.controlTimeoutMs,
      retryTimeoutMs: entry.upstream.headersTimeoutMs,
      modernOnly: entry.upstream.era === "modern",
      credentials: route.credentials,
    });
    // Whatever served this name before (the old settings, or a replacement a later reload overtook) is let go.
    const previous = this.active.get(entry.name);
    this.active.set(entry.name, route);
    if (previous) {
      this.letGo(previous, undefined);
      this.parts.log.info("upstream changed: new calls go to the new settings", { upstream: entry.name });
    }
    return route;
  }

  private retire(route: UpstreamRoute): void {
    const { name, path } = route.entry;
    this.active.delete(name);
    this.parts.table.retire(path);
    this.letGo(route, this.config.tasks.drainMs);
    // Its tasks stay readable at its path until the longest TTL has passed, unless the name comes back.
    const forget = setTimeout(() => {
      if (!this.active.has(name)) this.parts.table.drop(path);
    }, this.config.tasks.maxTtlMs);
    forget.unref();
    this.parts.log.info("upstream removed: its running tasks finish, then its connections close", { upstream: name });
  }

  /** Closes `route` once the tasks it runs now have ended; after `drainMs`, ends them failed first. */
  private letGo(route: UpstreamRoute, drainMs: number | undefined): void {
    const { engine } = this.parts;
    if ([...this.leaving].some((l) => l.route === route)) return;
    const leaving: Leaving = { route, tasks: new Set(engine.runningFor(route.entry.name)), timers: [] };
    this.leaving.add(leaving);
    // No new session reaches it: its warm processes would wait for nothing (its sessions go on until it closes).
    void this.hosts.get(route)?.stopWarming();
    const settle = () => {
      const running = new Set(engine.runningFor(route.entry.name));
      for (const id of leaving.tasks) if (!running.has(id)) leaving.tasks.delete(id);
      if (leaving.tasks.size === 0) void this.closeLeaving(leaving);
    };
    const check = setInterval(settle, SETTLE_CHECK_MS);
    check.unref();
    leaving.timers.push(check);
    const deadline = setTimeout(() => {
      for (const id of leaving.tasks) void engine.abandon(id, `upstream ${route.entry.name} was removed`);
      settle();
    }, drainMs ?? this.config.tasks.maxTtlMs);
    deadline.unref();
    leaving.timers.push(deadline);
    settle();
  }

  private async closeLeaving(leaving: Leaving): Promise<void> {
    if (!this.leaving.delete(leaving)) return;
    for (const t of leaving.timers) clearTimeout(t);
    await this.closeRoute(leaving.route);
  }

  private async closeRoute(route: UpstreamRoute): Promise<void> {
    route.endExchanges();
    await route.close();
    const host = this.hosts.get(route);
    this.hosts.delete(route);
    await host?.close();
  }

  /** Shutdown, once running tasks are handed on or ended: parked MRTR exchanges and listens end. */
  endExchanges(): void {
    for (const route of this.all()) route.endExchanges();
  }

  /** Shutdown, after the engine closed: every route's sessions and connections, then the hosts this set started. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.starting);
    for (const leaving of this.leaving) for (const t of leaving.timers) clearTimeout(t);
    const routes = this.all();
    this.leaving.clear();
    this.active.clear();
    await Promise.all(routes.map((r) => r.close()));
    await Promise.all([...this.hosts.values()].map((h) => h.close()));
    this.hosts.clear();
  }
}
