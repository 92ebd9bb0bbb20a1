// SHA-256 digests of texts (base64url), and a bounded memo of them. Caller
// identities and upstream session keys are digests of the same few texts asked
// for on every request; hashing each time showed in CPU profiles.
import { createHash } from "node:crypto";

export function sha256Base64url(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** Recent digests by their text: bounded, oldest first out; the digest is the same either way. */
export class DigestCache {
  private readonly cache = new Map<string, string>();

  constructor(private readonly max = 1_024) {}

  /** How many digests are kept. */
  get size(): number {
    return this.cache.size;
  }

  of(text: string): string {
    const hit = this.cache.get(text);
    if (hit !== undefined) return hit;
    const digest = sha256Base64url(text);
    if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(text, digest);
    return digest;
  }
}
