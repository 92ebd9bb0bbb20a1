// The shape of bench/out/results.json, shared by the runner and the reports.
import type { Machine } from "./machine.js";
import type { Mode } from "./scenarios.js";
import type { TargetName } from "./targets.js";
import type { WrkErrors } from "./wrk.js";

export interface Point {
  scenario: string;
  target: TargetName;
  concurrency: number;
  /** Which repeat of the (scenario, target, concurrency) point this is, when a run repeats them (--check); absent: 0. */
  round?: number;
  threads: number;
  durationSec: number;
  requests: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; p999: number; mean: number; max: number };
  errors: WrkErrors & { total: number };
  cpu: {
    /** Proxy process tree CPU per completed request; null for direct. */
    proxyUsPerReq: number | null;
    upstreamUsPerReq: number;
    /** wrk's own CPU per request: if it nears 1 s/s the load generator is the limit. */
    wrkUsPerReq: number;
    /** Cores' worth of CPU used by processes outside this run (other work on the machine). */
    foreignCores: number;
    /** Cores' worth of irq + softirq time (loopback networking is charged here, to no process). */
    irqCores: number;
    /** Cores' worth of time the hypervisor took away. */
    stealCores: number;
  };
}

export interface Skip {
  scenario: string;
  target: TargetName | "*";
  reason: string;
}

interface ScenarioInfo {
  id: string;
  label: string;
  upstream: string;
}

export interface Results {
  meta: {
    date: string;
    mode: Mode;
    command: string;
    durationSec: number;
    warmupSec: number;
    wrkThreads: number;
    machine: Machine;
    elapsedSec: number;
  };
  scenarios: ScenarioInfo[];
  points: Point[];
  skipped: Skip[];
}
