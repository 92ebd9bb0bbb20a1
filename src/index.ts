// Public API. `createGateway` builds the web-standard handler (usable with any
// runtime's server); `startGateway` also listens with @hono/node-server, which
// enables the zero-copy Node streaming path, and owns graceful shutdown.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";
import { parseConfig } from "./config/validate.js";
import type { GatewayConfig, GatewayConfigInput } from "./config/schema.js";
import { createApp } from "./http/app.js";
import { InFlight } from "./http/inflight.js";
import { createLogger, type Logger } from "./log/logger.js";
import { UpstreamClient } from "./upstream/client.js";
import { UpstreamEra } from "./upstream/era-probe.js";
import { LegacySessionPool } from "./upstream/legacy-sessions.js";
import { LegacyBridge } from "./bridge/legacy-bridge.js";
import { ModernTaskBridge } from "./bridge/modern-tasks.js";
import { packageInfo } from "./version.js";
import { MemoryTaskStore } from "./store/memory-store.js";
import { TaskEngine } from "./tasks/engine.js";
import { TaskPolicy } from "./policy/policy.js";

export { parseConfig, ConfigError } from "./config/validate.js";
export { gatewayConfigSchema, DEFAULT_PORT } from "./config/schema.js";
export type { GatewayConfig, GatewayConfigInput, LogLevel } from "./config/schema.js";
export type { Logger } from "./log/logger.js";

export interface GatewayOptions {
  logger?: Logger;
  /** Injected clock (ms since epoch) so time-based logic is testable without sleeping. */
  now?: () => number;
}

export interface GatewayStats {
  /** Tasks in the store, the bytes they account for, and the unfinished ones (with an upstream call running). */
  tasks: { stored: number; bytes: number; unfinished: number };
  /** Legacy upstream sessions open on behalf of modern clients. */
  upstreamSessions: number;
  /** MRTR exchanges waiting for a client's retry. */
  pendingInputs: number;
}

export interface Gateway {
  readonly config: GatewayConfig;
  readonly app: Hono;
  /** Web-standard entry point: Request in, Response out. */
  fetch(request: Request): Promise<Response>;
  /** Number of proxied exchanges in progress. */
  inFlight(): number;
  /** Gauges for operators and tests: what the gateway holds right now. */
  stats(): GatewayStats;
  /**
   * Ends long-lived event streams, waits up to `graceMs` for calls in progress,
   * cuts the rest, then closes upstream connections.
   */
  shutdown(graceMs?: number): Promise<{ drained: boolean }>;
}

export interface RunningGateway extends Gateway {
  /** The MCP endpoint URL with the real bound port, e.g. http://127.0.0.1:8642/mcp. */
  readonly url: string;
  /** Scheme, host and port; /healthz and /readyz live here. */
  readonly origin: string;
  readonly server: Server;
  /** Stops accepting connections, then shuts down gracefully. */
  close(graceMs?: number): Promise<{ drained: boolean }>;
}

export function createGateway(input: GatewayConfigInput | GatewayConfig, options: GatewayOptions = {}): Gateway {
  const config = parseConfig(input);
  const log = options.logger ?? createLogger(config.log.level);
  const now = options.now ?? Date.now;
  const upstream = new UpstreamClient(config.upstream);
  const inflight = new InFlight();
  const gatewayInfo = packageInfo();
  const era = new UpstreamEra(upstream, config.upstream.era, gatewayInfo);
  const pool = new LegacySessionPool(upstream, {
    idleMs: config.modern.sessionIdleMs,
    maxSessions: config.modern.maxSessions,
    gatewayInfo,
    now,
    log,
  });
  const store = new MemoryTaskStore(config.tasks.storeBytes, now);
  const engine = new TaskEngine(
    store,
    { maxTasks: config.tasks.maxTasks, maxTasksPerCaller: config.tasks.maxTasksPerCaller, maxResultBytes: config.tasks.maxResultBytes },
    now,
    log,
  );
  const policy = new TaskPolicy(config.tasks.rules, {
    thresholdMs: config.tasks.thresholdMs,
    ttlMs: config.tasks.defaultTtlMs,
    maxTtlMs: config.tasks.maxTtlMs,
    pollIntervalMs: config.tasks.pollIntervalMs,
  });
  const bridge = new LegacyBridge({
    tasks: { engine, policy },
    gatewayInfo,
    upstream,
    pool,
    hints: { ttlMs: config.modern.cacheTtlMs, cacheScope: config.modern.cacheScope },
    exchanges: {
      max: config.modern.maxPendingInputs,
      maxPerCaller: config.modern.maxPendingInputsPerCaller,
      ttlMs: config.modern.inputRequestTtlMs,
    },
    keepAliveMs: config.server.sseKeepAliveMs,
    advertiseTasks: () => true,
    now,
    log,
  });
  const modernTasks = new ModernTaskBridge({ upstream, engine, policy, keepAliveMs: config.server.sseKeepAliveMs, log });
  const app = createApp({ config, upstream, inflight, era, bridge, engine, modernTasks, log, now });
  let shuttingDown: Promise<{ drained: boolean }> | undefined;

  return {
    config,
    app,
    fetch: async (request) => app.fetch(request),
    inFlight: () => inflight.size,
    stats: () => ({
      tasks: { stored: store.size, bytes: store.bytes, unfinished: engine.unfinished },
      upstreamSessions: pool.size,
      pendingInputs: bridge.pendingExchanges,
    }),
    shutdown(graceMs = config.server.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        inflight.stopLongLived();
        const drained = await inflight.drained(graceMs);
        if (!drained) inflight.stopAll();
        bridge.close();
        await engine.close();
        await pool.close();
        await upstream.close();
        return { drained };
      })();
      return shuttingDown;
    },
  };
}

function formatHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

export async function startGateway(
  input: GatewayConfigInput | GatewayConfig,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const gateway = createGateway(input, options);
  const { config } = gateway;
  const server = createAdaptorServer({ fetch: gateway.app.fetch }) as Server;

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.server.port, config.server.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await gateway.shutdown(0);
    throw err;
  }
  const address = server.address() as AddressInfo;
  const origin = `http://${formatHost(config.server.host)}:${address.port}`;
  let closing: Promise<{ drained: boolean }> | undefined;

  return {
    ...gateway,
    url: `${origin}${config.server.path}`,
    origin,
    server,
    close(graceMs) {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const result = await gateway.shutdown(graceMs);
        server.closeAllConnections();
        await closed;
        return result;
      })();
      return closing;
    },
  };
}
