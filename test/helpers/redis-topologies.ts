// Private Redis deployments a test starts and stops itself, from the redis-server
// binary .ci/run installs, on free loopback ports with their files in a temp dir:
// a Redis Cluster of 3 masters and 3 replicas, and a primary with a replica and
// three Sentinels. Tests kill their nodes (SIGKILL, as abrupt as a crash), make
// them fail over, and reshard. Nothing is kept on disk beyond the node files.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { getFreePort } from "./ports.js";

const run = promisify(execFile);

/** redis-cli against one port; its stdout. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 60_000 });
  return stdout;
}

async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis topology: ${what} within ${ms} ms`);
    await sleep(100);
  }
}

/** One redis-server process on a fixed port, which the test can kill and start again (its files stay). */
class RedisNode {
  private child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    private readonly args: () => string[],
  ) {}

  async start(): Promise<void> {
    const child = spawn("redis-server", this.args(), { stdio: "ignore" });
    this.child = child;
    await until(async () => (await cli(this.port, "PING")).trim() === "PONG", `redis-server :${this.port} answering`);
  }

  /** SIGKILL: a crash, no goodbye to the cluster or the Sentinels. */
  async kill(): Promise<void> {
    const c = this.child;
    this.child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = once(c, "exit");
    c.kill("SIGKILL");
    await exited;
  }

  get running(): boolean {
    return this.child !== undefined;
  }
}

const BASE = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"];

