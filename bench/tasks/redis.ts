// What the shared-state benchmarks read from Redis itself: INFO snapshots
// (commandstats, network bytes, used_memory, CPU), MEMORY USAGE of keys, a
// MONITOR tally, and the deletion of a run's keys. Its own connection, never
// the gateway's; its own traffic is counted so it can be taken off the deltas.
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";

export interface RedisSnapshot {
  /** Calls per command (lower case, `|` for subcommands), from INFO commandstats. */
  calls: Record<string, number>;
  /** total_net_input_bytes / total_net_output_bytes, less this probe's own traffic so far. */
  netIn: number;
  netOut: number;
  usedMemory: number;
  /** used_cpu_user + used_cpu_sys, seconds. */
  cpuSec: number;
}

/** Commands this probe itself sends; left out of every tally. */
const OWN = new Set([
  "info",
  "memory|usage",
  "scan",
  "unlink",
  "client|list",
  "client|setname",
  "monitor",
  "ping",
  "select",
  "command",
  "command|docs",
]);

/** Bytes of one command in RESP, as a client sends it. */
function requestBytes(args: readonly string[]): number {
  let n = `*${args.length}\r\n`.length;
  for (const a of args) {
    const len = Buffer.byteLength(a);
    n += `$${len}\r\n`.length + len + 2;
  }
  return n;
}

function field(info: string, name: string): number {
  const m = new RegExp(`^${name}:([\\d.]+)`, "m").exec(info);
  if (m?.[1] === undefined) throw new Error(`INFO without ${name}`);
  return Number(m[1]);
}

export function diffCalls(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cmd, n] of Object.entries(after)) {
    const d = n - (before[cmd] ?? 0);
    if (d !== 0 && !OWN.has(cmd)) out[cmd] = d;
  }
  return out;
}

export class RedisProbe {
  /** The Redis server's pid when it runs on this machine, else undefined. */
  pid: number | undefined;
  /** "Redis 7.0.15". */
  version = "Redis ?";
  private readonly client: Redis;
  /** This probe's own request and reply bytes so far. */
  private ownIn = 0;
  private ownOut = 0;

  private constructor(readonly url: string) {
    this.client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableReadyCheck: false });
  }

  static async open(url: string): Promise<RedisProbe> {
    const probe = new RedisProbe(url);
    await probe.client.connect();
    const server = await probe.info("server");
    const pid = field(server, "process_id");
    probe.version = `Redis ${/^redis_version:(\S+)/m.exec(server)?.[1] ?? "?"}`;
    try {
      // Only a Redis on this machine: the pid must be a redis-server here.
      probe.pid = readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("redis") ? pid : undefined;
    } catch {
      probe.pid = undefined;
    }
    return probe;
  }

  private async info(...sections: string[]): Promise<string> {
    const reply = await this.client.info(...sections);
    this.ownIn += requestBytes(["info", ...sections]);
    const len = Buffer.byteLength(reply);
    this.ownOut += `$${len}\r\n`.length + len + 2;
    return reply;
  }

  async snapshot(): Promise<RedisSnapshot> {
    // The bytes of this very INFO reply land in the counters after they are read: count them from the next snapshot on.
    const ownIn = this.ownIn + requestBytes(["info", "commandstats", "stats", "memory", "cpu"]);
    const ownOut = this.ownOut;
    const info = await this.info("commandstats", "stats", "memory", "cpu");
    const calls: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1] ?? ""] = Number(m[2]);
    return {
      calls,
      netIn: field(info, "total_net_input_bytes") - ownIn,
      netOut: field(info, "total_net_output_bytes") - ownOut,
      usedMemory: field(info, "used_memory"),
      cpuSec: field(info, "used_cpu_user") + field(info, "used_cpu_sys"),
    };
  }

  /** Waits until the calls of everyone but this probe stop changing (`stableMs` without a change); returns the last snapshot. */
  async quiescent(stableMs = 600, timeoutMs = 30_000): Promise<RedisSnapshot> {
    const deadline = performance.now() + timeoutMs;
    let last = await this.snapshot();
    let since = performance.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 100));
      const now = await this.snapshot();
      if (Object.keys(diffCalls(now.calls, last.calls)).length > 0) since = performance.now();
      else if (performance.now() - since >= stableMs) return now;
      if (performance.now() > deadline) throw new Error(`Redis did not go quiet within ${timeoutMs} ms`);
      last = now;
    }
  }

  /** MEMORY USAGE … SAMPLES 0 (exact), or null when the key does not exist. */
  async memoryUsage(key: string): Promise<number | null> {
    const n = (await this.client.call("MEMORY", "USAGE", key, "SAMPLES", "0")) as number | null;
    this.ownIn += requestBytes(["MEMORY", "USAGE", key, "SAMPLES", "0"]);
    this.ownOut += n === null ? 5 : `:${n}\r\n`.length;
    return n;
  }

  /** Keys under a prefix (SCAN, so other users of this Redis are not blocked). */
  async keys(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await this.client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      out.push(...batch);
      cursor = next;
    } while (cursor !== "0");
    return out;
  }

  /** Deletes every key under `prefix`; returns how many there were. */
  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.keys(prefix);
    for (let i = 0; i < keys.length; i += 500) await this.client.unlink(...keys.slice(i, i + 500));
    return keys.length;
  }

  /** Addresses of the connections named `name*` (CLIENT SETNAME), e.g. the gateway's. */
  async clientAddresses(name: string): Promise<Set<string>> {
    const list = (await this.client.call("CLIENT", "LIST")) as string;
    this.ownIn += requestBytes(["CLIENT", "LIST"]);
    this.ownOut += `$${Buffer.byteLength(list)}\r\n`.length + Buffer.byteLength(list) + 2;
    const out = new Set<string>();
    for (const line of list.split("\n")) {
      const addr = / addr=(\S+)/.exec(line)?.[1];
      const n = / name=(\S*)/.exec(line)?.[1];
      if (addr !== undefined && n?.startsWith(name) === true) out.add(addr);
    }
    return out;
  }

  /**
   * MONITOR until the returned stop() is called: counts the commands the given
   * connections send (`sent`) and those Lua scripts run for them (`inScripts`).
   */
  async monitor(
    from: () => ReadonlySet<string>,
  ): Promise<{ stop: () => Promise<{ sent: Record<string, number>; inScripts: Record<string, number> }> }> {
    const conn = new Redis(this.url, { lazyConnect: true, enableReadyCheck: false });
    await conn.connect();
    const mon = await conn.monitor();
    const sent: Record<string, number> = {};
    const inScripts: Record<string, number> = {};
    // Lua lines follow the EVAL/EVALSHA that ran them (Redis runs one command at a time).
    let lastWasOurs = false;
    mon.on("monitor", (_time: string, args: string[], source: string) => {
      const cmd = (args[0] ?? "").toLowerCase();
      if (source === "lua") {
        if (lastWasOurs) inScripts[cmd] = (inScripts[cmd] ?? 0) + 1;
        return;
      }
      lastWasOurs = from().has(source);
      if (lastWasOurs) sent[cmd] = (sent[cmd] ?? 0) + 1;
    });
    return {
      stop: async () => {
        // Let the last lines arrive.
        await new Promise((r) => setTimeout(r, 300));
        mon.disconnect();
        conn.disconnect();
        return { sent, inScripts };
      },
    };
  }

  close(): void {
    this.client.disconnect();
  }
}
