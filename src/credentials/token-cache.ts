// Access tokens the gateway holds for upstreams, by key (an upstream's own token; a caller's exchanged token for
// an upstream). A token is served until `skewMs` before it expires, so no request leaves with one about to lapse
// in flight; requests that find none wait on one shared fetch (a burst is one token request, not a thousand).
// Bounded: the least recently used entry goes first, so a flood of callers cannot grow it without end.

export interface CachedToken {
  accessToken: string;
  /** ms since the epoch; undefined: the server gave no lifetime, so the token is kept for `defaultTtlMs`. */
  expiresAt: number | undefined;
}

export interface TokenCacheOptions {
  maxEntries: number;
  /** Refresh this long before expiry. */
  skewMs: number;
  /** How long a token with no stated lifetime is kept. */
  defaultTtlMs: number;
  now: () => number;
}

export type CacheOutcome = "hit" | "fetched";

export class TokenCache {
  private readonly entries = new Map<string, { token: string; until: number }>();
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(private readonly opts: TokenCacheOptions) {}

  /**
   * The token for `key`: the cached one while it is good, else one `fetch` shared by every caller that asks
   * meanwhile. `fresh` skips a cached token (the upstream refused it) but still joins a fetch in flight.
   * `outcome` is told whether the answer was a hit.
   */
  async get(
    key: string,
    fetch: () => Promise<CachedToken>,
    fresh = false,
    outcome?: (o: CacheOutcome) => void,
  ): Promise<string> {
    if (!fresh) {
      const entry = this.entries.get(key);
      if (entry && entry.until > this.opts.now()) {
        // Most recently used goes last in the Map's order.
        this.entries.delete(key);
        this.entries.set(key, entry);
        outcome?.("hit");
        return entry.token;
      }
    } else {
      this.entries.delete(key);
    }
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const started = this.fetchInto(key, fetch);
    this.inFlight.set(key, started);
    try {
      const token = await started;
      outcome?.("fetched");
      return token;
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async fetchInto(key: string, fetch: () => Promise<CachedToken>): Promise<string> {
    const got = await fetch();
    const now = this.opts.now();
    const lifetime = got.expiresAt === undefined ? this.opts.defaultTtlMs : got.expiresAt - now;
    // A token that lives less than twice the skew is used once, for the request that asked, and not kept.
    const keepFor = got.expiresAt === undefined ? lifetime : lifetime - this.opts.skewMs;
    if (keepFor > 0) {
      this.entries.delete(key);
      this.entries.set(key, { token: got.accessToken, until: now + keepFor });
      while (this.entries.size > this.opts.maxEntries) {
        const oldest = this.entries.keys().next();
        if (oldest.done === true) break;
        this.entries.delete(oldest.value);
      }
    }
    return got.accessToken;
  }

  /** Forgets `key` (a revoked grant, a refused token). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Counts what a cached token request did (metrics): a hit, or the fetch behind a miss and how it went. */
interface TokenCounter {
  (kind: "fetch" | "exchange" | "cache_hit", ok: boolean): void;
}

/**
 * `cache.get` for one source's token, counted: `kind` names what a miss runs (a client-credentials fetch, an
 * exchange), and a hit is counted as cache_hit.
 */
export async function countedToken(
  cache: TokenCache,
  key: string,
  kind: "fetch" | "exchange",
  fetch: () => Promise<CachedToken>,
  fresh: boolean,
  count: TokenCounter | undefined,
): Promise<string> {
  return cache.get(
    key,
    async () => {
      try {
        const got = await fetch();
        count?.(kind, true);
        return got;
      } catch (err) {
        count?.(kind, false);
        throw err;
      }
    },
    fresh,
    (o) => {
      if (o === "hit") count?.("cache_hit", true);
    },
  );
}
