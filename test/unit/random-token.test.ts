// 128-bit CSPRNG tokens cut from a pool (src/protocol/random-token.ts): across several refills every token is
// 16 bytes of base64url and none repeats, so task ids and forwarding nonces drawn from the one pool never collide.
import { describe, expect, it } from "vitest";
import { randomToken } from "../../src/protocol/random-token.js";

describe("randomToken", () => {
  it("gives 16 fresh bytes each time, through many refills of the pool", () => {
    const tokens = Array.from({ length: 256 * 5 + 7 }, () => randomToken());
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const t of tokens) {
      expect(t).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(t, "base64url").byteLength).toBe(16);
    }
    // Not the zeros a spent cut leaves behind.
    expect(tokens).not.toContain(Buffer.alloc(16).toString("base64url"));
  });
});
