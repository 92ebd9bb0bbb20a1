// The grant vault: user grants (refresh and access tokens) are kept encrypted with AES-256-GCM under the keys of
// auth.vault.keys. The newest key (the first) encrypts; every listed key decrypts, so keys rotate by adding a new
// one at the front and dropping an old one once its grants are gone. A ciphertext names its key by a short id
// (the first bytes of the key's SHA-256: no key material), and is bound by GCM's additional data to where it is
// kept (issuer, upstream, caller), so a ciphertext copied into another caller's slot does not decrypt.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface VaultKey {
  id: string;
  key: Buffer;
}

/** A ciphertext that does not open: unknown key, tampered, moved to another slot, or not a vault blob at all. */
export class VaultError extends Error {
  override readonly name = "VaultError";
}

/** A key's id: 8 hex digits of its SHA-256, enough to tell a handful of listed keys apart. */
function keyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

export class GrantVault {
  private readonly keys: VaultKey[];

  /** `keys`: base64, 32 bytes each, newest first (the config's auth.vault.keys). */
  constructor(keys: readonly string[]) {
    if (keys.length === 0) throw new Error("the grant vault needs at least one key");
    this.keys = keys.map((k) => {
      const key = Buffer.from(k, "base64");
      if (key.length !== 32) throw new Error("a vault key must be 32 bytes (base64)");
      return { id: keyId(key), key };
    });
  }

  /** `v1.<key id>.<iv>.<ciphertext and tag>`, base64url parts; `aad` binds it to where it is kept. */
  seal(plaintext: string, aad: string): string {
    const newest = this.keys[0] as VaultKey;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", newest.key, iv);
    cipher.setAAD(Buffer.from(aad, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${newest.id}.${iv.toString("base64url")}.${body.toString("base64url")}`;
  }

  /** The plaintext, or VaultError (the message names the key id at most). */
  open(blob: string, aad: string): string {
    const [version, id, ivText, bodyText, extra] = blob.split(".");
    if (
      version !== VERSION ||
      id === undefined ||
      ivText === undefined ||
      bodyText === undefined ||
      extra !== undefined
    )
      throw new VaultError("not a vault ciphertext");
    const key = this.keys.find((k) => k.id === id);
    if (!key) throw new VaultError(`encrypted under a key no longer listed (key id ${id})`);
    const iv = Buffer.from(ivText, "base64url");
    const body = Buffer.from(bodyText, "base64url");
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new VaultError("not a vault ciphertext");
    try {
      const decipher = createDecipheriv("aes-256-gcm", key.key, iv);
      decipher.setAAD(Buffer.from(aad, "utf8"));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString(
        "utf8",
      );
    } catch {
      throw new VaultError(`does not authenticate under key ${id} (tampered, or kept under another slot)`);
    }
  }

  /** Whether `blob` was sealed under the newest key (an older one's grant is re-sealed when next written). */
  isCurrent(blob: string): boolean {
    return blob.split(".")[1] === this.keys[0]?.id;
  }

  /**
   * A key for another purpose (`info`: what for), derived from each vault key by HKDF-SHA256, newest first: the
   * first signs, every one verifies, so signed values survive a rotation as grants do. Never a vault key itself.
   */
  derivedKeys(info: string): Buffer[] {
    return this.keys.map((k) => Buffer.from(hkdfSync("sha256", k.key, Buffer.alloc(0), info, 32)));
  }
}
