// The task store setting (`tasks.store`): "memory", or a Redis URL in one of three
// forms: a single node (redis:// or rediss://), a Sentinel-managed primary
// (redis-sentinel://, Lettuce's form) or a Redis Cluster from seed nodes
// (redis-cluster://). Passwords never appear in what this module says: `display`
// and every error message show `***` in their place. Connecting is redis-connect.ts.

/** Which kind of Redis deployment the URL names. */
type RedisMode = "single" | "sentinel" | "cluster";

export interface RedisStoreSpec {
  kind: "redis";
  mode: RedisMode;
  /** The URL as given (credentials included): pass it only to connectRedis, never to a log. */
  url: string;
  /** The database number from the URL's path (0 when there is none; always 0 on a cluster). */
  db: number;
  /** rediss://, rediss-sentinel://, rediss-cluster:// (tasks.redisTls turns TLS on for any form too). */
  tls: boolean;
  /** The URL with any password replaced by `***`: for logs and errors. */
  display: string;
}

export type StoreSpec = { kind: "memory" } | RedisStoreSpec;

/** What connectRedis needs from a URL: the nodes (seeds or sentinels), the credentials, the db, the master's name. */
export interface RedisEndpoints {
  nodes: Array<{ host: string; port: number }>;
  username: string;
  password: string;
  db: number;
  /** redis-sentinel: the name of the primary the Sentinels watch (`#name`). */
  masterName?: string;
}

const DEFAULT_PORT = 6379;
const SENTINEL_PORT = 26379;
const USAGE =
  "expected memory, redis[s]://[user:pass@]host[:port][/db], " +
  "redis[s]-sentinel://[user:pass@]host:port[,host:port…][/db]#masterName " +
  "or redis[s]-cluster://[user:pass@]host:port[,host:port…]";

const SCHEMES: Record<string, { mode: RedisMode; tls: boolean }> = {
  redis: { mode: "single", tls: false },
  rediss: { mode: "single", tls: true },
  "redis-sentinel": { mode: "sentinel", tls: false },
  "rediss-sentinel": { mode: "sentinel", tls: true },
  "redis-cluster": { mode: "cluster", tls: false },
  "rediss-cluster": { mode: "cluster", tls: true },
};

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

function decodeUserinfo(shown: () => string, user: string, password: string): { username: string; password: string } {
  try {
    return { username: decodeURIComponent(user), password: decodeURIComponent(password) };
  } catch {
    throw new Error(`task store ${shown()}: the user or password has a malformed %-escape`);
  }
}

function databaseOf(shown: () => string, path: string): number {
  if (path === "" || path === "/") return 0;
  const match = /^\/(\d{1,9})\/?$/.exec(path);
  if (!match?.[1])
    throw new Error(`task store ${shown()}: the path must be a database number, like /0 or /2 (${USAGE})`);
  return Number(match[1]);
}

