// Process entry point: runs the CLI and owns process-wide concerns (exit codes,
// signals, workers). SIGINT/SIGTERM stop accepting, let in-flight calls finish
// within server.shutdownGraceMs, then exit 0; a second signal exits at once.
// With --workers N the primary runs workers.ts and each worker runs the gateway.
// Every line is a JSON log line (log/logger.ts); a worker's carry its `worker`. The lines of the process's life
// (the start line, a signal, the end of the grace period) are written whatever log.level is, as they always were.
import cluster from "node:cluster";
import { lifecycleLog, loadCli, reloadConfig, startCli, type CliIo } from "./cli.js";
import type { RunningGateway } from "./index.js";
import { createLogger } from "./log/logger.js";
import { watchConfigFile } from "./config-watch.js";
import { RELOAD, runPrimary, SHUTDOWN, workerConfig, workerFields } from "./workers.js";

const io: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
};

let gateway: RunningGateway | undefined;
let stopping = false;
/** The lines of the process's life (signals, shutdown), on stderr. */
const life = lifecycleLog(io.stderr, workerFields());

function shutDown(gw: RunningGateway): void {
  gw.close().then(
    ({ drained }) => {
      if (!drained) life.warn("mcp-task-gateway: grace period ended, cut remaining requests");
      process.exit(0);
    },
    (err: unknown) => {
      life.error("mcp-task-gateway: shutdown failed", { cause: String(err) });
      process.exit(1);
    },
  );
}

// Installed before the gateway starts (and so before the start line is printed),
// so a signal sent the moment the line appears is never handled by Node's default.
function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    // A worker hears its terminal's Ctrl-C and its primary's request alike: only a primary's second signal is final.
    if (cluster.isWorker) return;
    life.warn(`mcp-task-gateway: ${signal} again, exiting now`, { signal });
    process.exit(1);
  }
  stopping = true;
  if (cluster.isPrimary) life.info(`mcp-task-gateway: ${signal} received, shutting down`, { signal });
  if (gateway) shutDown(gateway);
}

const loaded = await loadCli(process.argv.slice(2), io);
if ("exitCode" in loaded) {
  process.exitCode = loaded.exitCode;
} else if (cluster.isPrimary && loaded.config.server.workers > 1) {
  process.exitCode = await runPrimary(loaded.config, io);
  process.exit();
} else {
  const log = createLogger(loaded.config.log.level, undefined, undefined, workerFields());
  // SIGHUP (or the primary relaying it, or a changed file with --watch-config) re-reads the policy; one at a time.
  let reloading = Promise.resolve();
  const reload = (): void => {
    reloading = reloading.then(async () => {
      if (gateway && !stopping) await reloadConfig(gateway, loaded.sources, log, workerConfig);
    });
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", reload);
  // A worker stops when its primary says so, once, however many signals also arrive.
  process.on("message", (m: unknown) => {
    const type = typeof m === "object" && m !== null ? (m as { type?: unknown }).type : undefined;
    if (type === SHUTDOWN && !stopping) onSignal("SIGTERM");
    if (type === RELOAD) reload();
  });
  const result = await startCli(workerConfig(loaded.config), io, cluster.isWorker, log);
  if (result.exitCode !== null) {
    process.exitCode = result.exitCode;
    if (cluster.isWorker) process.exit();
  } else {
    gateway = result.gateway;
    if (loaded.sources.watch && loaded.sources.configFile) {
      watchConfigFile(loaded.sources.configFile, reload, (err) =>
        log.warn("cannot watch the config file; SIGHUP still reloads", { cause: err.message }),
      );
    }
    if (cluster.isWorker)
      process.send?.({ type: "mcp-task-gateway:listening", url: gateway.url, socket: gateway.internalSocket });
    // A signal that arrived while starting up is honoured now.
    if (stopping) shutDown(gateway);
  }
}
