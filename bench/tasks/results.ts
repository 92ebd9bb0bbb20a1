// The shape of bench/out/tasks-results.json, shared by the runner and the reports.
import type { Machine } from "../lib/machine.js";
import type { HeapReport, Memory } from "./children.js";
import type { LoadPoint } from "../lib/load.js";

export type Mode = "quick" | "full";

export interface Plan {
  /** Seconds per measured c=1 point (scenario 1) and per tasks/get point (scenario 2). */
  pointSec: number;
  warmupSec: number;
  /** Completed tasks tasks/get cycles over. */
  getIds: number;
  pollers: number;
  /** Tasks held working at once. */
  working: number;
  /** Completed tasks created against the store budget. */
  completed: number;
  storeBytes: number;
  /** Concurrency of the harness's task loader. */
  loaderConcurrency: number;
  resultBytes: number;
}

type PathName = "direct" | "never" | "always";

export interface PromotionRow {
  path: PathName;
  label: string;
  concurrency: number;
  point: LoadPoint;
}

export interface TasksGet {
  ids: number;
  /** Body bytes of one tasks/get answer, as the harness's check saw it. */
  checkedBodyBytes: number;
  point: LoadPoint;
  /**
   * The same wrk load against the tasks/get floor (bench/tasks/get-floor.ts): a
   * bare node:http server answering the stored bytes the gateway answers for the
   * same ids, from a Map. Its CPU is in `gatewayCpuUs` (the process answering).
   */
  floor?: LoadPoint;
  /** How many ids' floor answers were checked to equal the gateway's, byte for byte. */
  floorChecked?: number;
  /** With more than one round (the --check pass): every gateway/floor pair, alternating; `point` and `floor` are the first. */
  rounds?: Array<{ gateway: LoadPoint; floor?: LoadPoint }>;
  /**
   * Runs before issue 14 only: the same load against bench/tasks/legacy-upstream.ts
   * answering every tasks/get with one fixed body of the same size.
   */
  reference?: LoadPoint;
  /** Of a sample of the ids after the run: how many still answered completed. */
  stillCompleted: number;
  sampled: number;
}

export interface Working {
  tasks: number;
  createSec: number;
  retries: number;
  /** Calls the upstream reported holding open once the loader was done. */
  heldByUpstream: number;
  sampled: number;
  sampledWorking: number;
  before: Memory;
  after: Memory;
  bytesPerTask: number;
  gatewayOpenFiles: number;
  /** process.memoryUsage() of the gateway right after `before` was read (before and after a forced full GC). */
  heapBefore: HeapReport;
  /** process.memoryUsage() of the gateway right after `after` was read (before and after a forced full GC). */
  heap: HeapReport;
}

export interface Completed {
  created: number;
  createSec: number;
  retries: number;
  storeBytes: number;
  /** What the store charges one of these completed tasks (src/store/memory-store.ts recordBytes). */
  recordBytes: number;
  /** floor(storeBytes / recordBytes): how many fit when every record has that size. */
  capacity: number;
  resolved: number;
  notFound: number;
  other: number;
  before: Memory;
  after: Memory;
  /** resolved × recordBytes ≤ storeBytes. */
  holds: boolean;
  /** resolved === capacity. */
  exact: boolean;
  /** process.memoryUsage() of the gateway right after `before` was read (before and after a forced full GC). */
  heapBefore: HeapReport;
  /** process.memoryUsage() of the gateway right after `after` was read (before and after a forced full GC). */
  heap: HeapReport;
}

export interface TaskResults {
  meta: {
    date: string;
    mode: Mode;
    command: string;
    /** Which gateway program ran. */
    gateway: string;
    /** The shared store the gateways ran on (--store), and their workers; absent for the memory store. */
    store?: string;
    workers?: number;
    /** HEAD when the run started, with "+ uncommitted src/ changes" when src/ differed. */
    commit?: string;
    machine: Machine;
    elapsedSec: number;
    plan: Plan;
    openFilesLimit: number | null;
    /** Cores' worth of other load seen before each measured point. */
    settleLoad: number[];
  };
  promotion: PromotionRow[];
  tasksGet: TasksGet | null;
  working: Working | { skipped: string };
  completed: Completed | null;
}

/** Above this much CPU used by other processes during a point, its figures are noisy. */
export const NOISY_CORES = 0.25;

export const AIMS = {
  /** Issue 14: tasks/get with 64 pollers at least this fraction of its floor's req/s… */
  tasksGetFloorRatio: 0.7,
  /** …with p99 under this many ms. */
  tasksGetP99Ms: 5,
  workingRssBytes: 200 * 1000 * 1000,
} as const;
