// Process entry point: runs the CLI and owns process-wide concerns (exit codes,
// signals). SIGINT/SIGTERM stop accepting, let in-flight calls finish within
// server.shutdownGraceMs, then exit 0; a second signal exits at once.
import { runCli } from "./cli.js";
import type { RunningGateway } from "./index.js";

let gateway: RunningGateway | undefined;
let stopping = false;

function shutDown(gw: RunningGateway): void {
  gw.close().then(
    ({ drained }) => {
      if (!drained) process.stderr.write("mcp-task-gateway: grace period ended, cut remaining requests\n");
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`mcp-task-gateway: shutdown failed: ${String(err)}\n`);
      process.exit(1);
    },
  );
}

// Installed before the gateway starts (and so before the start line is printed),
// so a signal sent the moment the line appears is never handled by Node's default.
function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    process.stderr.write(`mcp-task-gateway: ${signal} again, exiting now\n`);
    process.exit(1);
  }
  stopping = true;
  process.stderr.write(`mcp-task-gateway: ${signal} received, shutting down\n`);
  if (gateway) shutDown(gateway);
}
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

const result = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
});

if (result.exitCode !== null) {
  process.exitCode = result.exitCode;
} else {
  gateway = result.gateway;
  // A signal that arrived while starting up is honoured now.
  if (stopping) shutDown(gateway);
}
