// `npm run bench -- stdio-peers`: the stdio path against the tools people use for the same job (issue 27, item 4).
//
//   node --import tsx bench/stdio-peers.ts [--rounds R] [--sessions N] [--seconds S] [--gap-ms G] [--warm W] [--src]
//
// The gateway runs as installed, from its compiled dist/ (built first when stale, so it is the tree's own), as the
// peers run from theirs; --src (BENCH_GATEWAY=src) runs src/ under tsx instead (tsx names every closure it creates, a cost dist/ does not pay).
// server-everything over stdio behind each of, one at a time, each its own process bound to 127.0.0.1 and
// stopped (its process group) before the next starts:
//   - this gateway: the CLI, `--upstream-command`;
//   - this gateway with `upstream.warmProcesses: W` (a config file);
//   - supergateway 4.0.0: `--stdio "<cmd>" --outputTransport streamableHttp --stateful --port P --logLevel none`
//     (it has no listen-address option: a preload binds it to 127.0.0.1);
//   - mcp-proxy 6.7.19: `--host 127.0.0.1 --port P -- <cmd>`, its streamable HTTP endpoint /mcp.
// The client is the SDK 1.x Client over StreamableHTTPClientTransport, in this process:
//   1. session start: connect() (initialize + notifications/initialized), N sessions one at a time, each closed
//      (DELETE) and followed by a G ms pause, so sessions arrive at a rate a warm pool keeps up with;
//   2. echo p50 at c = 1: one session calling tools/call echo (64 bytes) in a loop for S s;
//   3. echo calls/s with 8 sessions, each calling in a loop for S s.
// The first second of each loop is not counted. With --rounds R the tools run R times, alternating.
// Prints a Markdown table; figures go to bench/RESULTS.md by hand.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ROOT } from "./lib/paths.js";
import { canConnect, freePort } from "./lib/ports.js";
import { exitAfter, installCleanup, setChildLifetime, startChild, stopAll, type Child } from "./lib/procs.js";
import { gatewayArgs } from "./lib/gateway-program.js";
import { everythingCommand } from "../test/helpers/stdio-servers.js";

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? undefined : Number(process.argv[i + 1]);
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}
const ROUNDS = option("rounds", 1);
const SESSIONS = option("sessions", 10);
const SECONDS = option("seconds", 4);
const GAP_MS = option("gap-ms", 700);
const WARM = option("warm", 2);
const CONCURRENCY = 8;
const MESSAGE = "x".repeat(64);

const LOOPBACK_PRELOAD = fileURLToPath(new URL("./lib/loopback-listen.mjs", import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), "bench-stdio-peers-"));

interface Tool {
  name: string;
  /** Starts it; resolves with its MCP endpoint once it accepts connections. */
  start(): Promise<{ child: Child; url: string }>;
}

const command = everythingCommand();
const binOf = (pkg: string, bin: string): string => join(ROOT, "node_modules", pkg, bin);

async function onPort(name: string, args: string[], env: Record<string, string>, port: number): Promise<Child> {
  const { child } = await startChild({
    name,
    command: process.execPath,
    args,
    cwd: ROOT,
    env,
    ready: { probe: async () => ((await canConnect(port)) ? true : undefined) },
    timeoutMs: 30_000,
  });
  return child;
}

