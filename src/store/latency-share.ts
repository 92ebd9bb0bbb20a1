// How replicas share the latency history of adaptive promotion (src/tasks/latency-history.ts).
// The store knows nothing of quantiles or thresholds: a tool's history is a vector
// of decayed weights (one per latency bucket) and a sample count, and a replica
// sends what it learnt since its last exchange as an affine update,
//     weights := weights × scale + delta,    samples := samples + added
// which is exactly "these samples were added, one at a time, to a histogram that
// decays by a constant factor per sample" (scale is that factor to the power of
// the number of samples). Updates from several replicas compose in whatever order
// they arrive; only the interleaving within one exchange interval is approximated.

/** What one replica learnt about one tool since its last exchange. */
export interface LatencyDelta {
  tool: string;
  /** Samples added (counted toward the shared sample count). */
  added: number;
  /** Factor applied to the stored weights before `delta` is added (the decay of `added` samples). */
  scale: number;
  /** Weights added per bucket (dense, one entry per bucket). */
  delta: ArrayLike<number>;
}

/** A tool's shared history after the exchange. */
export interface LatencyState {
  samples: number;
  /** Dense, one entry per bucket (the length the caller asked for). */
  weights: number[];
}

export interface LatencyShare {
  /**
   * Applies `writes` and returns the merged state of every tool written or read
   * (a tool the store has no history for is absent). One round trip.
   */
  exchange(
    writes: readonly LatencyDelta[],
    reads: readonly string[],
    buckets: number,
  ): Promise<Map<string, LatencyState>>;
}
