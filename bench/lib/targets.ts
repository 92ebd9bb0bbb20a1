// The paths a request can take to the upstream. Each target starts its proxy
// (if any) in its own process, so no two measured programs share an event loop.
// Adding a path (e.g. the gateway with a tasks config) means adding an entry.
import { join } from "node:path";
import { APT_HINT, findBinary } from "./binaries.js";
import { gatewayArgs, sourceEntry } from "./gateway-program.js";
import { startNginx } from "./nginx.js";
import { ROOT } from "./paths.js";
import { startChild } from "./procs.js";
import type { Child } from "./procs.js";
import type { RunningUpstream } from "./upstreams.js";
import { portLine } from "./upstreams.js";

export type TargetName = "direct" | "gateway" | "nginx" | "floor";
export const TARGET_NAMES: readonly TargetName[] = ["direct", "gateway", "nginx", "floor"];

export interface RunningTarget {
  url: string;
  /** The proxy process whose CPU is charged to the path; none for direct. */
  proxy: Child | undefined;
}

interface TargetOptions {
  /** Extra CLI arguments for the gateway (later: a tasks config, the era bridge). */
  gatewayArgs?: readonly string[];
  /** Node flags for the gateway's or the floor's process (e.g. --trace-gc-nvp), before its program. */
  nodeArgs?: readonly string[];
  /** Sees every output line of the gateway's or the floor's process. */
  onLine?: (line: string) => void;
}

export interface Target {
  name: TargetName;
  /** Why the target cannot run on this machine, or undefined if it can. */
  unavailable(): string | undefined;
  start(upstream: RunningUpstream, options: TargetOptions): Promise<RunningTarget>;
}

const GATEWAY_URL = /http:\/\/127\.0\.0\.1:\d+\/mcp/;

const direct: Target = {
  name: "direct",
  unavailable: () => undefined,
  start: async (upstream) => ({ url: upstream.url, proxy: undefined }),
};

const gateway: Target = {
  name: "gateway",
  unavailable: () =>
    sourceEntry() !== undefined ? undefined : "the gateway CLI (src/main.ts or src/cli.ts) does not exist yet",
  async start(upstream, options) {
    const { child, ready: url } = await startChild({
      name: "gateway",
      command: process.execPath,
      args: [
        ...(options.nodeArgs ?? []),
        ...gatewayArgs(),
        "--upstream",
        upstream.url,
        "--port",
        "0",
        "--log-level",
        "warn",
        ...(options.gatewayArgs ?? []),
      ],
      cwd: ROOT,
      ...(options.onLine && { onLine: options.onLine }),
      // The CLI prints one line: "mcp-task-gateway listening on http://127.0.0.1:PORT/mcp → upstream …".
      // Only the part before the arrow names our address; the upstream's URL has the same shape.
      ready: { line: (line) => GATEWAY_URL.exec(line.split("→")[0] ?? "")?.[0] },
    });
    return { url, proxy: child };
  },
};

const nginx: Target = {
  name: "nginx",
  unavailable: () => (findBinary("nginx") !== undefined ? undefined : `nginx is not installed; ${APT_HINT}`),
  async start(upstream) {
    const { child, url } = await startNginx(findBinary("nginx") ?? "nginx", upstream.url);
    return { url, proxy: child };
  },
};

const floor: Target = {
  name: "floor",
  unavailable: () => undefined,
  async start(upstream, options) {
    const { child, ready: port } = await startChild({
      name: "floor",
      command: process.execPath,
      args: [...(options.nodeArgs ?? []), "--import", "tsx", join(ROOT, "bench/floor.ts"), "--upstream", upstream.url],
      cwd: ROOT,
      ...(options.onLine && { onLine: options.onLine }),
      ready: { line: portLine },
    });
    return { url: `http://127.0.0.1:${port}${new URL(upstream.url).pathname}`, proxy: child };
  },
};

export const TARGETS: Readonly<Record<TargetName, Target>> = { direct, gateway, nginx, floor };
