// Raw 2026-07-28 JSON-RPC over fetch, for tests that need exact answers (task
// handles, tasks/get) rather than what a client library makes of them.
import { modernHeaders, modernMeta } from "./modern-http.js";
import { pollUntil } from "./poll.js";

const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
/** Client capabilities that declare the Tasks extension. */
const TASK_CAPS = { extensions: { [TASKS_EXTENSION]: {} } };

export interface RpcAnswer {
  status: number;
  body: {
    id?: unknown;
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
  text: string;
  headers: Headers;
}

let nextId = 1;

/** One modern request; `name` goes in Mcp-Name (tool name or task id). */
export async function modernRpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: { name?: string; caps?: Record<string, unknown>; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<RpcAnswer> {
  const res = await fetch(url, {
    method: "POST",
    ...(opts.signal && { signal: opts.signal }),
    headers: { ...modernHeaders(method, opts.name), ...opts.headers },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: { ...params, _meta: modernMeta({ capabilities: opts.caps ?? TASK_CAPS }) },
    }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as RpcAnswer["body"], text, headers: res.headers };
}

/** A tools/call; with TASK_CAPS unless told otherwise. */
export function callTool(
  url: string,
  name: string,
  args: Record<string, unknown>,
  opts: { caps?: Record<string, unknown>; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<RpcAnswer> {
  return modernRpc(url, "tools/call", { name, arguments: args }, { name, ...opts });
}

/** tasks/get until the task is no longer working (bounded); returns the task. */
export async function settledTask(
  url: string,
  taskId: string,
  headers?: Record<string, string>,
  limitMs = 10_000,
): Promise<Record<string, unknown>> {
  const last = await pollUntil(
    () => modernRpc(url, "tasks/get", { taskId }, { name: taskId, ...(headers && { headers }) }),
    (a) => a.body.result === undefined || a.body.result.status !== "working",
    limitMs,
  );
  if (!last.body.result) throw new Error(`tasks/get failed: ${last.text}`);
  return last.body.result;
}
