// The tasks tour: a 2026-07-28 client that declares the Tasks extension calls a
// slow tool through the gateway. The call runs past the gateway's threshold, so
// the answer is a task handle; the client then polls tasks/get and watches
// statusMessage follow the upstream's progress until the result arrives.
//
//   node --import tsx examples/tasks-walkthrough.ts <gateway-mcp-url>
//
// Plain fetch on purpose: every message on the wire is visible here.
import { pathToFileURL } from "node:url";

const VERSION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";

interface RpcAnswer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

let nextId = 1;

async function rpc(url: string, method: string, params: Record<string, unknown>, name?: string): Promise<RpcAnswer> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": method,
      ...(name !== undefined && { "mcp-name": name }),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": VERSION,
          "io.modelcontextprotocol/clientInfo": { name: "tasks-walkthrough", version: "1.0.0" },
          // Declaring the extension is what allows the gateway to answer with a task.
          "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
        },
      },
    }),
  });
  return (await res.json()) as RpcAnswer;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runTasksWalkthrough(url: string, log: (line: string) => void = console.log): Promise<void> {
  log(`1. server/discover at ${url}`);
  const discover = await rpc(url, "server/discover", {});
  const caps = discover.result?.capabilities as { extensions?: Record<string, unknown> } | undefined;
  log(`   the gateway advertises ${TASKS}: ${caps?.extensions?.[TASKS] !== undefined ? "yes" : "no"}`);

  log("2. tools/call slow_task (4 s, 4 steps), past the gateway's threshold:");
  const call = await rpc(
    url,
    "tools/call",
    { name: "slow_task", arguments: { durationMs: 4000, steps: 4 } },
    "slow_task",
  );
  const handle = call.result;
  if (handle?.resultType !== "task" || typeof handle.taskId !== "string") {
    throw new Error(`expected a task handle, got ${JSON.stringify(call)}`);
  }
  log(
    `   ↳ resultType "task", taskId ${handle.taskId}, status ${String(handle.status)}, poll every ${String(handle.pollIntervalMs)} ms`,
  );

  log("3. polling tasks/get:");
  const interval = typeof handle.pollIntervalMs === "number" ? handle.pollIntervalMs : 1000;
  let lastMessage: unknown;
  for (;;) {
    const got = await rpc(url, "tasks/get", { taskId: handle.taskId }, handle.taskId);
    const task = got.result;
    if (!task) throw new Error(`tasks/get failed: ${JSON.stringify(got.error)}`);
    if (task.statusMessage !== lastMessage || task.status !== "working") {
      log(`   ↳ ${String(task.status)}${task.statusMessage !== undefined ? ` — ${String(task.statusMessage)}` : ""}`);
      lastMessage = task.statusMessage;
    }
    if (task.status === "completed") {
      const result = task.result as { content?: Array<{ text?: string }> } | undefined;
      log(`4. the result: ${result?.content?.[0]?.text ?? JSON.stringify(result)}`);
      return;
    }
    if (task.status === "failed" || task.status === "cancelled") throw new Error(`task ended ${String(task.status)}`);
    await sleep(interval);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const url = process.argv[2];
  if (!url) {
    console.error("usage: tsx examples/tasks-walkthrough.ts <gateway-mcp-url>");
    process.exit(2);
  }
  runTasksWalkthrough(url).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(String(err));
      process.exit(1);
    },
  );
}