/** The parts of a multi-host URL (sentinel, cluster), which WHATWG URL cannot parse: `scheme://[userinfo@]hosts[/db][#name]`. */
function splitMultiHost(text: string, scheme: string, shown: () => string) {
  let rest = text.slice(scheme.length + 3);
  let fragment: string | undefined;
  const hash = rest.indexOf("#");
  if (hash >= 0) {
    fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  if (rest.includes("?")) throw new Error(`task store ${shown()}: query parameters are not supported (${USAGE})`);
  const at = rest.lastIndexOf("@");
  const userinfo = at >= 0 ? rest.slice(0, at) : "";
  const afterAt = at >= 0 ? rest.slice(at + 1) : rest;
  const slash = afterAt.indexOf("/");
  const hostList = slash >= 0 ? afterAt.slice(0, slash) : afterAt;
  const path = slash >= 0 ? afterAt.slice(slash) : "";
  const colon = userinfo.indexOf(":");
  const user = colon >= 0 ? userinfo.slice(0, colon) : userinfo;
  const password = colon >= 0 ? userinfo.slice(colon + 1) : "";
  return { fragment, user, password, hostList, path, hasPassword: colon >= 0 && password !== "" };
}

function parseHosts(hostList: string, defaultPort: number, shown: () => string): Array<{ host: string; port: number }> {
  if (hostList === "") throw new Error(`task store ${shown()} has no host (${USAGE})`);
  return hostList.split(",").map((entry) => {
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(entry);
    const port = match?.[2] === undefined ? defaultPort : Number(match[2]);
    if (!match?.[1] || port < 1 || port > 65_535)
      throw new Error(`task store ${shown()}: ${JSON.stringify(entry)} is not a host[:port] (${USAGE})`);
    const host = match[1].startsWith("[") ? match[1].slice(1, -1) : match[1];
    return { host, port };
  });
}

function parseMultiHost(text: string, scheme: string, mode: RedisMode): { db: number; display: string } {
  const shown = (): string => JSON.stringify(redactText(text));
  if (!text.slice(scheme.length + 1).startsWith("//"))
    throw new Error(`task store ${shown()}: expected ${scheme}://host (${USAGE})`);
  const parts = splitMultiHost(text, scheme, shown);
  parseHosts(parts.hostList, mode === "sentinel" ? SENTINEL_PORT : DEFAULT_PORT, shown);
  decodeUserinfo(shown, parts.user, parts.password);
  const db = databaseOf(shown, parts.path);
  if (mode === "sentinel" && !parts.fragment)
    throw new Error(`task store ${shown()}: name the primary the Sentinels watch after #, like …:26379#mymaster`);
  if (mode === "cluster" && parts.fragment !== undefined)
    throw new Error(`task store ${shown()}: a cluster URL takes no #fragment (${USAGE})`);
  if (mode === "cluster" && db !== 0) throw new Error(`task store ${shown()}: Redis Cluster has database 0 only`);
  const userinfo = parts.hasPassword ? `${parts.user}:***@` : parts.user !== "" ? `${parts.user}@` : "";
  const display =
    `${scheme}://${userinfo}${parts.hostList}` +
    `${parts.path !== "" && parts.path !== "/" ? `/${db}` : ""}${parts.fragment ? `#${parts.fragment}` : ""}`;
  return { db, display };
}

/** Parses `tasks.store`. Throws an Error that names the problem (and never the password). */
export function parseStoreSpec(value: string): StoreSpec {
  const text = value.trim();
  if (text === "memory") return { kind: "memory" };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(text)?.[1]?.toLowerCase();
  const known = scheme === undefined ? undefined : SCHEMES[scheme];
  if (scheme === undefined || known === undefined) {
    const what = scheme === undefined ? JSON.stringify(redactText(text)) : `scheme "${scheme}:"`;
    throw new Error(`task store: unsupported ${what}; ${USAGE}`);
  }
  if (known.mode !== "single") {
    const { db, display } = parseMultiHost(text, scheme, known.mode);
    return { kind: "redis", mode: known.mode, url: text, db, tls: known.tls, display };
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
  const db = databaseOf(shown, path);
  decodeUserinfo(shown, url.username, url.password);
  const user = url.username;
  const userinfo = url.password !== "" ? `${user}:***@` : user !== "" ? `${user}@` : "";
  const display = `${scheme}://${userinfo}${url.host}${path !== "" && path !== "/" ? `/${db}` : ""}`;
  return { kind: "redis", mode: "single", url: text, db, tls: known.tls, display };
}

/** The nodes, credentials, database and master name of a spec parseStoreSpec accepted. */
export function redisEndpoints(spec: RedisStoreSpec): RedisEndpoints {
  const shown = (): string => JSON.stringify(spec.display);
  if (spec.mode === "single") {
    const url = parseRedisUrl(spec.url);
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    return {
      nodes: [{ host, port: url.port === "" ? DEFAULT_PORT : Number(url.port) }],
      ...decodeUserinfo(shown, url.username, url.password),
      db: spec.db,
    };
  }
  const scheme = spec.url.slice(0, spec.url.indexOf(":")).toLowerCase();
  const parts = splitMultiHost(spec.url.trim(), scheme, shown);
  return {
    nodes: parseHosts(parts.hostList, spec.mode === "sentinel" ? SENTINEL_PORT : DEFAULT_PORT, shown),
    ...decodeUserinfo(shown, parts.user, parts.password),
    db: spec.db,
    ...(parts.fragment !== undefined && { masterName: parts.fragment }),
  };
}