/** One empty redis-server on a free port, a primary of nothing: a stray a stale Sentinel can still name. */
export async function startRedisNode(): Promise<{ port: number; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "mtg-node-"));
  const port = await getFreePort();
  const node = new RedisNode(port, () => ["--port", String(port), ...BASE, "--dir", dir]);
  try {
    await node.start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    stop: async () => {
      await node.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface ClusterNodeInfo {
  id: string;
  port: number;
  master: boolean;
  /** For a master: its slot ranges as given by CLUSTER NODES. */
  slots: string[];
}

export interface PrivateCluster {
  /** redis-cluster://127.0.0.1:p1,… (every node a seed). */
  readonly url: string;
  readonly nodes: RedisNode[];
  /** The node by port. */
  node(port: number): RedisNode;
  /** CLUSTER NODES as one live node sees it. */
  topology(): Promise<ClusterNodeInfo[]>;
  /** The port of the master serving `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /** Until every slot is served again (state ok on every running node) and every replica is in sync. */
  healthy(): Promise<void>;
  /** Until the master that was on `port` (killed) is replaced: three masters, none of them on that port. */
  failedOver(port: number): Promise<void>;
  /** Moves `count` slots from the master on port `from` to the one on port `to` (redis-cli --cluster reshard). */
  reshard(from: number, to: number, count: number): Promise<void>;
  /** Kills every node and removes the files. */
  stop(): Promise<void>;
}

/** A 3-master, 3-replica Redis Cluster on loopback, full coverage required (a cross-slot script fails). */
export async function startRedisCluster(): Promise<PrivateCluster> {
  const dir = mkdtempSync(join(tmpdir(), "mtg-cluster-"));
  const nodes: RedisNode[] = [];
  for (let i = 0; i < 6; i++) {
    const port = await getFreePort();
    const bus = await getFreePort();
    nodes.push(
      new RedisNode(port, () => [
        "--port",
        String(port),
        "--cluster-port",
        String(bus),
        ...BASE,
        "--dir",
        dir,
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        `nodes-${port}.conf`,
        "--cluster-node-timeout",
        "1000",
        "--cluster-require-full-coverage",
        "yes",
        "--cluster-replica-validity-factor",
        "0",
        "--cluster-allow-replica-migration",
        "no",
        // DEBUG SLEEP: a master that hangs rather than dies.
        "--enable-debug-command",
        "local",
      ]),
    );
  }
  const live = (): RedisNode => {
    const n = nodes.find((x) => x.running);
    if (!n) throw new Error("no cluster node is running");
    return n;
  };
  const topology = async (): Promise<ClusterNodeInfo[]> => {
    const text = await cli(live().port, "CLUSTER", "NODES");
    return text
      .trim()
      .split("\n")
      .map((line) => {
        const f = line.split(" ");
        const port = Number(/:(\d+)@/.exec(f[1] ?? "")?.[1]);
        const flags = f[2] ?? "";
        return {
          id: f[0] ?? "",
          port,
          master: flags.includes("master") && !flags.includes("fail"),
          slots: f.slice(8),
        };
      });
  };
  const healthy = async (): Promise<void> => {
    await until(async () => {
      for (const n of nodes.filter((x) => x.running)) {
        if (!(await cli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok")) return false;
        // A replica still in its first sync confirms no WAIT.
        const replication = await cli(n.port, "INFO", "replication");
        if (replication.includes("role:slave") && !replication.includes("master_link_status:up")) return false;
      }
      return true;
    }, "cluster_state:ok on every node, every replica in sync");
  };
  const cluster: PrivateCluster = {
    url: `redis-cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`,
    nodes,
    node: (port) => {
      const n = nodes.find((x) => x.port === port);
      if (!n) throw new Error(`no cluster node on port ${port}`);
      return n;
    },
    topology,
    masterOf: async (key) => {
      const slot = Number((await cli(live().port, "CLUSTER", "KEYSLOT", key)).trim());
      for (const m of (await topology()).filter((x) => x.master)) {
        for (const range of m.slots) {
          if (range.startsWith("[")) continue;
          const [lo = -1, hi = lo] = range.split("-").map(Number);
          if (slot >= lo && slot <= hi) return m.port;
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    healthy,
    failedOver: async (port) => {
      await until(async () => {
        const masters = (await topology()).filter((x) => x.master && x.slots.length > 0);
        return masters.length === 3 && !masters.some((m) => m.port === port);
      }, `a replica promoted in place of :${port}`);
      await healthy();
    },
    reshard: async (from, to, count) => {
      const t = await topology();
      const id = (port: number): string => t.find((x) => x.port === port)?.id ?? "";
      await run(
        "redis-cli",
        [
          "--cluster",
          "reshard",
          `127.0.0.1:${from}`,
          "--cluster-from",
          id(from),
          "--cluster-to",
          id(to),
          "--cluster-slots",
          String(count),
          "--cluster-yes",
          "--cluster-pipeline",
          "100",
        ],
        { timeout: 120_000 },
      );
      await healthy();
    },
    stop: async () => {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    await run(
      "redis-cli",
      ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "1", "--cluster-yes"],
      { timeout: 60_000 },
    );
    await healthy();
    // Every replica attached to its master (a failover needs one to promote).
    await until(async () => (await topology()).filter((x) => x.master).length === 3, "3 masters");
    await until(
      async () => (await topology()).filter((x) => !x.master && x.slots.length === 0).length === 3,
      "3 replicas",
    );
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

export interface PrivateSentinel {
  /** redis-sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3#mtg */
  readonly url: string;
  readonly masterName: string;
  /** The primary and the replica (which one is which changes with failovers). */
  readonly data: RedisNode[];
  readonly sentinels: RedisNode[];
  /** The port of the primary the Sentinels name now. */
  primary(): Promise<number>;
  /** Until the Sentinels name a primary other than `old` and it answers as master. */
  promotedFrom(old: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * One primary, `replicas` replicas (default one) and three Sentinels (quorum 2) on loopback; a primary down 1 s is
 * failed over. With two replicas one stays in sync while the other resyncs (what a deployment that must not lose
 * acknowledged tasks runs, with WAIT).
 */
export async function startRedisSentinel(opts: { replicas?: number } = {}): Promise<PrivateSentinel> {
  const dir = mkdtempSync(join(tmpdir(), "mtg-sentinel-"));
  const masterName = "mtg";
  const primaryPort = await getFreePort();
  const replicaPorts: number[] = [];
  for (let i = 0; i < (opts.replicas ?? 1); i++) replicaPorts.push(await getFreePort());
  const data = [
    new RedisNode(primaryPort, () => ["--port", String(primaryPort), ...BASE, "--dir", dir]),
    ...replicaPorts.map(
      (port) =>
        new RedisNode(port, () => [
          "--port",
          String(port),
          ...BASE,
          "--dir",
          dir,
          "--replicaof",
          "127.0.0.1",
          String(primaryPort),
        ]),
    ),
  ];
  const sentinels: RedisNode[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await getFreePort();
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        "bind 127.0.0.1",
        "protected-mode no",
        `dir ${dir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${masterName} 1000`,
        `sentinel failover-timeout ${masterName} 5000`,
        `sentinel parallel-syncs ${masterName} 1`,
        "",
      ].join("\n"),
    );
    sentinels.push(new RedisNode(port, () => [file, "--sentinel"]));
  }
  const primary = async (): Promise<number> => {
    for (const s of sentinels.filter((x) => x.running)) {
      const reply = await cli(s.port, "SENTINEL", "get-master-addr-by-name", masterName).catch(() => "");
      const port = Number(reply.trim().split("\n")[1]);
      if (port > 0) return port;
    }
    throw new Error("no Sentinel names a primary");
  };
  const deployment: PrivateSentinel = {
    url: `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(",")}#${masterName}`,
    masterName,
    data,
    sentinels,
    primary,
    promotedFrom: async (old) => {
      let now = old;
      await until(
        async () => {
          now = await primary();
          return now !== old && (await cli(now, "ROLE")).startsWith("master");
        },
        "a replica promoted",
        30_000,
      );
      return now;
    },
    stop: async () => {
      await Promise.all([...sentinels, ...data].map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const n of data) await n.start();
    await until(async () => {
      for (const port of replicaPorts)
        if (!(await cli(port, "INFO", "replication")).includes("master_link_status:up")) return false;
      return true;
    }, "the replicas in sync");
    await Promise.all(sentinels.map((s) => s.start()));
    // Every Sentinel knows the replica and the other Sentinels before a test fails anything over.
    await until(async () => {
      for (const s of sentinels) {
        const info = await cli(s.port, "SENTINEL", "master", masterName);
        const lines = info.trim().split("\n");
        const field = (name: string): number => Number(lines[lines.indexOf(name) + 1]);
        if (field("num-slaves") < replicaPorts.length || field("num-other-sentinels") < 2) return false;
      }
      return true;
    }, "the Sentinels agreeing on the deployment");
  } catch (err) {
    await deployment.stop();
    throw err;
  }
  return deployment;
}
