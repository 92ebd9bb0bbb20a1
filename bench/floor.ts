// The "floor": the barest pass-through on the gateway's own stack (hono +
// @hono/node-server + undici Pool.request). Whatever the gateway costs beyond
// this is gateway logic; whatever this costs beyond nginx is the stack itself.
//
// Run: node --import tsx bench/floor.ts --upstream http://127.0.0.1:PORT/mcp
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
import { serve } from "@hono/node-server";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { announcePort, exitWithParent } from "./lib/child-lifetime.js";

const { values } = parseArgs({ options: { upstream: { type: "string" }, port: { type: "string", default: "0" } } });
if (values.upstream === undefined) throw new Error("--upstream URL is required");
const upstream = new URL(values.upstream);
const pool = new Pool(upstream.origin, { connections: 256 });

// Hop-by-hop headers belong to one connection and must not be forwarded.
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host", "upgrade", "proxy-connection", "te"]);
function forwardable(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP.has(name)) out[name] = value;
  return out;
}

// Plain 'data' events: an async iterator over the request costs more per request.
function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.once("end", () =>
      resolve(chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks)),
    );
    incoming.once("error", reject);
  });
}

const app = new Hono<{ Bindings: HttpBindings }>();
app.all("/mcp", async (c) => {
  const { incoming, outgoing } = c.env;
  const body = await readBody(incoming);
  const res = await pool.request({
    path: upstream.pathname,
    method: c.req.method,
    headers: forwardable(incoming.headers),
    body: body.length > 0 ? body : null,
  });
  outgoing.writeHead(res.statusCode, forwardable(res.headers));
  // Stream the upstream body straight into the node response. pipe() rather than
  // stream.pipeline(): on Node 20 pipeline builds an AbortController and a
  // DOMException per call, which doubled this proxy's CPU per request. The two
  // listeners do what pipeline would: tear down the other side on failure.
  res.body.once("error", () => outgoing.destroy());
  outgoing.once("close", () => {
    if (!outgoing.writableFinished) res.body.destroy();
  });
  res.body.pipe(outgoing);
  return RESPONSE_ALREADY_SENT;
});

const server = serve({ fetch: app.fetch, port: Number(values.port), hostname: "127.0.0.1" }, (info) =>
  announcePort(info.port),
);
server.on("error", (err) => {
  console.error(err);
  process.exit(1);
});
exitWithParent();
