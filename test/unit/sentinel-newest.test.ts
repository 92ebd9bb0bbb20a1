// The choice among Sentinels' answers (src/store/sentinel-newest.ts): the highest config-epoch, the first of
// equals, and a Sentinel that did not answer (or answered nonsense) left out.
import { describe, expect, it } from "vitest";
import { configEpoch, newestIndex } from "../../src/store/sentinel-newest.js";

describe("configEpoch", () => {
  it("reads config-epoch from a SENTINEL MASTER reply, as text or bytes", () => {
    expect(configEpoch(["name", "mtg", "ip", "127.0.0.1", "config-epoch", "3", "flags", "master"])).toBe(3);
    expect(configEpoch([Buffer.from("config-epoch"), Buffer.from("12")])).toBe(12);
  });

  it("is undefined for anything that is not such a reply", () => {
    expect(configEpoch(undefined)).toBeUndefined();
    expect(configEpoch("ERR No such master with that name")).toBeUndefined();
    expect(configEpoch(["name", "mtg"])).toBeUndefined();
    expect(configEpoch(["config-epoch", "x"])).toBeUndefined();
    // A trailing field without its value is not read past the end.
    expect(configEpoch(["name", "mtg", "config-epoch"])).toBeUndefined();
  });
});

describe("newestIndex", () => {
  it("picks the highest epoch, the first of equals, skipping Sentinels that did not answer", () => {
    expect(newestIndex([0, 1, 1])).toBe(1);
    expect(newestIndex([2, 1, 2])).toBe(0);
    expect(newestIndex([undefined, 0, undefined, 4])).toBe(3);
    expect(newestIndex([undefined, undefined])).toBe(-1);
    expect(newestIndex([])).toBe(-1);
  });
});
