// The gateway CLI (src/main.ts) started as a child with a config file written for it, under tsx, with the
// mem probe loaded (it costs nothing until SIGUSR2): for the benches that start gateways of several configs
// (bench/upstreams.ts, bench/federation.ts). Each launcher writes its configs in a temporary folder of its own.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MEM_PROBE_ARGS } from "./mem-probe.js";
import { nodePid } from "../tasks/children.js";
import { ROOT } from "./paths.js";
import { startChild, type Child } from "./procs.js";
import { gatewayArgs, gatewayEntry } from "./gateway-program.js";

export interface ConfiguredGateway {
  child: Child;
  /** http://127.0.0.1:PORT (no path). */
  origin: string;
  pid: number;
}

const GATEWAY_URL = /http:\/\/127\.0\.0\.1:\d+/;

export interface GatewayLauncher {
  start(name: string, config: Record<string, unknown>): Promise<ConfiguredGateway>;
  /** Removes the config files. */
  cleanup(): void;
}

function nodeArgs(): string[] {
  return (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
}

export function gatewayLauncher(prefix: string): GatewayLauncher {
  const workDir = mkdtempSync(join(tmpdir(), prefix));
  let configs = 0;
  return {
    async start(name, config) {
      if (gatewayEntry() === undefined) throw new Error("the gateway CLI (src/main.ts) does not exist");
      const file = join(workDir, `config-${++configs}.json`);
      writeFileSync(file, `${JSON.stringify({ ...config, log: { level: "warn" } }, null, 2)}\n`);
      const { child, ready: origin } = await startChild({
        name,
        command: process.execPath,
        // BENCH_NODE_ARGS: more flags for node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p" (NODE_OPTIONS refuses those).
        args: [...MEM_PROBE_ARGS, ...nodeArgs(), ...gatewayArgs(), "--port", "0", "--config", file],
        cwd: ROOT,
        // "mcp-task-gateway listening on http://127.0.0.1:PORT/mcp → …": our address is before the arrow.
        ready: {
          line: (line) => (line.includes("listening on") ? GATEWAY_URL.exec(line.split("→")[0] ?? "")?.[0] : undefined),
        },
      });
      return {
        child,
        origin,
        pid: nodePid(child, "/main."),
      };
    },
    cleanup: () => rmSync(workDir, { recursive: true, force: true }),
  };
}
