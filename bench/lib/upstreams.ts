// The MCP servers the bench proxies to: our fast upstream (so that the upstream
// never limits a measurement) and server-everything (for realism).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports.js";
import { startChild } from "./procs.js";
import type { Child } from "./procs.js";
import { ROOT } from "./paths.js";

export type UpstreamKind = "fast" | "everything";

export interface RunningUpstream {
  kind: UpstreamKind;
  url: string;
  child: Child;
}

/** Parses the `{"port":N}` line that bench/fast-upstream.ts and bench/floor.ts print. */
export function portLine(line: string): number | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === "object" && value !== null && "port" in value && typeof value.port === "number")
      return value.port;
  } catch {
    // not our line
  }
  return undefined;
}

/** `args`: bench/fast-upstream.ts options (e.g. `--tools 50`). */
export async function startFastUpstream(args: readonly string[] = []): Promise<RunningUpstream> {
  const { child, ready: port } = await startChild({
    name: "fast-upstream",
    command: process.execPath,
    args: ["--import", "tsx", join(ROOT, "bench/fast-upstream.ts"), ...args],
    cwd: ROOT,
    ready: { line: portLine },
  });
  return { kind: "fast", url: `http://127.0.0.1:${port}/mcp`, child };
}

const EVERYTHING_ENTRY = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

export async function startEverything(): Promise<RunningUpstream> {
  if (!existsSync(EVERYTHING_ENTRY))
    throw new Error(`server-everything is not installed (${EVERYTHING_ENTRY}); run npm install`);
  const port = await freePort();
  const { child } = await startChild({
    name: "server-everything",
    command: process.execPath,
    args: [EVERYTHING_ENTRY, "streamableHttp"],
    cwd: ROOT,
    env: { PORT: String(port) },
    // It logs a line per request; startChild drains them so its pipe never fills.
    ready: { line: (line) => (line.includes(`listening on port ${port}`) ? true : undefined) },
  });
  return { kind: "everything", url: `http://127.0.0.1:${port}/mcp`, child };
}

const PROTOCOL_VERSION = "2025-11-25";

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/**
 * Opens a legacy MCP session at `url` (initialize + notifications/initialized)
 * and returns the headers every later request of that session must carry.
 * Done through each proxy separately, because a proxy may mint its own ids.
 */
export async function openSession(url: string): Promise<Record<string, string>> {
  const init = await fetch(url, {
    method: "POST",
    headers: MCP_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "bench", version: "0.0.0" } },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await init.text();
  const sessionId = init.headers.get("mcp-session-id");
  if (!init.ok || sessionId === null)
    throw new Error(`initialize at ${url} failed: ${init.status} ${text.slice(0, 300)}`);
  const version = /"protocolVersion"\s*:\s*"([^"]+)"/.exec(text)?.[1] ?? PROTOCOL_VERSION;
  const headers = { "Mcp-Session-Id": sessionId, "MCP-Protocol-Version": version };
  const note = await fetch(url, {
    method: "POST",
    headers: { ...MCP_HEADERS, ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    signal: AbortSignal.timeout(10_000),
  });
  await note.arrayBuffer();
  if (!note.ok) throw new Error(`notifications/initialized at ${url} failed: ${note.status}`);
  return headers;
}
