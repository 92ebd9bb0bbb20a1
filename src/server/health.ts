// Liveness and readiness, off the MCP path. Readiness probes the upstream, but
// concurrent /readyz calls share one probe and a result is reused briefly, so a
// flood of health checks never becomes a flood on the upstream.
import type { ProbeResult, UpstreamClient } from "../upstream/client.js";

export class ReadinessProbe {
  private inflight: Promise<ProbeResult> | undefined;
  private cached: { at: number; result: ProbeResult } | undefined;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly timeoutMs: number,
    private readonly now: () => number,
    private readonly cacheMs = 1_000,
  ) {}

  check(): Promise<ProbeResult> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return Promise.resolve(this.cached.result);
    this.inflight ??= this.upstream.probe(this.timeoutMs).then((result) => {
      this.cached = { at: this.now(), result };
      this.inflight = undefined;
      return result;
    });
    return this.inflight;
  }
}

/** The same for a shared task store: one ping at a time, reused for a second, bounded by a deadline. */
export class StoreProbe {
  private inflight: Promise<{ ok: boolean; cause?: string }> | undefined;
  private cached: { at: number; result: { ok: boolean; cause?: string } } | undefined;

  constructor(
    private readonly ping: () => Promise<void>,
    private readonly timeoutMs: number,
    private readonly now: () => number,
    private readonly cacheMs = 1_000,
  ) {}

  check(): Promise<{ ok: boolean; cause?: string }> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return Promise.resolve(this.cached.result);
    this.inflight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      });
      let result: { ok: boolean; cause?: string };
      try {
        await Promise.race([this.ping(), deadline]);
        result = { ok: true };
      } catch (err) {
        result = { ok: false, cause: (err as Error).message };
      } finally {
        clearTimeout(timer);
      }
      this.cached = { at: this.now(), result };
      this.inflight = undefined;
      return result;
    })();
    return this.inflight;
  }
}
