// `npm run bench -- stdio`: what a stdio upstream costs.
//
//   node --import tsx bench/stdio.ts [--sessions N] [--seconds S] [--concurrency C]
//
// 1. Session start: initialize through the gateway in front of server-everything over stdio,
//    i.e. spawn + the child's initialize answer (+ the gateway hop), one session at a time.
// 2. RSS per session: the children's VmRSS (/proc) with N sessions open, divided by N.
// 3. Echo throughput: tools/call echo through the gateway, C sessions each calling in a loop,
//    against a stdio upstream and against the same server in streamableHttp mode.
// Prints a Markdown table; figures go to bench/RESULTS.md by hand.
import { readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { openSession, post } from "./lib/legacy-session.js";
import { startGateway } from "../src/index.js";
import { startServerEverything } from "../test/helpers/server-everything.js";
import { everythingCommand } from "../test/helpers/stdio-servers.js";

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? undefined : Number(process.argv[i + 1]);
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}
const SESSIONS = option("sessions", 10);
const SECONDS = option("seconds", 5);
const CONCURRENCY = option("concurrency", 8);

function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const [child, ppid] of parent) {
      if (ppid === pid) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return out;
}

function rssKb(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    return Number(line?.split(/\s+/)[1] ?? 0);
  } catch {
    return 0;
  }
}

async function throughput(url: string): Promise<{ rps: number; p50: number; p99: number }> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: CONCURRENCY * 2 });
  const sessions = await Promise.all(Array.from({ length: CONCURRENCY }, () => openSession(pool, u.pathname)));
  const latencies: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  const warm = performance.now() + 1000;
  let id = 10;
  await Promise.all(
    sessions.map(async (headers) => {
      while (performance.now() < end) {
        const start = performance.now();
        const res = await post(
          pool,
          u.pathname,
          {
            jsonrpc: "2.0",
            id: id++,
            method: "tools/call",
            params: { name: "echo", arguments: { message: "x".repeat(64) } },
          },
          headers,
        );
        if (res.status !== 200) throw new Error(`echo: ${res.status}`);
        if (start > warm) latencies.push(performance.now() - start);
      }
    }),
  );
  for (const headers of sessions)
    await pool.request({ path: u.pathname, method: "DELETE", headers }).then((r) => r.body.dump());
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { rps: latencies.length / (SECONDS - 1), p50: at(0.5), p99: at(0.99) };
}

const stdioGateway = await startGateway({
  upstream: { command: everythingCommand(), maxProcesses: Math.max(SESSIONS, CONCURRENCY) + 4 },
  server: { host: "127.0.0.1", port: 0 },
  log: { level: "silent" },
});
const httpUpstream = await startServerEverything();
const httpGateway = await startGateway({
  upstream: { url: httpUpstream.url },
  server: { host: "127.0.0.1", port: 0 },
  log: { level: "silent" },
});
try {
  // 1. Session start, one at a time.
  const u = new URL(stdioGateway.url);
  const pool = new Pool(u.origin);
  const starts: number[] = [];
  const opened: Record<string, string>[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const t = performance.now();
    opened.push(await openSession(pool, u.pathname));
    starts.push(performance.now() - t);
  }
  // 2. RSS with SESSIONS sessions open: the children (and whatever they started), per session.
  const children = descendants(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("stdio");
    } catch {
      return false;
    }
  });
  const childRss = children.reduce((sum, pid) => sum + rssKb(pid), 0);
  for (const headers of opened)
    await pool.request({ path: u.pathname, method: "DELETE", headers }).then((r) => r.body.dump());
  await pool.close();
  starts.sort((a, b) => a - b);

  // 3. Echo throughput, stdio vs HTTP upstream.
  const viaStdio = await throughput(stdioGateway.url);
  const viaHttp = await throughput(httpGateway.url);

  const ms = (n: number): string => n.toFixed(1);
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), Node ${process.version}; server-everything ${SESSIONS} sessions, echo c=${CONCURRENCY} for ${SECONDS} s (first second not counted)\n`,
  );
  console.log("| figure | value |\n|---|---:|");
  console.log(
    `| session start (initialize through the gateway: spawn + initialize answer), p50 | ${ms(starts[Math.floor(starts.length / 2)] ?? 0)} ms |`,
  );
  console.log(`| session start, min / max | ${ms(starts[0] ?? 0)} / ${ms(starts.at(-1) ?? 0)} ms |`);
  console.log(
    `| RSS per session (children's VmRSS ÷ ${SESSIONS}; ${children.length} processes) | ${(childRss / 1024 / SESSIONS).toFixed(1)} MiB |`,
  );
  console.log(
    `| echo through the gateway, stdio upstream | ${viaStdio.rps.toFixed(0)} req/s (p50 ${ms(viaStdio.p50)} ms, p99 ${ms(viaStdio.p99)} ms) |`,
  );
  console.log(
    `| echo through the gateway, HTTP upstream (same server, streamableHttp) | ${viaHttp.rps.toFixed(0)} req/s (p50 ${ms(viaHttp.p50)} ms, p99 ${ms(viaHttp.p99)} ms) |`,
  );
} finally {
  await stdioGateway.close();
  await httpGateway.close();
  await httpUpstream.close();
}
