// Adaptive promotion: what the gateway learnt about each tool's latency, and the
// decisions it takes from it (issue 15). Pure apart from the injected clock and the
// optional LatencyShare (the Redis exchange, batched on a timer).
//
// THE ESTIMATE. Per tool, a decaying histogram of call durations: 48 buckets,
// log-spaced by √2 from 10 ms (bucket 0 is [0, 14 ms), the last one is everything
// past ~47 h). Every sample multiplies all weights by DECAY (0.8) and adds 1 to its
// bucket, so recent calls count most and the whole history is ~5 effective
// samples; quantiles interpolate log-uniformly inside a bucket (±19 %). 48 doubles
// per tool, nothing per call.
//
// THE RULE (planPromotion asks `atOnce(tool, thresholdMs)`, for `auto` only):
//   slow = the share of the histogram's weight above the threshold (the share of
//          recent calls that ran past it, most recent weighing most);
//   enter "at once" when the tool has ≥ MIN_SAMPLES samples and slow ≥ 0.75;
//   leave it when slow < 0.5 (hysteresis: one odd call does not flip the tool).
// Every fast call multiplies `slow` by at most DECAY, so from any state a tool is
// back to plain calls after at most ⌈log(0.5)/log(0.8)⌉ = 4 consecutive fast calls
// (the 5th is plain). A brand-new slow tool needs MIN_SAMPLES (5) calls past the
// threshold before the 6th gets its handle at once. The state is kept per threshold
// (rules may give one tool different thresholds for different callers).
//
// WHAT IS A SAMPLE (the censoring question). The time from the plan (just before the
// call goes upstream) to its answer, result or JSON-RPC error alike, promoted or not:
// a task's duration is known when its call ends, so promotion does not hide slow
// calls. A call cut before its answer (client left, tasks/cancel, eviction,
// shutdown) is right-censored: it counts, with its elapsed time, only when that is
// already past the threshold (then we know it was slow; the quantiles are biased a
// little low), and not at all otherwise. A call that asked the client for input does
// not count: its time measures the person answering, not the tool.
//
// POLL HINTS. A task's pollIntervalMs = its expected remaining time / 10, clamped to
// [tasks.minPollIntervalMs, tasks.maxPollIntervalMs]. Expected remaining time at
// elapsed e = the median of the history's durations longer than e, minus e; past
// everything seen, e itself (a call that has run e is as likely to run e more). It is
// computed when the task is created (elapsed 0 when promoted at once, the threshold
// when promoted at it) and stays fixed: tasks/get answers stored bytes, and moving
// the hint would cost a store write per task per change. No history: the configured
// pollIntervalMs. The latest sample, when shorter (and still ahead of e), wins: a
// tool that just turned fast stays promoted at once for a few calls (hysteresis),
// and those tasks are polled at its new pace, not the old median's (issue 26).
//
// BOUNDED. Tools live in a segmented LRU: a new tool enters a small probation
// segment (maxTools/4), and moves to the main one (maxTools) on its second sample.
// One call each under random names only churns probation, so they can neither grow
// the history nor push the real tools out. Looking a tool up never creates it.
//
// SHARED. With a LatencyShare (Redis), samples are applied locally at once and
// queued; every SYNC_MS the queue and the tools looked up since the last exchange go
// out in one round trip, and the merged histories come back. Decisions never wait
// for Redis; a replica learns what the others saw within one sync interval. The
// hysteresis state stays per replica (it is derived from the same shared weights).
import type { LatencyDelta, LatencyShare, LatencyState } from "../store/latency-share.js";

export const BUCKETS = 48;
const BASE_MS = 10;
const LOG_RATIO = Math.log(Math.SQRT2);
const DECAY = 0.8;
export const MIN_SAMPLES = 5;
const ENTER_SLOW = 0.75;
const EXIT_SLOW = 0.5;
/** Polls per expected remaining time. */
const POLLS_PER_REMAINING = 10;
const DEFAULT_MAX_TOOLS = 1_000;
const DEFAULT_SYNC_MS = 1_000;
/** Most tools read back per exchange (besides the ones written). */
const MAX_READS = 256;
/** Distinct thresholds whose hysteresis state one tool keeps. */
const MAX_THRESHOLDS = 8;

