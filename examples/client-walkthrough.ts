// A guided tour of an MCP server through the gateway, using the official
// SDK 1.x client (the legacy 2025-11-25 protocol, with sessions).
//
//   tsx examples/client-walkthrough.ts http://127.0.0.1:8642/mcp
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

type CallResult = Awaited<ReturnType<Client["callTool"]>>;

// Notifications sent outside any request ride the session's GET stream,
// which the client opens in the background; give them a moment to arrive.
const NOTIFY_WAIT_MS = 2000;

const CANNED_NAME = "Ada Lovelace";

function textOf(result: CallResult): string {
  // callTool's type also admits the pre-2024 `toolResult` shape, and its index
  // signature defeats `in` narrowing, so let the SDK's schema tell them apart.
  const parsed = CallToolResultSchema.safeParse(result);
  if (!parsed.success) return JSON.stringify(result);
  const text = parsed.data.content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("\n");
  return parsed.data.isError ? `(tool error) ${text}` : text;
}

export async function runWalkthrough(url: string, log: (line: string) => void = console.log): Promise<void> {
  const client = new Client(
    { name: "mcp-task-gateway-walkthrough", version: "1.0.0" },
    // Declaring elicitation lets the server ask us questions mid-call (ask_user).
    { capabilities: { elicitation: { form: {} } } },
  );

  client.setRequestHandler(ElicitRequestSchema, (request) => {
    log(`     ↳ the server asks: "${request.params.message}" — answering "${CANNED_NAME}"`);
    return { action: "accept", content: { name: CANNED_NAME } };
  });

  let notified: () => void = () => {};
  const listChanged = new Promise<void>((resolve) => (notified = resolve));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    log("     ↳ notification: resources/list_changed");
    notified();
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    log(
      `     ↳ log (${n.params.level}): ${typeof n.params.data === "string" ? n.params.data : JSON.stringify(n.params.data)}`,
    );
  });

  const transport = new StreamableHTTPClientTransport(new URL(url));
  log(`1. Connecting to ${url} …`);
  await client.connect(transport);
  const info = client.getServerVersion();
  log(
    `   connected to ${info?.name ?? "?"} ${info?.version ?? ""} (protocol ${transport.protocolVersion ?? "?"}, session ${transport.sessionId ?? "none"})`,
  );

  try {
    const { tools } = await client.listTools();
    log(`2. The server offers ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`);

    const echo = await client.callTool({ name: "echo", arguments: { text: "hello through the gateway" } });
    log(`3. echo (a quick tool) answered: ${textOf(echo)}`);

    log("4. slow_task runs for 3 s and reports progress as it goes:");
    const started = Date.now();
    const slow = await client.callTool({ name: "slow_task", arguments: { durationMs: 3000, steps: 3 } }, undefined, {
      onprogress: (p) => log(`     ↳ progress ${p.progress}/${p.total ?? "?"}${p.message ? ` — ${p.message}` : ""}`),
    });
    log(`   slow_task answered after ${Date.now() - started} ms: ${textOf(slow)}`);

    log("5. ask_user needs input from us while it runs (elicitation):");
    const asked = await client.callTool({ name: "ask_user", arguments: { question: "What is your name?" } });
    log(`   ask_user answered: ${textOf(asked)}`);

    log("6. notify makes the server speak up outside any request:");
    const notify = await client.callTool({ name: "notify", arguments: {} });
    log(`   notify answered: ${textOf(notify)}`);
    const arrived = await Promise.race([
      listChanged.then(() => true),
      new Promise<false>((resolve) => setTimeout(resolve, NOTIFY_WAIT_MS, false).unref()),
    ]);
    if (!arrived) log(`     (no notification within ${NOTIFY_WAIT_MS} ms: the GET stream may not be open)`);

    const readme = await client.readResource({ uri: "demo://readme" });
    const first = readme.contents[0];
    const firstLine = first && "text" in first ? (first.text.split("\n")[0] ?? "") : "(binary)";
    log(`7. Read demo://readme: ${firstLine}`);
  } finally {
    // DELETE the session so the server can free it, then drop the connection.
    await transport.terminateSession().catch((err: unknown) => log(`   (could not end the session: ${String(err)})`));
    await client.close();
    log("8. Session ended. That's the tour!");
  }
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  const url = process.argv[2];
  if (url === undefined) {
    console.error("usage: tsx examples/client-walkthrough.ts <mcp-url>   e.g. http://127.0.0.1:8642/mcp");
    process.exit(2);
  }
  runWalkthrough(url).catch((err: unknown) => {
    // fetch hides the useful part ("connect ECONNREFUSED …") in `cause`.
    const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : "";
    console.error(`walkthrough failed: ${err instanceof Error ? err.message : String(err)}${cause}`);
    process.exit(1);
  });
}
