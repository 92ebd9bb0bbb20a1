// The memory store's recycled answer bytes (src/store/spare-bytes.ts): the bytes of a task that left serve the
// next task of about their size, and only such a task; the spares held are bounded.
import { describe, expect, it } from "vitest";
import { SpareBytes } from "../../src/store/spare-bytes.js";

describe("SpareBytes", () => {
  it("take gives the text's UTF-8 bytes, in memory of their own when there is no spare", () => {
    const spare = new SpareBytes();
    const text = "fini — ✓ 完了 🚀";
    const bytes = spare.take(text);
    expect(bytes.equals(Buffer.from(text, "utf8"))).toBe(true);
    expect(bytes.buffer.byteLength).toBe(Buffer.byteLength(text));
    expect(spare.take(text).buffer).not.toBe(bytes.buffer);
  });

  it("bytes given back serve the next text of about their size (no more than 64 bytes shorter), once", () => {
    const spare = new SpareBytes();
    const old = spare.take("a".repeat(1_000));
    spare.give(old);
    const next = spare.take("b".repeat(950));
    expect(next.buffer).toBe(old.buffer);
    expect(next.toString("utf8")).toBe("b".repeat(950));
    // Used up: the next take has memory of its own.
    expect(spare.take("c".repeat(950)).buffer).not.toBe(old.buffer);
  });

  it("a spare is not used for a longer text, nor for one more than 64 bytes shorter", () => {
    const spare = new SpareBytes();
    const old = spare.take("a".repeat(1_000));
    spare.give(old);
    expect(spare.take("b".repeat(1_001)).buffer).not.toBe(old.buffer);
    expect(spare.take("b".repeat(935)).buffer).not.toBe(old.buffer);
    expect(spare.take("b".repeat(936)).buffer).toBe(old.buffer);
  });

  it("holds at most 256 KiB of spares: beyond that, bytes given back are let go", () => {
    const spare = new SpareBytes();
    const big = spare.take("x".repeat(200 * 1024));
    const more = spare.take("y".repeat(100 * 1024));
    spare.give(big);
    spare.give(more);
    expect(spare.take("z".repeat(100 * 1024)).buffer).not.toBe(more.buffer);
    expect(spare.take("z".repeat(200 * 1024)).buffer).toBe(big.buffer);
  });

  it("clear() lets every spare go", () => {
    const spare = new SpareBytes();
    const old = spare.take("a".repeat(100));
    spare.give(old);
    spare.clear();
    expect(spare.take("b".repeat(100)).buffer).not.toBe(old.buffer);
  });
});
