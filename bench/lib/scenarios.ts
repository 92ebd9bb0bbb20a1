// What is measured. A scenario is one kind of request against one upstream,
// measured through every target at a list of concurrencies. Later parts of the
// benchmark (the era bridge, tasks) are further entries here, with their own
// headers, gateway arguments or targets.
import type { TargetName } from "./targets.js";
import type { UpstreamKind } from "./upstreams.js";

export type Mode = "quick" | "full";

export interface Scenario {
  id: string;
  label: string;
  upstream: UpstreamKind;
  tool: string;
  arguments: Readonly<Record<string, unknown>>;
  /** Open a legacy session per target first and send its headers (server-everything needs one). */
  session: boolean;
  /** Extra headers on every request. */
  headers?: Readonly<Record<string, string>>;
  /** Concurrency levels per mode; a mode without an entry skips the scenario. */
  concurrency: Partial<Record<Mode, readonly number[]>>;
  targets: readonly TargetName[];
  /** A part of the expected response body, checked once per target before measuring. */
  expect: string;
  gatewayArgs?: readonly string[];
}

const PASS_THROUGH: readonly TargetName[] = ["direct", "gateway", "nginx", "floor"];
const KB = 1024;

function fast(
  id: string,
  label: string,
  size: number,
  format: "json" | "sse",
  concurrency: Scenario["concurrency"],
): Scenario {
  return {
    id,
    label,
    upstream: "fast",
    tool: "bench",
    arguments: { size, format, delayMs: 0 },
    session: false,
    // A legacy client sends the negotiated version on every request after initialize.
    headers: { "MCP-Protocol-Version": "2025-11-25" },
    concurrency,
    targets: PASS_THROUGH,
    expect: format === "sse" ? "event: message" : '"result"',
  };
}

export const SCENARIOS: readonly Scenario[] = [
  // c = 8 and 16 are there for the latency-vs-concurrency plot; 32 and 64 are the throughput points.
  fast("json-1k", "tools/call, 1 KB result, JSON", KB, "json", { quick: [1, 8, 32, 64], full: [1, 8, 16, 32, 64] }),
  fast("json-100k", "tools/call, 100 KB result, JSON", 100 * KB, "json", {
    quick: [1, 32, 64],
    full: [1, 8, 16, 32, 64],
  }),
  fast("sse-1k", "tools/call, 1 KB result, SSE", KB, "sse", { full: [1, 32, 64] }),
  fast("sse-100k", "tools/call, 100 KB result, SSE", 100 * KB, "sse", { full: [1, 32, 64] }),
  {
    id: "everything-echo",
    label: "server-everything echo (1 KB message), SSE, in a session",
    upstream: "everything",
    tool: "echo",
    arguments: { message: "x".repeat(KB) },
    session: true,
    concurrency: { full: [1, 32] },
    targets: PASS_THROUGH,
    expect: "Echo: x",
  },
];

export interface Timing {
  /** Seconds per measured point. */
  durationSec: number;
  /** Seconds of unrecorded load before the first point of each scenario × target. */
  warmupSec: number;
}

export const TIMING: Readonly<Record<Mode, Timing>> = {
  // 28 points × 3 s + 8 warm-ups × 1 s + start-up ≈ 100 s, inside the two-minute budget.
  quick: { durationSec: 3, warmupSec: 1 },
  full: { durationSec: 15, warmupSec: 3 },
};
