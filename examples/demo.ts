// `npm run demo`: the demo upstream on a free port with the gateway in front.
//
//   node --import tsx examples/demo.ts [--port N] [--walkthrough] [--stdio]
//
// --stdio runs the demo server over stdio instead (examples/demo-stdio-server.ts,
// one process per session), with the gateway's upstream.command.
//
// --walkthrough runs the client tour once through the gateway and exits, so
// the whole chain can be smoke-tested without a terminal.
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { DEFAULT_PORT, startGateway } from "../src/index.js";
import { runWalkthrough } from "./client-walkthrough.js";
import { runTasksWalkthrough } from "./tasks-walkthrough.js";
import { startDemoUpstream } from "./demo-upstream.js";
import { fileURLToPath } from "node:url";

interface DemoArgs {
  port: number;
  walkthrough: boolean;
  stdio: boolean;
}

function parseArgs(argv: readonly string[]): DemoArgs {
  const args: DemoArgs = { port: DEFAULT_PORT, walkthrough: false, stdio: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--walkthrough") {
      args.walkthrough = true;
    } else if (arg === "--stdio") {
      args.stdio = true;
    } else if (arg === "--port") {
      const value = argv[++i];
      const port = Number(value);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new Error(`--port needs a number from 0 to 65535, got ${value ?? "nothing"}`);
      }
      args.port = port;
    } else {
      throw new Error(`unknown argument ${arg ?? ""} (try --port N, --walkthrough, --stdio)`);
    }
  }
  return args;
}

function nextSteps(gatewayUrl: string, upstreamUrl: string): string {
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "curl", version: "0" } },
  });
  return [
    "",
    `  demo upstream   ${upstreamUrl}`,
    `  gateway         ${gatewayUrl}   ← point MCP clients here`,
    "",
    "Take the guided tour in another terminal:",
    `  npx tsx examples/client-walkthrough.ts ${gatewayUrl}`,
    "",
    "Watch a slow call become a task (threshold 1 s here) and poll it to completion:",
    `  npx tsx examples/tasks-walkthrough.ts ${gatewayUrl}`,
    "",
    "Or talk to it by hand (Streamable HTTP wants both media types in Accept;",
    "-i shows the Mcp-Session-Id header to send on later requests):",
    `  curl -i ${gatewayUrl} \\`,
    "    -H 'Content-Type: application/json' \\",
    "    -H 'Accept: application/json, text/event-stream' \\",
    `    -d '${initialize}'`,
    "",
    "Press Ctrl-C to stop.",
    "",
  ].join("\n");
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const upstream = args.stdio
    ? { url: "stdio: examples/demo-stdio-server.ts", close: async () => {} }
    : await startDemoUpstream();
  const root = fileURLToPath(new URL("..", import.meta.url));
  const gateway = await startGateway({
    upstream: args.stdio
      ? {
          command: [
            process.execPath,
            "--import",
            "tsx",
            fileURLToPath(new URL("demo-stdio-server.ts", import.meta.url)),
          ],
          cwd: root,
        }
      : { url: upstream.url },
    server: { host: "127.0.0.1", port: args.port },
    // A low threshold so the demo's 4 s slow_task becomes a task for a client that declares the extension.
    tasks: { thresholdMs: 1_000, pollIntervalMs: 500 },
    // Gateway logs are JSON lines on stderr; in the scripted tour they would
    // only bury the walkthrough's own output.
    log: { level: args.walkthrough ? "warn" : "info" },
  }).catch(async (err: unknown) => {
    await upstream.close();
    const busy = err instanceof Error && "code" in err && err.code === "EADDRINUSE";
    throw busy ? new Error(`port ${args.port} is already in use; pick another with --port N (0 = any free port)`) : err;
  });
  // Gateway first, so no proxied call is left waiting on a vanished upstream.
  const shutdown = async (): Promise<void> => {
    await gateway.close();
    await upstream.close();
  };

  if (args.walkthrough) {
    try {
      await runWalkthrough(gateway.url);
      console.log("\nNow the same gateway as a 2026-07-28 client that declares the Tasks extension sees it:");
      await runTasksWalkthrough(gateway.url);
    } finally {
      await shutdown();
    }
    return 0;
  }

  console.log(nextSteps(gateway.url, upstream.url));
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  console.log(`\n${signal} received, shutting down …`);
  await shutdown();
  console.log("Stopped.");
  return 0;
}

main().then(
  (code) => {
    // Explicit, because a keep-alive socket in some client library must not
    // keep a finished demo alive.
    process.exit(code);
  },
  (err: unknown) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
