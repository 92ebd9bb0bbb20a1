// SSE parsers side by side (issue 14): the gateway's own (src/upstream/sse-parser.ts)
// and eventsource-parser (the one the MCP SDKs use), fed the same byte streams.
//
//   node --import tsx bench/sse-parser.ts [--reps 7] [--ms 150]
//
// Streams: 2,000 events of ~1 KB (`event`, `id`, one JSON `data` line with some
// non-ASCII text) and 20 events of 100 KB, with LF or CRLF line ends, cut into
// 16 KB chunks (what a socket read gives) or at seeded random points of 1 to
// 4,096 bytes (lines, CRLF pairs and UTF-8 sequences split anywhere). Both
// parsers get bytes: eventsource-parser takes strings, so a streaming
// TextDecoder sits in front of it, as it would on an HTTP body.
//
// For each stream and parser: `--reps` repetitions (the parsers interleaved),
// each parsing the stream over and over for at least `--ms` ms; the median and
// the spread (min–max) of MB/s and events/s, on the process's CPU time (the
// wall clock on a shared machine counts other processes' time too). Allocation per event: one pass in
// a fresh heap with young-generation GC made unlikely (the process re-spawns
// itself with --expose-gc and a large semi-space) and the pass repeated if a GC
// happened during it: heapUsed after − before, per event. CPU figures depend on
// what else the machine runs; compare the two parsers within one run.
import { spawnSync } from "node:child_process";
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createParser } from "eventsource-parser";
import { SseParser } from "../src/upstream/sse-parser.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  // Re-run with the flags the allocation figure needs; the child does the work.
  const args = [
    "--expose-gc",
    "--min-semi-space-size=128",
    "--max-semi-space-size=128",
    ...process.execArgv,
    ...process.argv.slice(1),
  ];
  const child = spawnSync(process.execPath, args, { stdio: "inherit" });
  process.exit(child.status ?? 1);
}

const { values } = parseArgs({
  options: { reps: { type: "string", default: "7" }, ms: { type: "string", default: "150" } },
});
const REPS = Number(values.reps);
const MIN_MS = Number(values.ms);

// ---- streams ---------------------------------------------------------------

/** A small deterministic PRNG (mulberry32), so every run cuts the same chunks. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function smallEvents(count: number): string {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const message = {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: {
        progressToken: `call-${i}-progress`,
        progress: i,
        total: count,
        message: `Step ${i}: reading résumé files ${"·€".repeat(8)} ${"x".repeat(820)}`,
      },
    };
    parts.push(`event: message\nid: 7f3c2a9e-${i}\ndata: ${JSON.stringify(message)}\n\n`);
  }
  return parts.join("");
}

function largeEvents(count: number): string {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const text = `Row ${i} — ${"lorem ipsum dolor sit amet, ".repeat(3_640)}`;
    const message = { jsonrpc: "2.0", id: `req-${i}`, result: { content: [{ type: "text", text }] } };
    parts.push(`event: message\nid: big-${i}\ndata: ${JSON.stringify(message)}\n\n`);
  }
  return parts.join("");
}

function fixedChunks(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.byteLength; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

function randomChunks(bytes: Buffer, seed: number): Buffer[] {
  const next = prng(seed);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.byteLength;) {
    const size = 1 + Math.floor(next() * 4_096);
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}

interface Stream {
  name: string;
  chunks: Buffer[];
  bytes: number;
  events: number;
}

function stream(name: string, text: string, events: number, cut: (b: Buffer) => Buffer[]): Stream {
  const bytes = Buffer.from(text, "utf8");
  // Chunks are copies, as a socket's would be, not views of one big buffer.
  return { name, chunks: cut(bytes).map((c) => Buffer.from(c)), bytes: bytes.byteLength, events };
}

const SMALL = smallEvents(2_000);
const LARGE = largeEvents(20);
const crlf = (s: string): string => s.replaceAll("\n", "\r\n");
const STREAMS: Stream[] = [
  stream("2,000 × 1 KB, LF, 16 KB chunks", SMALL, 2_000, (b) => fixedChunks(b, 16_384)),
  stream("2,000 × 1 KB, LF, random cuts", SMALL, 2_000, (b) => randomChunks(b, 1)),
  stream("2,000 × 1 KB, CRLF, random cuts", crlf(SMALL), 2_000, (b) => randomChunks(b, 2)),
  stream("20 × 100 KB, LF, 16 KB chunks", LARGE, 20, (b) => fixedChunks(b, 16_384)),
  stream("20 × 100 KB, CRLF, random cuts", crlf(LARGE), 20, (b) => randomChunks(b, 3)),
];

// ---- parsers ---------------------------------------------------------------

/** What a parse pass reports, to check that both parsers saw the same events. */
interface Tally {
  events: number;
  dataChars: number;
  lastId: string | undefined;
}