/** Lower edge of bucket i (bucket 0 starts at 0). */
function lowEdge(i: number): number {
  return i === 0 ? 0 : BASE_MS * Math.SQRT2 ** i;
}
function highEdge(i: number): number {
  return BASE_MS * Math.SQRT2 ** (i + 1);
}

export function bucketOf(ms: number): number {
  if (!(ms >= highEdge(0))) return 0;
  // The epsilon keeps exact edges (20 ms, 40 ms, …) in their own bucket despite rounding.
  return Math.min(BUCKETS - 1, Math.floor(Math.log(ms / BASE_MS) / LOG_RATIO + 1e-9));
}

/** The share of bucket i's weight above v (log-uniform inside a bucket; linear in bucket 0). */
function shareAbove(i: number, v: number): number {
  const lo = lowEdge(i);
  const hi = highEdge(i);
  if (v <= lo) return 1;
  if (v >= hi) return 0;
  return i === 0 ? (hi - v) / hi : Math.log(hi / v) / Math.log(hi / lo);
}

/** The point inside bucket i above which `share` of its weight lies (inverse of shareAbove). */
function pointAt(i: number, share: number): number {
  const lo = lowEdge(i);
  const hi = highEdge(i);
  return i === 0 ? hi * (1 - share) : hi * Math.exp(-share * Math.log(hi / lo));
}

function massAbove(w: ArrayLike<number>, v: number): number {
  let m = 0;
  for (let i = bucketOf(v); i < BUCKETS; i++) m += (w[i] ?? 0) * shareAbove(i, v);
  return m;
}

function total(w: ArrayLike<number>): number {
  let t = 0;
  for (let i = 0; i < BUCKETS; i++) t += w[i] ?? 0;
  return t;
}

/** The value v ≥ floor with massAbove(v) = target (target ≤ massAbove(floor)). */
function valueWithMassAbove(w: ArrayLike<number>, floor: number, target: number): number {
  let acc = 0;
  const first = bucketOf(floor);
  for (let i = BUCKETS - 1; i >= first; i--) {
    const wi = (w[i] ?? 0) * (i === first ? shareAbove(i, floor) : 1);
    if (wi > 0 && acc + wi >= target) {
      // Inside bucket i: the point above which (target - acc) of the bucket's whole weight lies.
      const full = w[i] ?? 0;
      return Math.max(floor, pointAt(i, (target - acc) / full));
    }
    acc += wi;
  }
  return floor;
}

/** One sample, in place: every weight decays by DECAY, and the sample's bucket gains 1. */
function addSample(w: Float64Array, bucket: number): void {
  for (let i = 0; i < BUCKETS; i++) w[i] = (w[i] ?? 0) * DECAY;
  w[bucket] = (w[bucket] ?? 0) + 1;
}

interface Pending {
  scale: number;
  delta: Float64Array;
  added: number;
}

interface Entry {
  weights: Float64Array;
  samples: number;
  /** The latest sample (ms), local to this replica: the poll hint follows it (see POLL HINTS). */
  lastMs: number | undefined;
  /** Hysteresis state per threshold: true while the tool is promoted at once. */
  atOnce: Map<number, boolean>;
  /** Shared store only: what this replica learnt since its last exchange. */
  pending: Pending | undefined;
}

export interface AdaptiveSettings {
  /** tasks.adaptive: off, nothing is observed, promoted at once or hinted. */
  enabled: boolean;
  minPollIntervalMs: number;
  maxPollIntervalMs: number;
}

export interface LatencyHistoryOptions {
  now: () => number;
  /** Read on every use: a reload changes it in place. */
  settings: AdaptiveSettings;
  /** Tools in the main LRU segment (probation holds a quarter of it more). Default 1,000. */
  maxTools?: number;
  /** Replicas: where the history is shared. */
  share?: LatencyShare | undefined;
  /** How often the shared history is exchanged (ms); 0: only when flush() is called. Default 1,000. */
  syncMs?: number;
  /** A failed exchange (called once per run of failures). */
  onShareError?: (err: Error) => void;
}

