// The task store setting (`tasks.store`): "memory", or a redis:// / rediss:// URL,
// and the connection to that Redis. Passwords never appear in what this module
// says: `display` and every error message show `***` in their place.
import { isIP } from "node:net";
import { Redis } from "ioredis";

export interface RedisStoreSpec {
  kind: "redis";
  /** The URL as given (credentials included): pass it only to connectRedis, never to a log. */
  url: string;
  /** The database number from the URL's path (0 when there is none). */
  db: number;
  /** rediss:// */
  tls: boolean;
  /** The URL with any password replaced by `***`: for logs and errors. */
  display: string;
}

export type StoreSpec = { kind: "memory" } | RedisStoreSpec;

const DEFAULT_PORT = 6379;
const USAGE = "expected memory, redis://[user:pass@]host[:port][/db] or rediss://[user:pass@]host[:port][/db]";

/**
 * A store setting as text that is safe to show: whatever sits between `//` and the
 * last `@` (the userinfo) becomes `***`, so even a malformed URL does not leak it.
 */
function redactText(value: string): string {
  const at = value.lastIndexOf("@");
  if (at < 0) return value;
  const slashes = value.indexOf("//");
  const start = slashes >= 0 && slashes < at ? slashes + 2 : 0;
  return `${value.slice(0, start)}***${value.slice(at)}`;
}

function parseRedisUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`task store ${JSON.stringify(redactText(value))} is not a valid URL (${USAGE})`);
  }
  return url;
}

/** Parses `tasks.store`. Throws an Error that names the problem (and never the password). */
export function parseStoreSpec(value: string): StoreSpec {
  const text = value.trim();
  if (text === "memory") return { kind: "memory" };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(text)?.[1]?.toLowerCase();
  if (scheme !== "redis" && scheme !== "rediss") {
    const what = scheme === undefined ? JSON.stringify(redactText(text)) : `scheme "${scheme}:"`;
    throw new Error(`task store: unsupported ${what}; ${USAGE}`);
  }
  const url = parseRedisUrl(text);
  const shown = (): string => JSON.stringify(redactText(text));
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text))
    throw new Error(`task store ${shown()}: expected ${scheme}://host (${USAGE})`);
  if (url.hostname === "") throw new Error(`task store ${shown()} has no host (${USAGE})`);
  if (url.search !== "" || url.hash !== "")
    throw new Error(`task store ${shown()}: query parameters and fragments are not supported (${USAGE})`);
  if (url.port === "0") throw new Error(`task store ${shown()}: port 0 is not a port to connect to`);
  const path = url.pathname;
  let db = 0;
  if (path !== "" && path !== "/") {
    const match = /^\/(\d{1,9})\/?$/.exec(path);
    if (!match?.[1])
      throw new Error(`task store ${shown()}: the path must be a database number, like /0 or /2 (${USAGE})`);
    db = Number(match[1]);
  }
  for (const part of [url.username, url.password]) {
    try {
      decodeURIComponent(part);
    } catch {
      throw new Error(`task store ${shown()}: the user or password has a malformed %-escape`);
    }
  }
  const user = url.username;
  const userinfo = url.password !== "" ? `${user}:***@` : user !== "" ? `${user}@` : "";
  const display = `${scheme}://${userinfo}${url.host}${path !== "" && path !== "/" ? `/${db}` : ""}`;
  return { kind: "redis", url: text, db, tls: scheme === "rediss", display };
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
  /**
   * Connection errors after the start (each failed reconnection attempt, a dropped
   * connection), the password scrubbed from the message. Default: ignored (the
   * commands that fail meanwhile reject, which is where it shows). A listener stays
   * attached either way, so ioredis never prints "Unhandled error event".
   */
  onError?: (error: Error) => void;
}

/**
 * Connects to the Redis of `spec`. Resolves once it is ready; rejects within
 * `connectTimeoutMs` otherwise (retrying meanwhile: a Redis that starts a moment
 * later is fine), with an error naming `spec.display` and the last failure.
 *
 * Once started, the client reconnects forever on its own, with capped exponential
 * back-off. While it is down, commands fail at once instead of waiting
 * (enableOfflineQueue: false), and commands in flight when the connection drops
 * fail rather than being sent again on the next connection
 * (maxRetriesPerRequest: 0): the store's scripts are not idempotent, so the
 * store, not the client, decides what happens to a write whose fate is unknown.
 *
 * The caller owns the client (quit() it, or hand it to a store with ownsClient).
 */
export async function connectRedis(spec: RedisStoreSpec, opts: ConnectRedisOptions = {}): Promise<Redis> {
  const url = parseRedisUrl(spec.url);
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5_000;
  const maxDelayMs = opts.maxReconnectDelayMs ?? 2_000;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  const scrub = (message: string): string => (password === "" ? message : message.split(password).join("***"));

  let started = false;
  const deadline = Date.now() + connectTimeoutMs;
  const client = new Redis({
    host,
    port: url.port === "" ? DEFAULT_PORT : Number(url.port),
    ...(username !== "" && { username }),
    ...(password !== "" && { password }),
    db: spec.db,
    ...(spec.tls && { tls: isIP(host) === 0 ? { servername: host } : {} }),
    ...(opts.connectionName !== undefined && { connectionName: opts.connectionName }),
    lazyConnect: true,
    connectTimeout: Math.max(1, Math.min(connectTimeoutMs, 10_000)),
    commandTimeout: opts.commandTimeoutMs ?? 10_000,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt: number) => {
      const backoff = Math.min(50 * 2 ** Math.min(attempt - 1, 16), started ? maxDelayMs : 500);
      const delay = backoff + Math.floor(Math.random() * Math.min(100, backoff));
      // Before the first success, give up at the deadline; after it, never.
      if (!started && Date.now() + delay >= deadline) return null;
      return delay;
    },
  });

  let lastError: Error | undefined;
  client.on("error", (err: Error) => {
    if (!started) {
      lastError = err;
      return;
    }
    if (!opts.onError) return;
    const safe = new Error(scrub(err.message));
    safe.name = err.name;
    opts.onError(safe);
  });
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
      client.connect().catch(() => undefined);
    });
  } catch (err) {
    client.disconnect();
    throw err;
  }
  started = true;
  return client;
}

/** Closes a client politely (QUIT), or at once when Redis cannot be reached to hear it. */
export async function closeRedis(client: Redis): Promise<void> {
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
