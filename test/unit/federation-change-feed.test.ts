// The change feed of a federated endpoint, on a clock the test moves: the same change arriving on several
// listeners' member listens is one flush, flushes are at least a second apart, and a listener that leaves
// hears nothing more.
import { describe, expect, it } from "vitest";
import { ChangeFeed, SETTLE_MS, listKindOf, type FeedClock, type ListKind } from "../../src/federation/change-feed.js";

/** A clock whose timers run when the test advances it. */
function manualClock(): FeedClock & { advance(ms: number): void } {
  let now = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  let next = 1;
  return {
    now: () => now,
    schedule(fn, ms) {
      const handle = next++;
      timers.set(handle, { at: now + ms, fn });
      return handle;
    },
    cancel(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = until;
    },
  };
}

function recorder(feed: ChangeFeed): { flushes: { kinds: ListKind[] }[]; stop: () => void } {
  const flushes: { kinds: ListKind[] }[] = [];
  return { flushes, stop: feed.subscribe((kinds) => flushes.push({ kinds: [...kinds].sort() })) };
}

describe("ChangeFeed", () => {
  it("gathers the same change from many member listens into one flush after the settle time", () => {
    const clock = manualClock();
    const feed = new ChangeFeed(1_000, clock);
    const a = recorder(feed);
    const b = recorder(feed);
    for (let i = 0; i < 10; i++) feed.changed("toolsListChanged");
    feed.changed("promptsListChanged");
    clock.advance(SETTLE_MS - 1);
    expect(a.flushes).toHaveLength(0);
    clock.advance(1);
    expect(a.flushes.map((f) => f.kinds)).toEqual([["promptsListChanged", "toolsListChanged"]]);
    expect(b.flushes).toEqual(a.flushes);
  });

  it("never flushes twice within the interval: a change right after a flush waits for the second to pass", () => {
    const clock = manualClock();
    const feed = new ChangeFeed(1_000, clock);
    const seen: number[] = [];
    feed.subscribe(() => seen.push(clock.now()));
    feed.changed("toolsListChanged");
    clock.advance(SETTLE_MS);
    feed.changed("toolsListChanged");
    clock.advance(500);
    feed.changed("resourcesListChanged");
    clock.advance(2_000);
    expect(seen).toEqual([SETTLE_MS, SETTLE_MS + 1_000]);
  });

  it("tells nobody once its last listener left, and changes without listeners are not kept for later", () => {
    const clock = manualClock();
    const feed = new ChangeFeed(1_000, clock);
    feed.changed("toolsListChanged");
    const r = recorder(feed);
    clock.advance(5_000);
    expect(r.flushes).toHaveLength(0);
    feed.changed("toolsListChanged");
    r.stop();
    clock.advance(5_000);
    expect(r.flushes).toHaveLength(0);
    expect(feed.size).toBe(0);
  });

  it("names the list kind of each legacy list_changed notification, and nothing else", () => {
    expect(listKindOf("notifications/tools/list_changed")).toBe("toolsListChanged");
    expect(listKindOf("notifications/prompts/list_changed")).toBe("promptsListChanged");
    expect(listKindOf("notifications/resources/list_changed")).toBe("resourcesListChanged");
    expect(listKindOf("notifications/resources/updated")).toBeUndefined();
  });
});
