// The upstream token cache: served until just before expiry, one fetch for a burst, bounded.
import { describe, expect, it } from "vitest";
import { TokenCache } from "../../src/credentials/token-cache.js";

function cache(now: { t: number }, maxEntries = 100) {
  return new TokenCache({ maxEntries, skewMs: 1_000, defaultTtlMs: 60_000, now: () => now.t });
}

describe("TokenCache", () => {
  it("serves a token until skewMs before it expires, then fetches a new one", async () => {
    const now = { t: 0 };
    const c = cache(now);
    let n = 0;
    const fetch = async () => ({ accessToken: `t${++n}`, expiresAt: now.t + 10_000 });
    expect(await c.get("k", fetch)).toBe("t1");
    now.t = 8_999;
    expect(await c.get("k", fetch)).toBe("t1");
    now.t = 9_000;
    expect(await c.get("k", fetch)).toBe("t2");
  });

  it("a burst without a token shares one fetch, and a failed fetch is not kept", async () => {
    const now = { t: 0 };
    const c = cache(now);
    let calls = 0;
    let release: (v: { accessToken: string; expiresAt: number }) => void = () => undefined;
    const fetch = () => {
      calls += 1;
      return new Promise<{ accessToken: string; expiresAt: number }>((r) => (release = r));
    };
    const burst = Array.from({ length: 50 }, () => c.get("k", fetch));
    release({ accessToken: "one", expiresAt: 60_000 });
    expect(await Promise.all(burst)).toEqual(Array(50).fill("one"));
    expect(calls).toBe(1);

    await expect(c.get("other", () => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    expect(await c.get("other", async () => ({ accessToken: "later", expiresAt: 60_000 }))).toBe("later");
  });

  it("fresh skips the cached token (the upstream refused it)", async () => {
    const now = { t: 0 };
    const c = cache(now);
    let n = 0;
    const fetch = async () => ({ accessToken: `t${++n}`, expiresAt: 60_000 });
    expect(await c.get("k", fetch)).toBe("t1");
    expect(await c.get("k", fetch, true)).toBe("t2");
    expect(await c.get("k", fetch)).toBe("t2");
  });

  it("tells hits from fetches, and keeps at most maxEntries (least recently used out first)", async () => {
    const now = { t: 0 };
    const c = cache(now, 2);
    const seen: string[] = [];
    const fetch = (v: string) => async () => ({ accessToken: v, expiresAt: 60_000 });
    await c.get("a", fetch("A"), false, (o) => seen.push(o));
    await c.get("a", fetch("A2"), false, (o) => seen.push(o));
    await c.get("b", fetch("B"));
    await c.get("a", fetch("A3"));
    await c.get("c", fetch("C"));
    expect(seen).toEqual(["fetched", "hit"]);
    expect(c.size).toBe(2);
    // b was least recently used: it is fetched again; a was kept.
    expect(await c.get("b", fetch("B2"))).toBe("B2");
    expect(await c.get("c", fetch("C2"))).toBe("C");
  });

  it("a token shorter-lived than the skew is used once and not kept", async () => {
    const now = { t: 0 };
    const c = cache(now);
    let n = 0;
    const fetch = async () => ({ accessToken: `t${++n}`, expiresAt: now.t + 500 });
    expect(await c.get("k", fetch)).toBe("t1");
    expect(await c.get("k", fetch)).toBe("t2");
    expect(c.size).toBe(0);
  });
});
