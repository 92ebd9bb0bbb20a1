// A 2025-06-18 (legacy) session over an undici Pool, as the stdio and session benches open one: initialize,
// then notifications/initialized, and plain JSON-RPC POSTs on it.
import type { Pool } from "undici";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
};

/** One POST of `body` to `path`, its answer read whole. */
export async function post(
  pool: Pool,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const res = await pool.request({
    path,
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** A new session at `path`; returns the headers its requests carry (session id, protocol version). */
export async function openSession(pool: Pool, path: string): Promise<Record<string, string>> {
  const init = await post(pool, path, INIT);
  const sid = init.headers["mcp-session-id"];
  if (init.status !== 200 || typeof sid !== "string")
    throw new Error(`initialize: ${init.status} ${init.text.slice(0, 200)}`);
  const headers = { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
  await post(pool, path, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
  return headers;
}