type Parse = (chunks: Buffer[]) => Tally;

const PARSERS: Array<{ name: string; parse: Parse }> = [
  {
    name: "hand-written (SseParser)",
    parse: (chunks) => {
      const tally: Tally = { events: 0, dataChars: 0, lastId: undefined };
      const parser = new SseParser();
      for (const chunk of chunks) {
        for (const event of parser.push(chunk)) {
          tally.events++;
          tally.dataChars += event.data.length;
          tally.lastId = event.id;
        }
      }
      parser.end();
      return tally;
    },
  },
  {
    name: "eventsource-parser 3.1.1",
    parse: (chunks) => {
      const tally: Tally = { events: 0, dataChars: 0, lastId: undefined };
      const decoder = new TextDecoder("utf-8");
      const parser = createParser({
        onEvent: (event) => {
          tally.events++;
          tally.dataChars += event.data.length;
          tally.lastId = event.id;
        },
      });
      for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
      parser.feed(decoder.decode());
      return tally;
    },
  },
];

// ---- measuring -------------------------------------------------------------

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let gcs = 0;
new PerformanceObserver((list) => {
  gcs += list.getEntries().length;
}).observe({ entryTypes: ["gc"] });

/** CPU time of this process so far, in ms (less disturbed by other processes than the wall clock). */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1_000;
}

/** Parses the stream repeatedly for at least MIN_MS of CPU time; returns CPU seconds per pass. */
function timed(parse: Parse, s: Stream): number {
  let passes = 0;
  const start = cpuMs();
  let elapsed = 0;
  do {
    parse(s.chunks);
    passes++;
    elapsed = cpuMs() - start;
  } while (elapsed < MIN_MS);
  return elapsed / 1_000 / passes;
}

/** Heap allocated by one pass, per event; undefined if every try saw a GC. */
async function allocationPerEvent(parse: Parse, s: Stream): Promise<number | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    (gc as () => void)();
    // GC entries are delivered asynchronously: let the forced one's arrive first.
    await sleep(20);
    const seen = gcs;
    const before = process.memoryUsage().heapUsed;
    parse(s.chunks);
    const after = process.memoryUsage().heapUsed;
    await sleep(20);
    if (gcs === seen) return (after - before) / s.events;
  }
  return undefined;
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const fmt = (x: number, digits = 0): string =>
  x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function main(): Promise<void> {
  console.log(`Node ${process.version}, ${REPS} repetitions of ≥ ${MIN_MS} ms per stream and parser\n`);
  const rows: string[][] = [];
  for (const s of STREAMS) {
    // Same events from both, before anything is timed.
    const tallies = PARSERS.map((p) => p.parse(s.chunks));
    for (const t of tallies) {
      if (t.events !== s.events || t.dataChars !== tallies[0]?.dataChars || t.lastId !== tallies[0]?.lastId) {
        throw new Error(`${s.name}: the parsers disagree: ${JSON.stringify(tallies)}`);
      }
    }
    for (const p of PARSERS) timed(p.parse, s); // warm-up
    const perPass: number[][] = PARSERS.map(() => []);
    for (let r = 0; r < REPS; r++) PARSERS.forEach((p, i) => perPass[i]?.push(timed(p.parse, s)));
    for (const [i, p] of PARSERS.entries()) {
      const mbs = (perPass[i] ?? []).map((sec) => s.bytes / 1e6 / sec);
      const evs = (perPass[i] ?? []).map((sec) => s.events / sec);
      const alloc = await allocationPerEvent(p.parse, s);
      rows.push([
        s.name,
        p.name,
        `${fmt(median(mbs))} (${fmt(Math.min(...mbs))}–${fmt(Math.max(...mbs))})`,
        `${fmt(median(evs))} (${fmt(Math.min(...evs))}–${fmt(Math.max(...evs))})`,
        alloc === undefined ? "n/a (GC)" : `${fmt(alloc)} B (${fmt(alloc / (s.bytes / s.events), 2)}× its bytes)`,
      ]);
    }
  }
  const header = ["stream", "parser", "MB/s median (min–max)", "events/s median (min–max)", "heap allocated per event"];
  console.log(`| ${header.join(" | ")} |`);
  console.log(`|${header.map((_, i) => (i < 2 ? "---" : "---:")).join("|")}|`);
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
}

await main();
