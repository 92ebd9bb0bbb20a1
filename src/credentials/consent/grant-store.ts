// Where user grants live: a small key-value interface (GrantBackend) over this process's memory or the shared
// Redis store, and the GrantStore over it that keeps each grant sealed by the vault under issuer + upstream +
// caller. The same backend keeps the consent flow's single-use nonces and the dynamic client registrations
// (per issuer), so replicas that share Redis share all three: a grant given through one replica is used by
// every other, a state is redeemed once across all of them, and a registration is made once per issuer.
import { createHash } from "node:crypto";
import { VaultError, type GrantVault } from "./vault.js";

export interface GrantBackend {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets `key` unless it exists; whether it was set (a nonce claimed, a registration made first). */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Whether there was something to delete. */
  delete(key: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * This process's backend: entries expire, and at most `maxEntries` are kept (the oldest written go first), so a
 * flood of consent links cannot grow it without end.
 */
export class MemoryGrantBackend implements GrantBackend {
  private readonly entries = new Map<string, { value: string; until: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get(key: string): Promise<string | undefined> {
    const entry = this.entries.get(key);
    if (entry && entry.until <= this.now()) this.entries.delete(key);
    return Promise.resolve(entry && entry.until > this.now() ? entry.value : undefined);
  }

  set(key: string, value: string, ttlMs: number): Promise<void> {
    this.entries.delete(key);
    this.entries.set(key, { value, until: this.now() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done === true) break;
      this.entries.delete(oldest.value);
    }
    return Promise.resolve();
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    if ((await this.get(key)) !== undefined) return false;
    await this.set(key, value, ttlMs);
    return true;
  }

  delete(key: string): Promise<boolean> {
    const entry = this.entries.get(key);
    this.entries.delete(key);
    return Promise.resolve(entry !== undefined && entry.until > this.now());
  }

  get size(): number {
    return this.entries.size;
  }

  close(): Promise<void> {
    this.entries.clear();
    return Promise.resolve();
  }
}

/** One user's grant for one upstream, as kept (sealed) in the store. */
export interface StoredGrant {
  accessToken: string;
  /** ms since the epoch; undefined when the server gave no lifetime. */
  expiresAt: number | undefined;
  refreshToken?: string | undefined;
  scope?: string | undefined;
  /** The authorization server that issued it ("" for one configured by URLs alone: then its token endpoint). */
  issuer: string;
  clientId: string;
  /** The verified subject that consented (audit lines). */
  subject?: string | undefined;
  grantedAt: number;
  /** Set once the grant has been used (the first use is audited). */
  used?: boolean | undefined;
}

/** Where a grant is kept: its authorization server, its upstream and its caller. */
export interface GrantSlot {
  issuer: string;
  upstream: string;
  caller: string;
}

/** What a read found. `unreadable`: a ciphertext that does not open (tampered, or its key removed). */
export type GrantRead = { kind: "grant"; grant: StoredGrant } | { kind: "none" } | { kind: "unreadable"; why: string };

function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** The slot's identity, bound into both the key and the ciphertext's AAD. */
function slotText(slot: GrantSlot): string {
  return JSON.stringify([slot.issuer, slot.upstream, slot.caller]);
}

export class GrantStore {
  constructor(
    readonly backend: GrantBackend,
    private readonly vault: GrantVault,
    /** How long a grant with a refresh token is kept unused (the refresh token's own lifetime is the server's). */
    private readonly grantTtlMs: number,
    private readonly now: () => number,
  ) {}

  private key(slot: GrantSlot): string {
    return `grant:${digest(slotText(slot))}`;
  }

  async read(slot: GrantSlot): Promise<GrantRead> {
    const blob = await this.backend.get(this.key(slot));
    if (blob === undefined) return { kind: "none" };
    try {
      return { kind: "grant", grant: JSON.parse(this.vault.open(blob, slotText(slot))) as StoredGrant };
    } catch (err) {
      if (err instanceof VaultError) return { kind: "unreadable", why: err.message };
      return { kind: "unreadable", why: "not a grant" };
    }
  }

  /** Keeps `grant` (sealed under the newest key) until its refresh token (or, without one, its access token) is of no use. */
  async write(slot: GrantSlot, grant: StoredGrant): Promise<void> {
    const ttl =
      grant.refreshToken !== undefined
        ? this.grantTtlMs
        : Math.max(1_000, (grant.expiresAt ?? this.now() + this.grantTtlMs) - this.now());
    await this.backend.set(this.key(slot), this.vault.seal(JSON.stringify(grant), slotText(slot)), ttl);
  }

  /** Whether there was a grant to delete. */
  async remove(slot: GrantSlot): Promise<boolean> {
    return this.backend.delete(this.key(slot));
  }

  /** Claims a nonce once across every replica: false when it was claimed before (a replay). */
  async claimNonce(nonce: string, ttlMs: number): Promise<boolean> {
    return this.backend.setIfAbsent(`nonce:${digest(nonce)}`, "1", ttlMs);
  }
}
