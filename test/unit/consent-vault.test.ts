// The grant vault and the consent flow's signed state (credentials/consent/vault.ts, state.ts): AES-256-GCM
// under the newest key, every listed key opening, ciphertexts bound to their slot; HMAC state under a
// vault-derived key, surviving a rotation, refused when altered, expired or of the other kind.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GrantVault, VaultError } from "../../src/credentials/consent/vault.js";
import { StateSigner, type StartTicket } from "../../src/credentials/consent/state.js";

const key = () => randomBytes(32).toString("base64");

describe("GrantVault", () => {
  it("opens what it sealed, and names the key, never the plaintext", () => {
    const vault = new GrantVault([key()]);
    const blob = vault.seal("refresh-token-secret", "slot-a");
    expect(blob).not.toContain("refresh-token-secret");
    expect(blob.split(".")).toHaveLength(4);
    expect(vault.open(blob, "slot-a")).toBe("refresh-token-secret");
    // A fresh IV every time: two seals of the same text differ.
    expect(vault.seal("x", "slot-a")).not.toBe(vault.seal("x", "slot-a"));
  });

  it("refuses a ciphertext moved to another slot (AAD) and one tampered with", () => {
    const vault = new GrantVault([key()]);
    const blob = vault.seal("grant", "issuer|upstream|alice");
    expect(() => vault.open(blob, "issuer|upstream|bob")).toThrow(VaultError);
    const parts = blob.split(".");
    const body = Buffer.from(parts[3] as string, "base64url");
    body[0] = (body[0] as number) ^ 1;
    const tampered = [parts[0], parts[1], parts[2], body.toString("base64url")].join(".");
    expect(() => vault.open(tampered, "issuer|upstream|alice")).toThrow(/does not authenticate/);
    expect(() => vault.open("not-a-blob", "issuer|upstream|alice")).toThrow(VaultError);
  });

  it("encrypts under the newest key, opens under every listed one, and refuses a removed key's", () => {
    const [oldKey, newKey] = [key(), key()];
    const before = new GrantVault([oldKey]);
    const sealedOld = before.seal("old grant", "s");
    const rotated = new GrantVault([newKey, oldKey]);
    expect(rotated.open(sealedOld, "s")).toBe("old grant");
    expect(rotated.isCurrent(sealedOld)).toBe(false);
    const sealedNew = rotated.seal("new grant", "s");
    expect(rotated.isCurrent(sealedNew)).toBe(true);
    expect(before.isCurrent(sealedNew)).toBe(false);
    const dropped = new GrantVault([newKey]);
    expect(dropped.open(sealedNew, "s")).toBe("new grant");
    expect(() => dropped.open(sealedOld, "s")).toThrow(/no longer listed/);
  });
});

describe("StateSigner", () => {
  const ticket = (exp: number): StartTicket => ({
    typ: "start",
    caller: "caller-digest",
    upstream: "github",
    base: "https://gw.example",
    nonce: "n1",
    exp,
  });

  it("verifies its own state until it expires", () => {
    const signer = new StateSigner(new GrantVault([key()]));
    const text = signer.sign(ticket(2_000));
    expect(signer.verify<StartTicket>(text, "start", 1_000)).toEqual({ ok: true, value: ticket(2_000) });
    expect(signer.verify(text, "start", 2_000)).toEqual({ ok: false, why: "state expired" });
    expect(signer.verify(text, "callback", 1_000)).toEqual({ ok: false, why: "state of another kind" });
    expect(signer.verify(undefined, "start", 1_000)).toEqual({ ok: false, why: "no state" });
  });

  it("refuses an altered payload, and a state signed under another vault", () => {
    const signer = new StateSigner(new GrantVault([key()]));
    const text = signer.sign(ticket(2_000));
    const [, mac] = text.split(".");
    const forged = `${Buffer.from(JSON.stringify({ ...ticket(2_000), caller: "mallory" })).toString("base64url")}.${mac}`;
    expect(signer.verify(forged, "start", 1_000)).toEqual({ ok: false, why: "state signature does not verify" });
    const other = new StateSigner(new GrantVault([key()]));
    expect(other.verify(text, "start", 1_000)).toMatchObject({ ok: false });
  });

  it("keeps verifying a state signed before a key rotation", () => {
    const oldKey = key();
    const text = new StateSigner(new GrantVault([oldKey])).sign(ticket(2_000));
    expect(new StateSigner(new GrantVault([key(), oldKey])).verify(text, "start", 1_000)).toMatchObject({ ok: true });
  });
});