type ToolState = "immediate" | "threshold" | "plain";

/** What stats() reports about one tool. */
export interface ToolEstimate {
  samples: number;
  /** Decayed quantiles of the recent durations (ms). */
  p50Ms: number;
  p90Ms: number;
  /** The share of recent calls past `thresholdMs`, and whether new calls are promoted at once. */
  thresholdMs: number;
  slowShare: number;
  atOnce: boolean;
  /**
   * What a new call of the tool gets (auto, declaring client): a task at once; a task at the threshold (most
   * recent calls ran past it, slowShare ≥ 0.5); or a plain call (most recent calls answered before it).
   */
  state: ToolState;
  /** The poll hint a task of this tool would get now (created at once, elapsed 0). */
  pollIntervalMs: number;
}

export interface AdaptiveCounts {
  /** Tasks created before the call went upstream because the history said the tool is slow. */
  atOnce: number;
  /** Calls that became tasks when they ran past the threshold. */
  atThreshold: number;
  /** tools/call answered as plain calls (never a task). */
  plain: number;
  /** always/required tasks (the history does not decide those; counted for completeness). */
  eager: number;
}

export interface AdaptiveStats {
  enabled: boolean;
  decisions: AdaptiveCounts;
  /** Tools in this process's history (both LRU segments). */
  tracked: number;
  /** Exchanges with the shared store (replicas), and those that failed. */
  sync: { exchanges: number; failed: number; samplesSent: number };
  tools: Record<string, ToolEstimate>;
}

/** The few facts of a policy decision the history uses. */
export interface TimedDecision {
  thresholdMs: number;
  pollIntervalMs: number;
  /** A rule set pollIntervalMs itself: it wins over the hint. */
  pollIntervalPinned?: boolean | undefined;
}

export class LatencyHistory {
  /** Segmented LRU; Map order is recency (oldest first). */
  private readonly probation = new Map<string, Entry>();
  private readonly main = new Map<string, Entry>();
  private readonly maxTools: number;
  private readonly probationMax: number;
  /** Tools looked up since the last exchange: read back, so this replica hears what the others saw. */
  private readonly wanted = new Set<string>();
  private readonly timer: NodeJS.Timeout | undefined;
  private exchanging: Promise<void> | undefined;
  private failing = false;
  readonly counts: AdaptiveCounts = { atOnce: 0, atThreshold: 0, plain: 0, eager: 0 };
  private readonly sync = { exchanges: 0, failed: 0, samplesSent: 0 };

  constructor(private readonly opts: LatencyHistoryOptions) {
    this.maxTools = Math.max(1, opts.maxTools ?? DEFAULT_MAX_TOOLS);
    this.probationMax = Math.max(1, Math.ceil(this.maxTools / 4));
    const syncMs = opts.syncMs ?? DEFAULT_SYNC_MS;
    if (opts.share && syncMs > 0) {
      this.timer = setInterval(() => void this.flush(), syncMs);
      this.timer.unref();
    }
  }

  get enabled(): boolean {
    return this.opts.settings.enabled;
  }

  /** Tools held (both segments); at most maxTools + maxTools/4. */
  get size(): number {
    return this.probation.size + this.main.size;
  }

  private lookup(tool: string): Entry | undefined {
    const m = this.main.get(tool);
    if (m) {
      this.main.delete(tool);
      this.main.set(tool, m);
      return m;
    }
    return this.probation.get(tool);
  }

  private admitMain(tool: string, entry: Entry): void {
    this.probation.delete(tool);
    this.main.delete(tool);
    this.main.set(tool, entry);
    while (this.main.size > this.maxTools) {
      const oldest = this.main.keys().next().value as string;
      this.main.delete(oldest);
    }
  }

