// The one factory of the store's ioredis clients: a single node (`Redis`), a
// Sentinel-managed primary (`Redis` with sentinels) or a Redis Cluster
// (`Cluster`), for the command connection and the push subscriber alike, with the
// same timeouts, reconnection and TLS for all three. The password is scrubbed from
// every error it reports.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { NewestSentinelConnector } from "./sentinel-newest.js";
import { redisEndpoints, type RedisStoreSpec } from "./store-url.js";

/** A client of any of the three forms; the store's code runs the same on each. */
export type RedisClient = Redis | Cluster;

/** tasks.redisTls: each of ca, cert and key is PEM text or the path of a PEM file. */
interface RedisTlsSettings {
  ca?: string | undefined;
  cert?: string | undefined;
  key?: string | undefined;
  /** The name the server's certificate must carry (SNI); default the host connected to (not for an IP). */
  servername?: string | undefined;
}

export interface ConnectRedisOptions {
  /** How long the first connection may take, retries included (ms). Default 5 000. */
  connectTimeoutMs?: number;
  /** Ceiling of the delay between reconnection attempts once started (ms). Default 2 000. */
  maxReconnectDelayMs?: number;
  /**
   * A command that gets no reply within this time fails (ms), so a Redis that hangs
   * (rather than closing the connection) cannot stall the gateway. Default 10 000.
   */
  commandTimeoutMs?: number;
  /** CLIENT SETNAME, to spot the gateway's connections in CLIENT LIST. */
  connectionName?: string;
  /** TLS settings (tasks.redisTls); their presence turns TLS on for any form of URL. */
  tls?: RedisTlsSettings | undefined;
  /**
   * The push subscriber: on a cluster it subscribes with SSUBSCRIBE (sharded
   * pub/sub), through one connection per master that ioredis keeps on the slots.
   * On a single node or Sentinel the client does not resubscribe by itself after a
   * reconnection: its owner does, on "ready" (see RedisTaskEvents).
   */
  subscriber?: boolean;
  /**
   * Connection errors after the start (each failed reconnection attempt, a dropped
   * connection), the password scrubbed from the message. Default: ignored (the
   * commands that fail meanwhile reject, which is where it shows). A listener stays
   * attached either way, so ioredis never prints "Unhandled error event".
   */
  onError?: (error: Error) => void;
}

