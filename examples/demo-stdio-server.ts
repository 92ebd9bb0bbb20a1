// The demo MCP server over stdio (one process per client session): what
// `npm run demo -- --stdio` puts behind the gateway with upstream.command.
//
//   node --import tsx examples/demo-stdio-server.ts
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createDemoServer } from "./demo-server.js";

const server = createDemoServer();
await server.connect(new StdioServerTransport());
// The stdio spec's shutdown: stdin closed → exit.
process.stdin.once("end", () => {
  void server.close().finally(() => process.exit(0));
});
