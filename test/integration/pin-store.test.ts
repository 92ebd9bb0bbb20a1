// The pin store's contract, on the memory form and on a real Redis (each test its own prefix, cleaned up):
// seeding once, pending changes recorded once per digest and bounded, approvals, the version that moves.
import { describe, expect, it } from "vitest";
import { MAX_PENDING, MemoryPinStore, type PinRecord, type PinStore } from "../../src/store/pins.js";
import { RedisPinStore } from "../../src/store/redis-pins.js";
import { fileRedis } from "../helpers/redis.js";

const { redis } = fileRedis();

const rec = (digit: string, note = "new"): PinRecord => ({
  digest: `sha256:${digit.repeat(64)}`,
  definition: { name: "echo", description: `d${digit}` },
  at: 1,
  note,
});

const forms: Array<[string, () => PinStore]> = [
  ["memory", () => new MemoryPinStore()],
  ["redis", () => new RedisPinStore(redis.client, redis.freshPrefix())],
];

describe.each(forms)("pin store (%s)", (_name, make) => {
  it("seeds once: the first seed wins, later ones change nothing", async () => {
    const store = make();
    const v0 = await store.version("up");
    expect(await store.seed("up", new Map([["echo", rec("a", "first-use")]]))).toBe(true);
    expect(await store.seed("up", new Map([["echo", rec("b", "first-use")]]))).toBe(false);
    const snap = await store.load("up");
    expect(snap.seeded).toBe(true);
    expect(snap.approved.get("echo")?.digest).toBe(rec("a").digest);
    expect(snap.version).not.toBe(v0);
    expect(await store.upstreams()).toEqual(["up"]);
  });

  it("records a pending digest once, a new digest again, and approves it", async () => {
    const store = make();
    expect(await store.addPending("up", "echo", rec("b"))).toBe("added");
    expect(await store.addPending("up", "echo", rec("b"))).toBe("known");
    expect(await store.addPending("up", "echo", rec("c"))).toBe("added");
    const before = await store.version("up");
    expect((await store.load("up")).pending.get("echo")?.definition).toEqual({ name: "echo", description: "dc" });
    expect(await store.approve("up", "echo", rec("c", "cli"))).toBe(true);
    const snap = await store.load("up");
    expect(snap.pending.size).toBe(0);
    expect(snap.approved.get("echo")).toMatchObject({ digest: rec("c").digest, note: "cli" });
    expect(snap.version).not.toBe(before);
  });

  it("keeps at most MAX_PENDING pending changes", async () => {
    const store = make();
    for (let i = 0; i < MAX_PENDING; i++) expect(await store.addPending("up", `t${i}`, rec("d"))).toBe("added");
    expect(await store.addPending("up", "one-more", rec("d"))).toBe("full");
    // An existing one may still be updated.
    expect(await store.addPending("up", "t0", rec("e"))).toBe("added");
    expect((await store.load("up")).pending.size).toBe(MAX_PENDING);
  });
});