/** PEM text as given, or the contents of the file it names. */
function pem(what: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.includes("-----BEGIN")) return value;
  try {
    return readFileSync(value, "utf8");
  } catch (err) {
    throw new Error(`tasks.redisTls.${what}: cannot read ${value}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
}

/** Node's TLS options for one host, or undefined when TLS is off. */
function tlsFor(spec: RedisStoreSpec, settings: RedisTlsSettings | undefined, host: string) {
  if (!spec.tls && settings === undefined) return undefined;
  const ca = pem("ca", settings?.ca);
  const cert = pem("cert", settings?.cert);
  const key = pem("key", settings?.key);
  const servername = settings?.servername ?? (isIP(host) === 0 ? host : undefined);
  const options: ConnectionOptions = {
    ...(ca !== undefined && { ca }),
    ...(cert !== undefined && { cert }),
    ...(key !== undefined && { key }),
    ...(servername !== undefined && { servername }),
  };
  return options;
}

/**
 * Connects to the Redis of `spec`. Resolves once it is ready; rejects within
 * `connectTimeoutMs` otherwise (retrying meanwhile: a Redis that starts a moment
 * later is fine), with an error naming `spec.display` and the last failure.
 *
 * Once started, the client reconnects forever on its own, with capped exponential
 * back-off: a single node to the same address, a Sentinel client to the primary
 * the Sentinel with the newest configuration names (it also listens for their
 * +switch-master), a cluster
 * client to the masters its refreshed slot map names (MOVED/ASK followed). While it
 * is down, commands fail at once instead of waiting (enableOfflineQueue: false),
 * and commands in flight when the connection drops fail rather than being sent
 * again on the next connection (maxRetriesPerRequest: 0): the store's scripts are
 * not idempotent, so the store, not the client, decides what happens to a write
 * whose fate is unknown. (A cluster client re-sends a command refused with MOVED,
 * ASK, TRYAGAIN or CLUSTERDOWN: none of those ran.)
 *
 * The caller owns the client (quit() it, or hand it to a store with ownsClient).
 */
export async function connectRedis(spec: RedisStoreSpec, opts: ConnectRedisOptions = {}): Promise<RedisClient> {
  const endpoints = redisEndpoints(spec);
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5_000;
  const maxDelayMs = opts.maxReconnectDelayMs ?? 2_000;
  const { username, password } = endpoints;
  const scrub = (message: string): string => (password === "" ? message : message.split(password).join("***"));
  const first = endpoints.nodes[0] ?? { host: "127.0.0.1", port: 6379 };

  let started = false;
  const deadline = Date.now() + connectTimeoutMs;
  const retryStrategy = (attempt: number): number | null => {
    const backoff = Math.min(50 * 2 ** Math.min(attempt - 1, 16), started ? maxDelayMs : 500);
    const delay = backoff + Math.floor(Math.random() * Math.min(100, backoff));
    // Before the first success, give up at the deadline; after it, never.
    if (!started && Date.now() + delay >= deadline) return null;
    return delay;
  };
  const tls = tlsFor(spec, opts.tls, first.host);
  const common: RedisOptions = {
    ...(username !== "" && { username }),
    ...(password !== "" && { password }),
    ...(tls !== undefined && { tls }),
    ...(opts.connectionName !== undefined && { connectionName: opts.connectionName }),
    connectTimeout: Math.max(1, Math.min(connectTimeoutMs, 10_000)),
    commandTimeout: opts.commandTimeoutMs ?? 10_000,
    maxRetriesPerRequest: 0,
  };

  let client: RedisClient;
  if (spec.mode === "cluster") {
    client = new Cluster(endpoints.nodes, {
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: retryStrategy,
      // A node that closed its connection is looked up again through the slot map (failover, resharding).
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: 2_000,
      shardedSubscribers: opts.subscriber === true,
      // TLS certificates name the cluster's hosts, not their addresses: keep the names (ElastiCache, Memorystore).
      ...(tls !== undefined && { dnsLookup: (address, callback) => callback(null, address) }),
      redisOptions: common,
    });
  } else {
    client = new Redis({
      ...common,
      ...(spec.mode === "sentinel"
        ? {
            sentinels: endpoints.nodes,
            name: endpoints.masterName ?? "mymaster",
            role: "master" as const,
            // Follows the Sentinel with the newest configuration, not the first to answer (sentinel-newest.ts).
            Connector: NewestSentinelConnector,
            // The Sentinels announce a failover (+switch-master): reconnect at once, not on the next failed command.
            failoverDetector: true,
            sentinelRetryStrategy: retryStrategy,
            ...(tls !== undefined && { enableTLSForSentinelMode: true, sentinelTLS: tls }),
          }
        : { host: first.host, port: first.port }),
      db: endpoints.db,
      lazyConnect: true,
      enableOfflineQueue: false,
      // ioredis resubscribes on reconnection with a SUBSCRIBE whose failure nobody
      // catches: with the offline queue off, a connection that drops again at that
      // moment rejects it, and an unhandled rejection ends a Node process. The
      // subscriber's owner resubscribes instead, and handles the failure.
      ...(opts.subscriber === true && { autoResubscribe: false }),
      retryStrategy,
    });
  }

  let lastError: Error | undefined;
  const onError = (err: Error): void => {
    if (!started) {
      lastError = err;
      return;
    }
    if (!opts.onError) return;
    const safe = new Error(scrub(err.message));
    safe.name = err.name;
    opts.onError(safe);
  };
  client.on("error", onError);
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (): void => {
        clearTimeout(timer);
        client.off("ready", ready);
        client.off("end", fail);
        const cause = lastError ? scrub(lastError.message) : "no answer";
        reject(
          new Error(
            `cannot connect to the task store Redis at ${spec.display} within ${connectTimeoutMs} ms: ${cause}`,
          ),
        );
      };
      const ready = (): void => {
        clearTimeout(timer);
        client.off("end", fail);
        resolve();
      };
      const timer = setTimeout(fail, connectTimeoutMs);
      client.once("ready", ready);
      // "end": the retry strategy gave up before the deadline.
      client.once("end", fail);
      // A failed first attempt rejects here; the retry strategy carries on, and "ready" or "end"/the timer decide.
      client.connect().catch((err: unknown) => {
        if (err instanceof Error) lastError = err;
      });
    });
  } catch (err) {
    client.disconnect();
    throw err;
  }
  started = true;
  return client;
}

/**
 * Closes a client politely (QUIT), or at once when Redis cannot be reached to hear it. disconnect() follows
 * either way: a Sentinel client's connections to the Sentinels (its failover detector) close only then, and
 * would otherwise keep reconnecting, and the process alive.
 */
export async function closeRedis(client: RedisClient): Promise<void> {
  try {
    await client.quit();
  } catch {
    // Unreachable: disconnect() below closes it at once.
  } finally {
    client.disconnect();
  }
}
