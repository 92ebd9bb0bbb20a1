// The harness's own MCP client for setting up task scenarios (creating
// thousands of tasks, checking which still resolve). undici Pool.request over
// keep-alive connections, bounded concurrency; never used for a measured
// figure of latency or throughput (wrk does those).
import { Pool } from "undici";

export const MODERN_VERSION = "2026-07-28";
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

export type Json = Record<string, unknown>;

const META: Json = {
  "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
  "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS_EXTENSION]: {} } },
  "io.modelcontextprotocol/clientInfo": { name: "bench", version: "0.0.0" },
};

export function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface RpcReply {
  status: number;
  /** Bytes of the response body. */
  bodyBytes: number;
  result: Json | undefined;
  error: Json | undefined;
}

/** The JSON-RPC response with `id` in a JSON or SSE body. */
function responseIn(text: string, contentType: string, id: number): Json | undefined {
  const candidates: unknown[] = [];
  if (contentType.includes("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      try {
        candidates.push(JSON.parse(line.slice(5).trim()));
      } catch {
        // not JSON: not a message
      }
    }
  } else if (text !== "") {
    try {
      candidates.push(JSON.parse(text));
    } catch {
      return undefined;
    }
  }
  const found = candidates.find((m) => isRecord(m) && m["id"] === id && ("result" in m || "error" in m));
  return isRecord(found) ? found : undefined;
}

export class McpClient {
  private readonly pool: Pool;
  private readonly path: string;
  private nextId = 1;

  constructor(url: string, connections: number) {
    const u = new URL(url);
    this.path = u.pathname;
    this.pool = new Pool(u.origin, {
      connections,
      keepAliveTimeout: 30_000,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
      connect: { timeout: 10_000 },
    });
  }

  /** A 2026-07-28 request declaring the Tasks extension. */
  async modern(method: string, params: Json, mcpName: string | undefined): Promise<RpcReply> {
    const id = this.nextId++;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN_VERSION,
      "mcp-method": method,
    };
    if (mcpName !== undefined) headers["mcp-name"] = mcpName;
    const body = JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } });
    const res = await this.pool.request({ path: this.path, method: "POST", headers, body });
    const text = await res.body.text();
    const contentType = String(res.headers["content-type"] ?? "");
    const message = responseIn(text, contentType, id);
    return {
      status: res.statusCode,
      bodyBytes: Buffer.byteLength(text),
      result: message !== undefined && isRecord(message["result"]) ? message["result"] : undefined,
      error: message !== undefined && isRecord(message["error"]) ? message["error"] : undefined,
    };
  }

  callTool(name: string, args: Json): Promise<RpcReply> {
    return this.modern("tools/call", { name, arguments: args }, name);
  }

  getTask(taskId: string): Promise<RpcReply> {
    return this.modern("tasks/get", { taskId }, taskId);
  }

  /** A tools/call that must come back as a CreateTaskResult; returns the taskId. */
  async createTask(name: string, args: Json): Promise<string> {
    const reply = await this.callTool(name, args);
    const taskId = reply.result?.["taskId"];
    if (reply.result?.["resultType"] !== "task" || typeof taskId !== "string") {
      throw new Error(
        `${name} did not become a task: HTTP ${reply.status} ${JSON.stringify(reply.error ?? reply.result)}`,
      );
    }
    return taskId;
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

/** Runs `fn(0..count-1)` with at most `concurrency` at a time; the first failure stops the rest. */
export async function forEachLimit(
  count: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < count) {
      const i = next++;
      try {
        await fn(i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Creates `count` tasks, `concurrency` at a time, and returns their ids in
 * creation order. A refusal at a task limit is retried after a short pause
 * (bounded), since `always` tasks of a fast upstream finish just after they
 * are answered.
 */
export async function createTasks(
  client: McpClient,
  count: number,
  concurrency: number,
  name: string,
  args: Json,
): Promise<{ ids: string[]; retries: number; seconds: number }> {
  const ids = new Array<string>(count);
  let retries = 0;
  const started = performance.now();
  await forEachLimit(count, concurrency, async (i) => {
    for (let attempt = 0; ; attempt++) {
      try {
        ids[i] = await client.createTask(name, args);
        return;
      } catch (err) {
        if (attempt >= 20 || !String(err).includes("tasks.maxTasks")) throw err;
        retries += 1;
        await sleep(20);
      }
    }
  });
  return { ids, retries, seconds: (performance.now() - started) / 1000 };
}

export interface Resolution {
  checked: number;
  byStatus: Record<string, number>;
  /** Answered -32602 (unknown, expired or evicted). */
  notFound: number;
  other: number;
  /** One full tasks/get result, to learn the record size from. */
  sample: Json | undefined;
}

/** tasks/get for each id; counts what each answers. */
export async function resolveTasks(
  client: McpClient,
  ids: readonly string[],
  concurrency: number,
): Promise<Resolution> {
  const out: Resolution = { checked: 0, byStatus: {}, notFound: 0, other: 0, sample: undefined };
  await forEachLimit(ids.length, concurrency, async (i) => {
    const id = ids[i];
    if (id === undefined) return;
    const reply = await client.getTask(id);
    out.checked += 1;
    const status = reply.result?.["status"];
    if (typeof status === "string") {
      out.byStatus[status] = (out.byStatus[status] ?? 0) + 1;
      if (status === "completed") out.sample ??= reply.result;
    } else if (reply.error?.["code"] === -32602) {
      out.notFound += 1;
    } else {
      out.other += 1;
    }
  });
  return out;
}
