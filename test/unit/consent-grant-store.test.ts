// The grant store (credentials/consent/grant-store.ts) on both backends: this process's memory and the shared
// Redis (one prefix per file, cleaned up): sealed grants per issuer + upstream + caller, single-use nonces,
// expiry, a tampered or foreign ciphertext read as unreadable, and the memory backend's bound.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GrantStore, MemoryGrantBackend, type GrantBackend } from "../../src/credentials/consent/grant-store.js";
import { RedisGrantBackend } from "../../src/credentials/consent/redis-grants.js";
import { GrantVault } from "../../src/credentials/consent/vault.js";
import { fileRedis } from "../helpers/redis.js";

const { redis } = fileRedis();
const key = () => randomBytes(32).toString("base64");
const grant = {
  accessToken: "at-secret",
  expiresAt: 10_000,
  refreshToken: "rt-secret",
  issuer: "https://as.example",
  clientId: "gw",
  grantedAt: 0,
};
const alice = { issuer: "https://as.example", upstream: "github", caller: "alice" };
const bob = { ...alice, caller: "bob" };

const backends: [string, (now: () => number) => GrantBackend][] = [
  ["memory", (now) => new MemoryGrantBackend(100, now)],
  ["redis", () => new RedisGrantBackend(redis.client, redis.freshPrefix())],
];

describe.each(backends)("GrantStore on %s", (_name, make) => {
  it("keeps a grant sealed under its slot, apart from other callers', and removes it", async () => {
    const backend = make(() => 0);
    const store = new GrantStore(backend, new GrantVault([key()]), 60_000, () => 0);
    expect(await store.read(alice)).toEqual({ kind: "none" });
    await store.write(alice, grant);
    expect(await store.read(alice)).toEqual({ kind: "grant", grant });
    expect(await store.read(bob)).toEqual({ kind: "none" });
    expect(await store.read({ ...alice, issuer: "https://other.example" })).toEqual({ kind: "none" });
    expect(await store.remove(alice)).toBe(true);
    expect(await store.remove(alice)).toBe(false);
    expect(await store.read(alice)).toEqual({ kind: "none" });
  });

  it("claims a nonce once", async () => {
    const store = new GrantStore(
      make(() => 0),
      new GrantVault([key()]),
      60_000,
      () => 0,
    );
    expect(await store.claimNonce("n", 60_000)).toBe(true);
    expect(await store.claimNonce("n", 60_000)).toBe(false);
    expect(await store.claimNonce("m", 60_000)).toBe(true);
  });

  it("reads a grant sealed under a removed key, or moved to another slot, as unreadable", async () => {
    const backend = make(() => 0);
    const oldKey = key();
    await new GrantStore(backend, new GrantVault([oldKey]), 60_000, () => 0).write(alice, grant);
    const rotated = new GrantStore(backend, new GrantVault([key()]), 60_000, () => 0);
    expect(await rotated.read(alice)).toMatchObject({
      kind: "unreadable",
      why: expect.stringMatching(/no longer listed/),
    });
    // Bob's slot given Alice's ciphertext: the AAD names Alice's slot.
    const store = new GrantStore(backend, new GrantVault([oldKey]), 60_000, () => 0);
    await store.write(alice, grant);
    const keys = await keysOf(backend, alice, bob);
    await backend.set(keys.bob, (await backend.get(keys.alice)) as string, 60_000);
    expect(await store.read(bob)).toMatchObject({ kind: "unreadable" });
    await backend.set(keys.alice, "v1.x.y.z", 60_000);
    expect(await store.read(alice)).toMatchObject({ kind: "unreadable" });
    await store.remove(alice);
    await store.remove(bob);
  });
});

/** The backend keys of two slots, found by writing each once (the store hashes them). */
async function keysOf(
  backend: GrantBackend,
  a: typeof alice,
  b: typeof alice,
): Promise<{ alice: string; bob: string }> {
  const seen: string[] = [];
  const spy: GrantBackend = {
    get: (k) => backend.get(k),
    set: (k, v, t) => (seen.push(k), backend.set(k, v, t)),
    setIfAbsent: (k, v, t) => backend.setIfAbsent(k, v, t),
    delete: (k) => backend.delete(k),
    close: () => backend.close(),
  };
  const probe = new GrantStore(spy, new GrantVault([key()]), 60_000, () => 0);
  await probe.write(a, grant);
  await probe.write(b, grant);
  return { alice: seen[0] as string, bob: seen[1] as string };
}

describe("MemoryGrantBackend", () => {
  it("forgets entries once they expire, and keeps at most its bound (oldest written go first)", async () => {
    let now = 0;
    const backend = new MemoryGrantBackend(2, () => now);
    await backend.set("a", "1", 100);
    now = 100;
    expect(await backend.get("a")).toBeUndefined();
    await backend.set("a", "1", 1_000);
    await backend.set("b", "2", 1_000);
    await backend.set("c", "3", 1_000);
    expect(backend.size).toBe(2);
    expect(await backend.get("a")).toBeUndefined();
    expect(await backend.get("c")).toBe("3");
  });
});
