// The floor under a working task's memory (issue 14): what one held upstream
// call costs a Node process that does nothing else, measured in this process:
// an undici Pool with one connection per call (as the gateway's), N POSTs of
// tools/call that bench/tasks/legacy-upstream.ts holds open (SSE headers, no
// answer), each body left unread (`--read none`), read by a pending for-await
// (`iterate`, as the gateway reads it) or by a 'data' listener (`data`).
//
//   node --expose-gc --import tsx bench/investigations/socket-floor.ts [--calls 5000] [--read none|iterate|data]
//
// Prints RSS and live heap (after a forced GC) per call.
import { parseArgs } from "node:util";
import { Pool } from "undici";
import type { Dispatcher } from "undici";
import { installCleanup, stopAll } from "../lib/procs.js";
import { openSession } from "../lib/upstreams.js";
import { startLegacyUpstream, upstreamStats } from "../tasks/children.js";
import { forEachLimit } from "../tasks/client.js";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "5000" }, read: { type: "string", default: "none" } },
});
const n = Number(values.calls);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function live(): { rss: number; heap: number; external: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with node --expose-gc");
  gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, external: m.external };
}

async function main(): Promise<void> {
  installCleanup();
  const upstream = await startLegacyUpstream();
  try {
    const session = await openSession(upstream.url);
    const u = new URL(upstream.url);
    const pool = new Pool(u.origin, { connections: n + 100 });
    const bodies: Dispatcher.ResponseData["body"][] = [];
    const call = async (i: number): Promise<void> => {
      const res = await pool.request({
        path: u.pathname,
        method: "POST",
        headers: { ...session, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i,
          method: "tools/call",
          params: { name: "hold", arguments: { hold: true }, _meta: { progressToken: `p${i}` } },
        }),
      });
      bodies.push(res.body);
      if (values.read === "iterate")
        void (async () => {
          const chunks = res.body[Symbol.asyncIterator]();
          while (!(await chunks.next()).done) {
            /* held */
          }
        })().catch(() => undefined);
      else if (values.read === "data") res.body.on("data", () => undefined).on("error", () => undefined);
    };
    await forEachLimit(50, 10, call);
    await sleep(500);
    const before = live();
    await forEachLimit(n, 64, (i) => call(i + 100));
    while ((await upstreamStats(upstream.url)).held < n + 50) await sleep(200);
    await sleep(1_000);
    const after = live();
    const per = (k: keyof typeof before): number => Math.round((after[k] - before[k]) / n);
    process.stdout.write(
      `${JSON.stringify({ calls: n, read: values.read, rssPerCall: per("rss"), heapPerCall: per("heap"), externalPerCall: per("external"), bodies: bodies.length })}\n`,
    );
    await pool.destroy();
  } finally {
    await stopAll();
  }
}

await main();
