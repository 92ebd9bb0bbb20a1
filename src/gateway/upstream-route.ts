// Everything that is per upstream: its client (HTTP, or the stdio host's internal listener), the era probe,
// the legacy session pool, the era bridge over a legacy upstream, its listens, and the task front before a
// modern one. Built on the shared task engine; one route per upstream (gateway/upstream-set.ts keeps them),
// so one upstream's connections, sessions, probes and processes never hold up another's.
import type { UpstreamEntry } from "../config/upstream-set.js";
import type { GatewayConfig } from "../config/schema.js";
import { LegacyBridge } from "../bridge-to-legacy/bridge.js";
import { LegacySessionPool } from "../bridge-to-legacy/legacy-sessions.js";
import { LegacyListens } from "../bridge-to-legacy/listen.js";
import { withFields, type Logger } from "../log/logger.js";
import { ModernTaskFront } from "../modern-upstream/task-front.js";
import type { StdioHost } from "../stdio/host.js";
import { StdioUpstreamClient } from "../stdio/upstream-client.js";
import type { TaskEngine } from "../tasks/engine.js";
import { UpstreamClient, type UpstreamObserver } from "../upstream/client.js";
import { UpstreamEra } from "../upstream/era-probe.js";
import { packageInfo } from "../version.js";
import { buildCredentialSource, type ObservedCredentialSource } from "../credentials/build.js";
import type { CredentialObserver } from "../credentials/source.js";
import type { ConsentService } from "../credentials/consent/flow.js";

export interface UpstreamRoute {
  readonly entry: UpstreamEntry;
  readonly upstream: UpstreamClient;
  readonly era: UpstreamEra;
  readonly pool: LegacySessionPool;
  readonly bridge: LegacyBridge;
  readonly listens: LegacyListens;
  readonly modernTasks: ModernTaskFront;
  /** A stdio upstream's child processes alive now; undefined for an HTTP upstream. */
  readonly processes: (() => number) | undefined;
  /** Of those, the warm ones waiting for a session (upstream.warmProcesses); undefined for an HTTP upstream. */
  readonly warmProcesses: (() => number) | undefined;
  /** Of those, the ones whose session has nothing in flight (ended after processIdleMs); undefined for HTTP. */
  readonly idleProcesses: (() => number) | undefined;
  /** New sessions a stdio upstream refused, by why; undefined for an HTTP upstream. */
  readonly processRefusals: (() => { callerShare: number; maxProcesses: number }) | undefined;
  /** upstreams.<name>.oauth: this upstream's credentials per caller; undefined without an oauth block. */
  readonly credentials: ObservedCredentialSource | undefined;
  /** Shutdown, once running tasks are handed on or ended: parked MRTR exchanges and listens end. */
  endExchanges(): void;
  /**
   * Shutdown, after the engine closed (its last cancels go out on pooled sessions): the pool's sessions, then
   * the upstream's connections. A stdio host is its owner's to close, after this.
   */
  close(): Promise<void>;
}

export interface UpstreamRouteParts {
  engine: TaskEngine;
  /** This replica's id (MRTR requestState names it) and the requestState signing key (undefined: a random one). */
  replicaId: string;
  requestStateKey: Buffer | undefined;
  /** The stdio host serving this upstream's command; undefined for an HTTP upstream. */
  stdio: StdioHost | undefined;
  /** Times every request to this upstream (metrics on); undefined with metrics off. */
  observer: UpstreamObserver | undefined;
  /** Counts the tokens its credential source obtains (metrics on); undefined with metrics off. */
  credentialObserver: CredentialObserver | undefined;
  /** The consent flow of userConsent upstreams (gateway/consent.ts); undefined without auth.vault. */
  consent: ConsentService | undefined;
  log: Logger;
  now: () => number;
}

export function buildUpstreamRoute(
  config: GatewayConfig,
  entry: UpstreamEntry,
  parts: UpstreamRouteParts,
): UpstreamRoute {
  const { engine, stdio, log: gatewayLog, now } = parts;
  const { eraBridge } = config;
  const keepAliveMs = config.server.sseKeepAliveMs;
  const gatewayInfo = packageInfo();
  const block = entry.upstream;
  // Every line this upstream's parts log names it.
  const log = entry.own ? withFields(gatewayLog, { upstream: entry.name }) : gatewayLog;
  const upstream = stdio ? new StdioUpstreamClient(block, stdio, entry.name) : new UpstreamClient(block, entry.name);
  upstream.observer = parts.observer;
  const era = new UpstreamEra(upstream, block.era, gatewayInfo);
  const pool = new LegacySessionPool(upstream, {
    idleMs: eraBridge.sessionIdleMs,
    maxSessions: eraBridge.maxSessions,
    gatewayInfo,
    openTimeoutMs: eraBridge.sessionOpenTimeoutMs,
    controlTimeoutMs: block.controlTimeoutMs,
    now,
    log,
  });
  const bridge = new LegacyBridge({
    engine,
    upstream,
    pool,
    hints: { ttlMs: eraBridge.cacheTtlMs, cacheScope: eraBridge.cacheScope },
    exchanges: {
      max: eraBridge.maxPendingInputs,
      maxPerCaller: eraBridge.maxPendingInputsPerCaller,
      ttlMs: eraBridge.inputRequestTtlMs,
    },
    keepAliveMs,
    now,
    log,
    replicaId: parts.replicaId,
    requestStateKey: parts.requestStateKey,
    gather: { windowMs: eraBridge.inputGatherMs, max: eraBridge.maxInputRequestsPerRound },
    toolSchemas: { ttlMs: eraBridge.toolSchemaTtlMs, maxBytes: eraBridge.toolSchemaCacheBytes },
    controlTimeoutMs: block.controlTimeoutMs,
  });
  const listens = new LegacyListens(upstream, pool, keepAliveMs, log, engine, gatewayInfo);
  const modernTasks = new ModernTaskFront({ upstream, engine, keepAliveMs, log });
  const credentials =
    block.oauth && block.url !== undefined
      ? buildCredentialSource(entry.name, block.url, block.oauth, {
          now,
          observer: parts.credentialObserver,
          consent:
            parts.consent &&
            ((name, oauth, resource, url) =>
              (parts.consent as ConsentService).source(name, oauth, resource, url, parts.credentialObserver)),
        })
      : undefined;
  return {
    credentials,
    entry,
    upstream,
    era,
    pool,
    bridge,
    listens,
    modernTasks,
    processes: stdio && (() => stdio.processes),
    warmProcesses: stdio && (() => stdio.warmProcesses),
    idleProcesses: stdio && (() => stdio.idleProcesses),
    processRefusals: stdio && (() => stdio.refused),
    endExchanges() {
      bridge.close();
      listens.close();
    },
    async close() {
      await pool.close();
      await upstream.close();
      await credentials?.close();
    },
  };
}
