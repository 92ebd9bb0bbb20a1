// Task state shared by replicas, from a Redis `tasks.store` (single node, Sentinel or Cluster): the store, the
// leases, push, and the MRTR signing key every replica agrees on. Failing to
// reach Redis at start is a StoreStartError (the CLI exits 2 and names the URL,
// never its password); once started, the connections reconnect by themselves.
import { createHash } from "node:crypto";
import type { GatewayConfig } from "./config/schema.js";
import type { Logger } from "./log/logger.js";
import { connectRedis } from "./store/redis-connect.js";
import { parseStoreSpec } from "./store/store-url.js";
import { RedisTaskStore } from "./store/redis-store.js";
import { RedisLeases } from "./store/redis-leases.js";
import { RedisTaskEvents } from "./store/redis-events.js";
import type { TaskStore } from "./store/task-store.js";
import type { TaskLeases } from "./store/task-leases.js";
import type { TaskEvents } from "./store/task-events.js";
import type { LatencyShare } from "./store/latency-share.js";
import { RedisLatencyShare } from "./store/redis-latency.js";
import type { RateStore } from "./ratelimit/store.js";
import { RedisRateStore } from "./ratelimit/redis-store.js";
import { RedisSessionOwners } from "./store/redis-session-owners.js";
import type { SessionOwners } from "./store/session-owners.js";
import type { GrantBackend } from "./credentials/consent/grant-store.js";
import { RedisGrantBackend } from "./credentials/consent/redis-grants.js";
import type { PinStore } from "./store/pins.js";
import { RedisPinStore } from "./store/redis-pins.js";

/** Task state shared between replicas (startGateway builds it from a redis:// `tasks.store`). */
export interface SharedTasks {
  store: TaskStore;
  leases: TaskLeases;
  events: TaskEvents;
  /** The MRTR requestState signing key every replica agrees on. */
  requestStateKey: Buffer;
  /** Where replicas share adaptive promotion's latency history (absent: each keeps its own). */
  latency?: LatencyShare | undefined;
  /** Where replicas share rate-limit budgets (limits.rules; absent: each process keeps its own). */
  rateLimits?: RateStore | undefined;
  /** Which replica holds each gateway-held session (absent: this process holds every session it knows). */
  sessions?: SessionOwners | undefined;
  /** Where replicas share user grants, consent nonces and client registrations (userConsent; absent: each keeps its own). */
  grants?: GrantBackend | undefined;
  /** Where replicas share pinned tool definitions (docs/pinning.md; absent: each process keeps its own). */
  pins?: PinStore | undefined;
  /** Whether the store answers (for /readyz). */
  ping(): Promise<void>;
  /** The replica leaves (its registration goes); called on shutdown before the store closes. */
  leave?(): Promise<void>;
}

/** An operator's secret, stretched to the 32-byte key the signers want; undefined when none is configured. */
export function secretKey(secret: string | undefined): Buffer | undefined {
  return secret === undefined ? undefined : createHash("sha256").update(secret).digest();
}

/** Most tools whose latency history Redis keeps (per upstream); each replica keeps 1,000 (+ probation) itself. */
const LATENCY_TOOLS_SHARED = 2_000;

export class StoreStartError extends Error {
  override readonly name = "StoreStartError";
}

export interface OpenSharedTasks extends SharedTasks {
  readonly leases: RedisLeases;
}

export async function openSharedTasks(config: GatewayConfig, log: Logger, now: () => number): Promise<OpenSharedTasks> {
  let spec;
  try {
    spec = parseStoreSpec(config.tasks.store);
  } catch (err) {
    throw new StoreStartError((err as Error).message);
  }
  if (spec.kind !== "redis") throw new StoreStartError(`tasks.store ${config.tasks.store} is not a shared store`);
  const display = spec.display;
  const onError = (err: Error): void => log.warn("task store connection error", { store: display, cause: err.message });
  let client;
  let subscriber;
  try {
    const tls = config.tasks.redisTls;
    client = await connectRedis(spec, { connectionName: "mcp-task-gateway", onError, tls });
    subscriber = await connectRedis(spec, { connectionName: "mcp-task-gateway-push", onError, tls, subscriber: true });
    const prefix = config.tasks.storePrefix;
    const leases = new RedisLeases({ client, prefix, leaseMs: config.tasks.leaseMs, now });
    const report = (err: unknown): void => log.warn("task store bookkeeping failed", { cause: (err as Error).message });
    const store = new RedisTaskStore({
      client,
      prefix,
      maxBytes: config.tasks.storeBytes,
      maxBytesPerCaller: config.tasks.maxBytesPerCaller,
      now,
      ownsClient: true,
      lease: { replicaId: leases.replicaId, leaseMs: config.tasks.leaseMs },
      onError: report,
      wait: { replicas: config.tasks.redisWaitReplicas, timeoutMs: config.tasks.redisWaitTimeoutMs },
    });
    const events = new RedisTaskEvents(client, subscriber, prefix, report);
    const secret = config.eraBridge.requestStateSecret;
    const requestStateKey = secretKey(secret) ?? (await leases.sharedSecret("request-state"));
    // The latency history rides on the store's connection: one EVALSHA per replica per sync interval.
    const latency = new RedisLatencyShare({
      client,
      prefix,
      // The single upstream's history keeps its key of before; with named upstreams, the tools' keys name them.
      upstream: config.upstream
        ? (config.upstream.url ?? `stdio:${JSON.stringify(config.upstream.command)}`)
        : "upstreams",
      maxTools: LATENCY_TOOLS_SHARED,
      now,
    });
    // Rate-limit budgets too: one script per limited request, on the store's connection.
    const rateLimits = new RedisRateStore(client, prefix);
    const sessions = new RedisSessionOwners({
      client,
      prefix,
      leaseMs: config.tasks.leaseMs,
      replicaId: leases.replicaId,
      maxPerCaller: config.server.maxSessionsPerCaller,
      now,
      log,
    });
    // User grants (userConsent) too: single-key commands on the store's connection.
    const grants = new RedisGrantBackend(client, prefix);
    // Pinned definitions too: read when their version moved, written when a definition changes.
    const pins = new RedisPinStore(client, prefix);
    return {
      store,
      leases,
      events,
      requestStateKey,
      latency,
      rateLimits,
      sessions,
      grants,
      pins,
      ping: () => store.ping(),
    };
  } catch (err) {
    // Nothing half-open is left behind; the CLI exits 2 naming the store (never its password).
    client?.disconnect();
    subscriber?.disconnect();
    throw err instanceof StoreStartError
      ? err
      : new StoreStartError(`the task store ${display} could not be set up: ${(err as Error).message}`);
  }
}
