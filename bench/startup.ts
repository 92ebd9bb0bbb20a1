// `npm run bench -- startup`: how long the built gateway takes to start, and its RSS once it listens (issue 20: the
// OpenTelemetry SDK loaded only when tracing is configured).
//
//   npm run build && node --import tsx bench/startup.ts [--runs 15] [--dist PATH]…
//
// Builds nothing itself: each run spawns `node <dist>/main.js --upstream http://127.0.0.1:<port>/mcp --port 0`
// against a tiny upstream started here, takes the wall time from the spawn to the "listening on" line on its
// stdout and the child's VmRSS (/proc/<pid>/status) at that moment, then stops it. Several --dist (e.g. a build
// of another commit in a worktree of its own) are run in turn, run by run, so a change in the machine's load
// falls on all of them alike. One warm-up run per dist is not counted. Tracing and gateway settings are
// removed from the children's environment: only the flags configure them. Prints median and p90 per dist.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { ROOT } from "./lib/paths.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "15" },
    dist: { type: "string", multiple: true },
    warmup: { type: "string", default: "1" },
  },
});
const RUNS = Number(values.runs);
const WARMUP = Number(values.warmup);
const DISTS = (values.dist ?? [resolve(ROOT, "dist")]).map((d) => resolve(d));
const START_TIMEOUT_MS = 20_000;

interface Sample {
  ms: number;
  rssKb: number;
}

/** Stays up for every run; the gateway contacts no upstream to start, but the URL points at a live one. */
async function tinyUpstream(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: null, result: {} }));
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** The environment without anything that would configure the gateway or turn tracing on. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith("MCP_GATEWAY_") || key.startsWith("OTEL_")) delete env[key];
  return env;
}

function vmRssKb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  const kb = Number(line?.match(/(\d+)\s*kB/)?.[1]);
  if (!Number.isFinite(kb)) throw new Error(`no VmRSS for pid ${pid}`);
  return kb;
}

/** One start: spawn, wait for the start line, read RSS, stop. */
async function startOnce(dist: string, upstream: string): Promise<Sample> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [resolve(dist, "main.js"), "--upstream", upstream, "--port", "0"], {
    cwd: resolve(dist, ".."),
    env: childEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  try {
    const sample = await new Promise<Sample>((found, failed) => {
      const timer = setTimeout(
        () => failed(new Error(`no start line within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      child.once("exit", (code) => {
        clearTimeout(timer);
        failed(new Error(`the gateway exited (${code}) before its start line:\n${stderr}`));
      });
      createInterface({ input: child.stdout }).on("line", (line) => {
        if (!line.includes("listening on")) return;
        const ms = performance.now() - t0;
        clearTimeout(timer);
        found({ ms, rssKb: vmRssKb(child.pid ?? -1) });
      });
    });
    return sample;
  } finally {
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(killer);
  }
}

function quantile(sorted: number[], q: number): number {
  // Nearest rank: the value below which a fraction q of the samples lie.
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

function summary(samples: Sample[]): { msP50: number; msP90: number; rssP50: number; rssP90: number } {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const rss = samples.map((s) => s.rssKb / 1024).sort((a, b) => a - b);
  return { msP50: quantile(ms, 0.5), msP90: quantile(ms, 0.9), rssP50: quantile(rss, 0.5), rssP90: quantile(rss, 0.9) };
}

const upstream = await tinyUpstream();
try {
  const samples = new Map<string, Sample[]>(DISTS.map((d) => [d, []]));
  for (let run = 0; run < WARMUP + RUNS; run++) {
    for (const dist of DISTS) {
      const sample = await startOnce(dist, upstream.url);
      if (run >= WARMUP) samples.get(dist)?.push(sample);
    }
  }
  console.log(`${RUNS} starts per build (after ${WARMUP} warm-up), Node ${process.version}\n`);
  console.log('| build | start to "listening on", median | p90 | RSS then, median | p90 |');
  console.log("|---|---:|---:|---:|---:|");
  for (const [dist, list] of samples) {
    const s = summary(list);
    console.log(
      `| ${dist} | ${s.msP50.toFixed(0)} ms | ${s.msP90.toFixed(0)} ms | ${s.rssP50.toFixed(1)} MiB | ${s.rssP90.toFixed(1)} MiB |`,
    );
  }
} finally {
  await upstream.close();
}