  private newEntry(): Entry {
    return {
      weights: new Float64Array(BUCKETS),
      samples: 0,
      lastMs: undefined,
      atOnce: new Map(),
      pending: undefined,
    };
  }

  /**
   * Whether a new call of `tool` should be a task at once (auto, declaring client).
   * Updates the tool's hysteresis state for this threshold.
   */
  atOnce(tool: string, thresholdMs: number): boolean {
    if (!this.enabled) return false;
    if (this.opts.share && this.wanted.size < MAX_READS) this.wanted.add(tool);
    const entry = this.lookup(tool);
    if (!entry) return false;
    let state = entry.atOnce.get(thresholdMs) ?? false;
    if (entry.samples < MIN_SAMPLES) state = false;
    else {
      const slow = this.slowShare(entry, thresholdMs);
      if (!state && slow >= ENTER_SLOW) state = true;
      else if (state && slow < EXIT_SLOW) state = false;
    }
    entry.atOnce.delete(thresholdMs);
    entry.atOnce.set(thresholdMs, state);
    if (entry.atOnce.size > MAX_THRESHOLDS) entry.atOnce.delete(entry.atOnce.keys().next().value as number);
    return state;
  }

  private slowShare(entry: Entry, thresholdMs: number): number {
    const t = total(entry.weights);
    return t > 0 ? massAbove(entry.weights, thresholdMs) / t : 0;
  }

  /** A completed call of `tool` that took `durationMs`. */
  record(tool: string, durationMs: number): void {
    if (!this.enabled) return;
    const bucket = bucketOf(Math.max(0, durationMs));
    let entry = this.main.get(tool);
    if (entry) {
      this.main.delete(tool);
      this.main.set(tool, entry);
    } else {
      entry = this.probation.get(tool);
      if (entry) this.admitMain(tool, entry);
      else {
        entry = this.newEntry();
        this.probation.set(tool, entry);
        while (this.probation.size > this.probationMax)
          this.probation.delete(this.probation.keys().next().value as string);
      }
    }
    addSample(entry.weights, bucket);
    entry.samples += 1;
    entry.lastMs = Math.max(0, durationMs);
    if (this.opts.share) {
      const p = (entry.pending ??= { scale: 1, delta: new Float64Array(BUCKETS), added: 0 });
      p.scale *= DECAY;
      addSample(p.delta, bucket);
      p.added += 1;
    }
  }

  /** The expected remaining time (ms) of a call of `tool` that has run `elapsedMs`; undefined without history. */
  expectedRemainingMs(tool: string, elapsedMs: number): number | undefined {
    const entry = this.main.get(tool) ?? this.probation.get(tool);
    if (!entry || entry.samples === 0) return undefined;
    const e = Math.max(0, elapsedMs);
    const above = massAbove(entry.weights, e);
    // Past everything seen (or nearly): a call that has run e is as likely as not to run e more.
    if (above < 1e-3 * total(entry.weights)) return Math.max(e, 1);
    return Math.max(1, valueWithMassAbove(entry.weights, e, above / 2) - e);
  }

  /** The poll hint for a task of `tool` created after `elapsedMs`: remaining / 10 within the bounds; `fallback` without history. */
  pollIntervalMs(tool: string, elapsedMs: number, fallback: number): number {
    if (!this.enabled) return fallback;
    let remaining = this.expectedRemainingMs(tool, elapsedMs);
    if (remaining === undefined) return fallback;
    // The histogram's median lags a tool that just turned fast by a few calls (the hysteresis keeps those
    // promoted at once): the latest answer, when it came sooner, wins, so those tasks are polled at its pace.
    const last = (this.main.get(tool) ?? this.probation.get(tool))?.lastMs;
    if (last !== undefined && last > elapsedMs) remaining = Math.min(remaining, last - elapsedMs);
    const { minPollIntervalMs: lo, maxPollIntervalMs: hi } = this.opts.settings;
    return Math.round(Math.min(hi, Math.max(lo, remaining / POLLS_PER_REMAINING)));
  }

