// A forwarded session request (issue 23), priced with the two gateways as separate processes, as deployed: two
// gateway CLIs (`node --import tsx src/main.ts --config F`) on one Redis in front of server-everything over stdio;
// a session opened on A (A's child holds it), then tools/call echo sent to A (served by the owner) and to B
// (forwarded to A's internal listener), alternating, one at a time. One process for both would hide the cost of
// the extra wake-up: the forwarded request crosses two event loops and the kernel twice.
//
// `transport`: "unix" (the default) gives both the same server.internalSocketDir, as --workers does for its workers,
// so B reaches A over a Unix socket; "tcp" leaves it unset: loopback TCP, as between replicas started separately.
//
// Used by bench/sessions.ts (figure 1) and by the regression guard (lib/priced-paths.ts); the pair itself
// (startForwardedPair) also by the investigations forwarded-cpu.ts and forwarded-steps.ts. Needs Redis; every key
// goes under a fresh prefix, deleted afterwards.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { connectRedis } from "../../src/store/redis-connect.js";
import { parseStoreSpec } from "../../src/store/store-url.js";
import { everythingCommand } from "../../test/helpers/stdio-servers.js";
import { gatewayLauncher, type ConfiguredGateway } from "./config-gateway.js";
import { openSession, post } from "./legacy-session.js";

export const ECHO = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "echo", arguments: { message: "hi" } },
};

export interface ForwardedFigures {
  /** echo on the session, sent to its owner (A): p50, ms. */
  ownerP50Ms: number;
  /** The same request sent to B, which forwards it to A: p50, ms. */
  forwardedP50Ms: number;
  /** forwardedP50Ms − ownerP50Ms. */
  addedMs: number;
  requests: number;
}

const p50 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Redis keys under `prefix`, deleted. */
async function dropKeys(redisUrl: string, prefix: string): Promise<void> {
  const spec = parseStoreSpec(redisUrl);
  if (spec.kind !== "redis") return;
  const client = await connectRedis(spec, { connectionName: "bench-forwarded-cleanup" });
  try {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
  } finally {
    client.disconnect();
  }
}

/** Two gateways on one Redis with a session open on A: B forwards what it gets on that session to A. */
export interface ForwardedPair {
  a: ConfiguredGateway;
  b: ConfiguredGateway;
  poolA: Pool;
  poolB: Pool;
  /** The session's headers (Mcp-Session-Id and protocol version). */
  headers: Record<string, string>;
  /** Stops both, removes the socket directory and deletes the Redis keys. */
  stop(): Promise<void>;
}

/**
 * Starts the pair. `nodeArgsB`: node flags for B alone (a profiler on the forwarding replica); B then starts after
 * A, since the flags go through BENCH_NODE_ARGS.
 */
export async function startForwardedPair(opts: {
  redisUrl: string;
  transport?: "unix" | "tcp" | undefined;
  nodeArgsB?: string | undefined;
}): Promise<ForwardedPair> {
  const prefix = `bench-forwarded-${randomBytes(4).toString("hex")}:`;
  const launcher = gatewayLauncher("bench-forwarded-");
  // mkdtemp: mode 0700, as the gateway requires of server.internalSocketDir.
  const socketDir = opts.transport === "tcp" ? undefined : mkdtempSync(join(tmpdir(), "bench-fw-"));
  const config = {
    upstream: { command: everythingCommand() },
    server: { host: "127.0.0.1", ...(socketDir !== undefined && { internalSocketDir: socketDir }) },
    tasks: { store: opts.redisUrl, storePrefix: prefix },
    metrics: { enabled: false },
  };
  const started: ConfiguredGateway[] = [];
  const pools: Pool[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(pools.map((pool) => pool.close()));
    await Promise.all(started.map((g) => g.child.stop()));
    launcher.cleanup();
    if (socketDir !== undefined) rmSync(socketDir, { recursive: true, force: true });
    await dropKeys(opts.redisUrl, prefix);
  };
  try {
    let a: ConfiguredGateway;
    let b: ConfiguredGateway;
    if (opts.nodeArgsB === undefined) {
      [a, b] = await Promise.all([launcher.start("gateway-a", config), launcher.start("gateway-b", config)]);
      started.push(a, b);
    } else {
      started.push((a = await launcher.start("gateway-a", config)));
      const before = process.env.BENCH_NODE_ARGS;
      process.env.BENCH_NODE_ARGS = opts.nodeArgsB;
      try {
        started.push((b = await launcher.start("gateway-b", config)));
      } finally {
        process.env.BENCH_NODE_ARGS = before ?? "";
      }
    }
    const poolA = new Pool(a.origin, { connections: 1 });
    const poolB = new Pool(b.origin, { connections: 1 });
    pools.push(poolA, poolB);
    const headers = await openSession(poolA, "/mcp");
    return { a, b, poolA, poolB, headers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** `requests` echo calls to each gateway (after `warmup` each, not counted), alternating A and B. */
export async function forwardedSession(opts: {
  redisUrl: string;
  requests: number;
  warmup?: number;
  transport?: "unix" | "tcp";
}): Promise<ForwardedFigures> {
  const { poolA, poolB, headers, stop } = await startForwardedPair(opts);
  try {
    const served: number[] = [];
    const forwarded: number[] = [];
    const warmup = opts.warmup ?? 50;
    for (let i = 0; i < opts.requests + warmup; i++) {
      for (const [pool, into] of [
        [poolA, served],
        [poolB, forwarded],
      ] as const) {
        const t0 = performance.now();
        const res = await post(pool, "/mcp", ECHO, headers);
        const took = performance.now() - t0;
        if (res.status !== 200 || !res.text.includes("Echo: hi"))
          throw new Error(`echo: ${res.status} ${res.text.slice(0, 200)}`);
        if (i >= warmup) into.push(took);
      }
    }
    const ownerP50Ms = p50(served);
    const forwardedP50Ms = p50(forwarded);
    return { ownerP50Ms, forwardedP50Ms, addedMs: forwardedP50Ms - ownerP50Ms, requests: opts.requests };
  } finally {
    await stop();
  }
}
