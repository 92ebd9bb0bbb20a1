// Properties of task ids (tasks/task-id.ts): their form (22 base64url characters for 16 bytes, after "<upstream>."
// for a named upstream), the upstream read back from any id, no id drawn twice, and 128 bits that each vary.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_UPSTREAM_NAME } from "../../src/config/schema.js";
import { newTaskId, taskUpstream } from "../../src/tasks/task-id.js";

const upstreamName = fc.oneof(fc.constant(DEFAULT_UPSTREAM_NAME), fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,31}$/));
const RANDOM_PART = /^[A-Za-z0-9_-]{22}$/;

/** The 16 random bytes of an id. */
function bytesOf(id: string): Buffer {
  return Buffer.from(id.slice(id.indexOf(".") + 1), "base64url");
}

describe("task ids (properties)", () => {
  it("an id is 16 random bytes in base64url, after its upstream's name and a dot unless it is the single upstream's", () => {
    fc.assert(
      fc.property(upstreamName, (upstream) => {
        const id = newTaskId(upstream);
        const random = upstream === DEFAULT_UPSTREAM_NAME ? id : id.slice(upstream.length + 1);
        if (upstream !== DEFAULT_UPSTREAM_NAME) expect(id.startsWith(`${upstream}.`)).toBe(true);
        expect(random).toMatch(RANDOM_PART);
        expect(bytesOf(id)).toHaveLength(16);
        expect(bytesOf(id).toString("base64url")).toBe(random);
      }),
      { numRuns: 2_000 },
    );
  });

  it("the upstream is read back from every id", () => {
    fc.assert(
      fc.property(upstreamName, (upstream) => {
        expect(taskUpstream(newTaskId(upstream))).toBe(upstream);
      }),
      { numRuns: 2_000 },
    );
  });

  it("no id is drawn twice in 200,000 draws (across many refills of the pool)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200_000; i++) seen.add(newTaskId());
    expect(seen.size).toBe(200_000);
  });

  it("each of the 128 bits is set in about half of the ids: all of them are random", () => {
    // 20,000 draws: a fair bit is set 50 % ± 0.35 % (one standard deviation); 45–55 % is 14 of them.
    const draws = 20_000;
    const ones = new Array<number>(128).fill(0);
    for (let i = 0; i < draws; i++) {
      const bytes = bytesOf(newTaskId("github"));
      for (let bit = 0; bit < 128; bit++) if ((bytes[bit >> 3] as number) & (0x80 >> (bit & 7))) ones[bit]! += 1;
    }
    for (const count of ones) {
      expect(count / draws).toBeGreaterThan(0.45);
      expect(count / draws).toBeLessThan(0.55);
    }
  });
});