  /** Decayed quantile q (0..1) of the tool's recent durations (ms). */
  quantileMs(tool: string, q: number): number | undefined {
    const entry = this.main.get(tool) ?? this.probation.get(tool);
    if (!entry || entry.samples === 0) return undefined;
    const t = total(entry.weights);
    return valueWithMassAbove(entry.weights, 0, (1 - q) * t);
  }

  /**
   * Times one call from now; undefined when adaptive promotion is off. `plainPlan`:
   * the call was planned plain (counted as plain here, at once).
   */
  begin(tool: string, decision: TimedDecision, plainPlan: boolean): CallTiming | undefined {
    if (!this.enabled) return undefined;
    if (plainPlan) this.counts.plain += 1;
    return new CallTiming(this, tool, decision, this.opts.now(), plainPlan);
  }

  /** The clock the timings read. */
  now(): number {
    return this.opts.now();
  }

  /** A tool's current estimate, or undefined when it is not tracked. */
  estimate(tool: string, decision: TimedDecision): ToolEstimate | undefined {
    const entry = this.main.get(tool) ?? this.probation.get(tool);
    if (!entry || entry.samples === 0) return undefined;
    const round = (v: number | undefined): number => Math.round(v ?? 0);
    const slowShare = this.slowShare(entry, decision.thresholdMs);
    const atOnce = entry.atOnce.get(decision.thresholdMs) ?? false;
    return {
      samples: entry.samples,
      p50Ms: round(this.quantileMs(tool, 0.5)),
      p90Ms: round(this.quantileMs(tool, 0.9)),
      thresholdMs: decision.thresholdMs,
      slowShare: Math.round(slowShare * 1000) / 1000,
      atOnce,
      state: atOnce ? "immediate" : slowShare >= EXIT_SLOW ? "threshold" : "plain",
      pollIntervalMs: decision.pollIntervalPinned
        ? decision.pollIntervalMs
        : this.pollIntervalMs(tool, 0, decision.pollIntervalMs),
    };
  }

  /** Tools held, most recently used last (main segment first). */
  tools(): string[] {
    return [...this.probation.keys(), ...this.main.keys()];
  }

  /** For gateway.stats(): the counters, and the estimate of each tool `named` selects (at most `limit`, most recent). */
  stats(named: (tool: string) => TimedDecision | undefined, limit = 100): AdaptiveStats {
    const tools: Record<string, ToolEstimate> = {};
    const all = this.tools();
    let n = 0;
    for (let i = all.length - 1; i >= 0 && n < limit; i--) {
      const tool = all[i] as string;
      const decision = named(tool);
      if (!decision) continue;
      const est = this.estimate(tool, decision);
      if (est) {
        tools[tool] = est;
        n++;
      }
    }
    return { enabled: this.enabled, decisions: { ...this.counts }, tracked: this.size, sync: { ...this.sync }, tools };
  }

  /**
   * Exchanges with the shared store now: sends what was learnt since the last
   * exchange, and reads back the merged history of those tools and of the ones
   * looked up meanwhile. One round trip; a failure keeps the samples for the next.
   */
  flush(): Promise<void> {
    this.exchanging ??= this.exchange().finally(() => (this.exchanging = undefined));
    return this.exchanging;
  }