function gateway(name: string, config: Record<string, unknown> | undefined): Tool {
  return {
    name,
    async start() {
      let source: string[];
      if (config) {
        const file = join(workDir, `${name.replace(/\W+/g, "-")}.json`);
        writeFileSync(file, JSON.stringify(config));
        source = ["--config", file];
      } else {
        source = ["--upstream-command", command.join(" ")];
      }
      const { child, ready: url } = await startChild({
        name,
        command: process.execPath,
        args: [...gatewayArgs(), ...source, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"],
        cwd: ROOT,
        ready: {
          line: (line) =>
            line.includes("listening on")
              ? /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(line.split("→")[0] ?? "")?.[0]
              : undefined,
        },
        timeoutMs: 30_000,
      });
      return { child, url };
    },
  };
}

const TOOLS: Tool[] = [
  gateway("this gateway (CLI, --upstream-command)", undefined),
  gateway(`this gateway, upstream.warmProcesses: ${WARM}`, {
    upstream: { command, warmProcesses: WARM },
  }),
  {
    name: "supergateway 4.0.0 (--outputTransport streamableHttp --stateful)",
    async start() {
      const port = await freePort();
      const args = [
        "--import",
        LOOPBACK_PRELOAD,
        binOf("supergateway", "dist/index.js"),
        "--stdio",
        command.join(" "),
        "--outputTransport",
        "streamableHttp",
        "--stateful",
        "--port",
        String(port),
        "--logLevel",
        "none",
      ];
      return { child: await onPort("supergateway", args, {}, port), url: `http://127.0.0.1:${port}/mcp` };
    },
  },
  {
    name: "mcp-proxy 6.7.19 (streamable HTTP)",
    async start() {
      const port = await freePort();
      const args = [
        binOf("mcp-proxy", "dist/bin/mcp-proxy.mjs"),
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--",
        ...command,
      ];
      return { child: await onPort("mcp-proxy", args, {}, port), url: `http://127.0.0.1:${port}/mcp` };
    },
  },
];

interface Session {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(url: string): Promise<Session> {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: "bench-stdio-peers", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport };
}

async function disconnect(s: Session): Promise<void> {
  await s.transport.terminateSession().catch(() => undefined);
  await s.client.close().catch(() => undefined);
}

async function echo(s: Session): Promise<void> {
  const result = await s.client.callTool({ name: "echo", arguments: { message: MESSAGE } });
  if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result)}`);
}

const p50 = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** Each session calls echo in a loop for SECONDS; latencies after the first second. */
async function loop(sessions: Session[]): Promise<number[]> {
  const latencies: number[] = [];
  const counted = performance.now() + 1_000;
  const end = performance.now() + SECONDS * 1_000;
  await Promise.all(
    sessions.map(async (s) => {
      while (performance.now() < end) {
        const t = performance.now();
        await echo(s);
        if (t >= counted) latencies.push(performance.now() - t);
      }
    }),
  );
  return latencies;
}

interface Figures {
  start: number;
  startMin: number;
  startMax: number;
  c1: number;
  rps: number;
  c8p50: number;
  leftover: number;
}

/** Live processes running this worktree's server-everything (none should be left once a tool is stopped). */
function everythingLeft(): number {
  const script = command[1] as string;
  let n = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(script)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

async function measure(tool: Tool): Promise<Figures> {
  const { child, url } = await tool.start();
  try {
    // One session first, not counted: the first spawn pays for a cold disk cache and the tool's own warm-up.
    await disconnect(await connect(url));
    await sleep(GAP_MS);
    const starts: number[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const t = performance.now();
      const s = await connect(url);
      starts.push(performance.now() - t);
      await echo(s);
      await disconnect(s);
      await sleep(GAP_MS);
    }
    const one = await connect(url);
    const c1 = await loop([one]);
    await disconnect(one);
    const many = await Promise.all(Array.from({ length: CONCURRENCY }, () => connect(url)));
    const c8 = await loop(many);
    await Promise.all(many.map(disconnect));
    return {
      start: p50(starts),
      startMin: Math.min(...starts),
      startMax: Math.max(...starts),
      c1: p50(c1),
      rps: c8.length / (SECONDS - 1),
      c8p50: p50(c8),
      leftover: 0,
    };
  } finally {
    await child.stop();
  }
}

installCleanup();
if (process.argv.includes("--src")) process.env.BENCH_GATEWAY = "src";
// dist/ is what bin/ runs: built from this tree when stale, so the figures are the tree's.
gatewayArgs();
const perTool = 20 + SESSIONS * (GAP_MS / 1000 + 1) + 2 * SECONDS + 15;
const ceiling = Math.ceil(ROUNDS * TOOLS.length * perTool + 60);
setChildLifetime(ceiling + 30);
exitAfter("bench stdio-peers", ceiling);

const results = new Map<string, Figures[]>(TOOLS.map((t) => [t.name, []]));
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const tool of TOOLS) {
      process.stderr.write(`round ${round}: ${tool.name}…\n`);
      const figures = await measure(tool);
      // Each tool is stopped before the next starts: whatever it spawned must be gone with it.
      await sleep(500);
      figures.leftover = everythingLeft();
      results.get(tool.name)?.push(figures);
    }
  }
} finally {
  await stopAll();
  rmSync(workDir, { recursive: true, force: true });
}

const range = (xs: number[], digits: number): string => {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo.toFixed(digits) === hi.toFixed(digits) ? lo.toFixed(digits) : `${lo.toFixed(digits)}–${hi.toFixed(digits)}`;
};
console.log(
  `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), Node ${process.version}; server-everything over stdio; ` +
    `SDK 1.x client; ${ROUNDS} round(s), ${SESSIONS} session starts ${GAP_MS} ms apart, echo loops of ${SECONDS} s ` +
    `(first second not counted)\n`,
);
console.log(
  "| | session start p50 (min–max) | echo p50 at c = 1 | echo calls/s, 8 sessions (p50) | left running after stop |",
);
console.log("|---|---|---|---|---|");
for (const [name, runs] of results) {
  const starts = runs.map((r) => r.start);
  console.log(
    `| ${name} | ${range(starts, 1)} ms (${Math.min(...runs.map((r) => r.startMin)).toFixed(1)}–${Math.max(...runs.map((r) => r.startMax)).toFixed(1)}) | ` +
      `${range(
        runs.map((r) => r.c1),
        2,
      )} ms | ${range(
        runs.map((r) => r.rps),
        0,
      )} (${range(
        runs.map((r) => r.c8p50),
        1,
      )} ms) | ${Math.max(...runs.map((r) => r.leftover))} |`,
  );
}
if (ROUNDS > 1) {
  // Each round's figures: the tools ran back to back within a round, so ratios within a row of rounds are the fairest.
  console.log(
    "\n| round | | session start p50 | echo p50 at c = 1 | echo calls/s, 8 sessions |\n|---|---|---|---|---|",
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, runs] of results) {
      const r = runs[round];
      if (r)
        console.log(
          `| ${round + 1} | ${name} | ${r.start.toFixed(1)} ms | ${r.c1.toFixed(2)} ms | ${r.rps.toFixed(0)} |`,
        );
    }
  }
}
