// The "floor": the barest pass-through on the gateway's own stack (hono +
// @hono/node-server + undici Pool.request). Whatever the gateway costs beyond
// this is gateway logic; whatever this costs beyond nginx is the stack itself.
//
// Run: node --import tsx bench/floor.ts --upstream http://127.0.0.1:PORT/mcp
// Prints one JSON line `{"port":N}` on stdout once it listens on 127.0.0.1.
import { serve } from '@hono/node-server';
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { announcePort, exitWithParent } from './lib/child-lifetime.js';

const { values } = parseArgs({ options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (values.upstream === undefined) throw new Error('--upstream URL is required');
const upstream = new URL(values.upstream);
const pool = new Pool(upstream.origin, { connections: 256 });

// Hop-by-hop headers belong to one connection and must not be forwarded.
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade', 'proxy-connection', 'te']);
function forwardable(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP.has(name)) out[name] = value;
  return out;
}

const app = new Hono<{ Bindings: HttpBindings }>();
app.all('/mcp', async (c) => {
  const { incoming, outgoing } = c.env;
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const res = await pool.request({
    path: upstream.pathname,
    method: c.req.method as 'POST',
    headers: forwardable(incoming.headers),
    body: chunks.length > 0 ? Buffer.concat(chunks) : null,
  });
  outgoing.writeHead(res.statusCode, forwardable(res.headers));
  // Stream the upstream body straight into the node response; pipeline tears
  // both down if the client goes away mid-response.
  pipeline(res.body, outgoing, () => {});
  return RESPONSE_ALREADY_SENT;
});

const server = serve({ fetch: app.fetch, port: Number(values.port), hostname: '127.0.0.1' }, (info) => announcePort(info.port));
server.on('error', (err) => { console.error(err); process.exit(1); });
exitWithParent();