  private async exchange(): Promise<void> {
    const share = this.opts.share;
    if (!share) return;
    const sent = new Map<string, Pending>();
    const writes: LatencyDelta[] = [];
    // Probation tools stay local until their second sample: random names never reach Redis.
    for (const [tool, entry] of this.main) {
      if (!entry.pending) continue;
      sent.set(tool, entry.pending);
      writes.push({ tool, added: entry.pending.added, scale: entry.pending.scale, delta: entry.pending.delta });
      entry.pending = undefined;
    }
    const reads = [...this.wanted].filter((t) => !sent.has(t));
    this.wanted.clear();
    if (writes.length === 0 && reads.length === 0) return;
    let merged: Map<string, LatencyState>;
    try {
      merged = await share.exchange(writes, reads, BUCKETS);
    } catch (err) {
      this.sync.failed += 1;
      // Not sent: fold what was taken back under what arrived meanwhile (h·s1 + d1)·s2 + d2.
      for (const [tool, p] of sent) {
        const entry = this.main.get(tool) ?? this.probation.get(tool);
        if (!entry) continue;
        const later = entry.pending;
        if (later) {
          for (let i = 0; i < BUCKETS; i++) later.delta[i] = (p.delta[i] ?? 0) * later.scale + (later.delta[i] ?? 0);
          later.scale *= p.scale;
          later.added += p.added;
        } else entry.pending = p;
      }
      // Told once per outage, not once per sync interval.
      if (!this.failing) this.opts.onShareError?.(err as Error);
      this.failing = true;
      return;
    }
    this.failing = false;
    this.sync.exchanges += 1;
    for (const w of writes) this.sync.samplesSent += w.added;
    for (const [tool, state] of merged) {
      let entry = this.main.get(tool) ?? this.probation.get(tool);
      if (!entry) {
        // Known to the fleet (another replica admitted it): admitted here too.
        entry = this.newEntry();
        this.admitMain(tool, entry);
      } else if (!this.main.has(tool)) this.admitMain(tool, entry);
      // The merged history, with what this replica learnt since the exchange left applied on top.
      const later = entry.pending;
      for (let i = 0; i < BUCKETS; i++) {
        const s = state.weights[i] ?? 0;
        entry.weights[i] = later ? s * later.scale + (later.delta[i] ?? 0) : s;
      }
      entry.samples = state.samples + (later?.added ?? 0);
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}

/**
 * One call being timed: from the plan to its answer (or its end). Every method is
 * safe to call more than once; the first ending wins.
 */
export class CallTiming {
  private ended = false;
  private askedInput = false;
  private task = false;
  private plainCounted = false;

  constructor(
    private readonly history: LatencyHistory,
    readonly tool: string,
    private readonly decision: TimedDecision,
    private startedAt: number,
    /** A plain plan (counted when planned): its end counts nothing more. */
    private readonly countedPlain: boolean,
  ) {}

  private sentOnce = false;

  /**
   * The call goes upstream now: its duration counts from here, not from the plan (a task promoted at once is
   * stored first, and that store write is not the tool's time). Later rounds of the same call change nothing.
   */
  sent(): void {
    if (this.sentOnce || this.ended) return;
    this.sentOnce = true;
    this.startedAt = this.history.now();
  }

  get elapsedMs(): number {
    return Math.max(0, this.history.now() - this.startedAt);
  }

  /** The pollIntervalMs for a task of this call created now. */
  pollIntervalMs(): number {
    if (this.decision.pollIntervalPinned) return this.decision.pollIntervalMs;
    return this.history.pollIntervalMs(this.tool, this.elapsedMs, this.decision.pollIntervalMs);
  }

  /** The call became a task: at once (history), at the threshold, or eagerly (always/required). */
  promoted(how: "atOnce" | "atThreshold" | "eager"): void {
    if (this.task) return;
    this.task = true;
    this.history.counts[how] += 1;
    // The answer may have arrived while the task was being stored (it then goes to the task).
    if (this.plainCounted) {
      this.plainCounted = false;
      this.history.counts.plain -= 1;
    }
  }

  /** The call asked the client for input: its duration is not the tool's. `parked`: the plain leg ended there. */
  inputRequested(parked: boolean): void {
    this.askedInput = true;
    if (parked) this.end();
  }

  /** The call was answered (result or error). */
  answered(): void {
    if (this.ended) return;
    if (!this.askedInput) this.history.record(this.tool, this.elapsedMs);
    this.end();
  }

  /** The call was cut before its answer: a sample only if it already ran past the threshold. */
  cancelled(): void {
    if (this.ended) return;
    const elapsed = this.elapsedMs;
    if (!this.askedInput && elapsed > this.decision.thresholdMs) this.history.record(this.tool, elapsed);
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.task && !this.countedPlain) {
      this.plainCounted = true;
      this.history.counts.plain += 1;
    }
  }
}
