// Real stdio MCP servers from npm (server-everything, server-memory), a scripted
// fault server, a gateway in front of one, and the same SDK 1.x client over
// StdioClientTransport for direct comparison.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { startGateway, type GatewayConfigInput, type GatewayOptions } from "../../src/index.js";
import { DEFAULT_ELICIT_RESULT, DEFAULT_ROOTS, DEFAULT_SAMPLE_RESULT } from "./sdk-client.js";
import type { TestGateway } from "./gateway.js";

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

/** server-everything in stdio mode (its default). */
export function everythingCommand(): string[] {
  return [process.execPath, join(packageDir("@modelcontextprotocol/server-everything"), "dist", "index.js"), "stdio"];
}

/** @modelcontextprotocol/server-memory (a knowledge graph in MEMORY_FILE_PATH). */
export function memoryCommand(): string[] {
  const pkg = JSON.parse(
    readFileSync(join(packageDir("@modelcontextprotocol/server-memory"), "package.json"), "utf8"),
  ) as { bin: Record<string, string> };
  return [
    process.execPath,
    join(packageDir("@modelcontextprotocol/server-memory"), Object.values(pkg.bin)[0] as string),
  ];
}

const FAULT_SERVER = fileURLToPath(new URL("../fixtures/stdio-fault-server.mjs", import.meta.url));

/** The scripted fault server; `mode` as in test/fixtures/stdio-fault-server.mjs. */
export function faultCommand(mode?: string): string[] {
  return [process.execPath, FAULT_SERVER, ...(mode ? [mode] : [])];
}

export type StdioUpstreamOverrides = Omit<NonNullable<GatewayConfigInput["upstream"]>, "url" | "command">;

/** A gateway on 127.0.0.1:0 in front of a stdio command, silent logs unless told. */
export async function startStdioGateway(
  command: string[],
  overrides: {
    upstream?: StdioUpstreamOverrides;
    tasks?: GatewayConfigInput["tasks"];
    log?: GatewayConfigInput["log"];
    logger?: GatewayOptions["logger"];
  } = {},
): Promise<TestGateway> {
  return startGateway(
    {
      upstream: { command, ...overrides.upstream },
      server: { host: "127.0.0.1", port: 0 },
      log: overrides.log ?? { level: "silent" },
      ...(overrides.tasks && { tasks: overrides.tasks }),
    },
    overrides.logger ? { logger: overrides.logger } : {},
  );
}

/**
 * The same SDK 1.x client as connectSdkClient (same capabilities and answers to
 * elicitation, sampling and roots), over StdioClientTransport straight to the command.
 */
export async function connectDirectStdio(
  command: string[],
  env: Record<string, string> = {},
): Promise<{ client: Client; close(): Promise<void> }> {
  const [program, ...args] = command;
  const transport = new StdioClientTransport({
    command: program as string,
    args,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stderr: "ignore",
  });
  const client = new Client(
    { name: "gateway-integration-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(ElicitRequestSchema, () => DEFAULT_ELICIT_RESULT);
  client.setRequestHandler(CreateMessageRequestSchema, () => DEFAULT_SAMPLE_RESULT);
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: DEFAULT_ROOTS }));
  await client.connect(transport);
  let closing: Promise<void> | undefined;
  return { client, close: () => (closing ??= client.close().catch(() => undefined)) };
}

/** Whether a process (or, with a negative id, any process of that group) still exists; a zombie counts as existing. */
export function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `pid` is a zombie (exited, not reaped). Linux only; false elsewhere or when it is gone. */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/** JSON-RPC POST to a gateway (legacy framing), answer parsed from JSON or the first SSE message with an id. */
export async function rpc(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; message: Record<string, unknown> | undefined }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let message: Record<string, unknown> | undefined;
  if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (!data) continue;
      const parsed = JSON.parse(data) as Record<string, unknown>;
      if ("result" in parsed || "error" in parsed) message = parsed;
    }
  } else if (text) {
    message = JSON.parse(text) as Record<string, unknown>;
  }
  return { status: res.status, headers: res.headers, message };
}

export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stdio-test", version: "1.0.0" } },
} as const;

/** initialize + notifications/initialized over raw HTTP; the session id. */
export async function openRawSession(url: string): Promise<{ sessionId: string; headers: Record<string, string> }> {
  const init = await rpc(url, INITIALIZE);
  const sessionId = init.headers.get("mcp-session-id");
  if (init.status !== 200 || !sessionId)
    throw new Error(`initialize failed: ${init.status} ${JSON.stringify(init.message)}`);
  const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" };
  await rpc(url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
  return { sessionId, headers };
}

/** Pids of this process's children whose command line contains `marker` (Linux /proc). */
export function childPids(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
