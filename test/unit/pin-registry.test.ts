// The pin registry over the memory store: trust on first use, warn/hide/allow on a changed or new tool, calls
// under hide, config pins, approvals and the bounds an attacker's flood meets.
import { describe, expect, it } from "vitest";
import { definitionDigest } from "../../src/catalog/definition-digest.js";
import { PinRegistry, type PinChange, type PinEvents, type PinningSettings } from "../../src/catalog/pin-registry.js";
import { MAX_PENDING, MemoryPinStore } from "../../src/store/pins.js";

const echo = { name: "echo", description: "Echoes.", inputSchema: { type: "object" } };
const add = {
  name: "add",
  description: "Adds.",
  inputSchema: { type: "object", properties: { a: { type: "number" } } },
};

interface Seen {
  changes: PinChange[];
  approved: Array<[string, string]>;
  overflow: string[];
}

function setup(settings: Partial<PinningSettings> & Pick<PinningSettings, "policy">) {
  const store = new MemoryPinStore();
  let t = 1_000;
  const seen: Seen = { changes: [], approved: [], overflow: [] };
  const events: PinEvents = {
    changed: (_u, change) => seen.changes.push(change),
    approved: (_u, tool, _d, via) => seen.approved.push([tool, via]),
    overflow: (_u, tool) => seen.overflow.push(tool),
    failed: (_u, err) => {
      throw err;
    },
  };
  const full: PinningSettings = { pins: {}, listMaxAgeMs: 0, ...settings };
  const registry = new PinRegistry(
    store,
    (u) => (u === "up" ? full : undefined),
    events,
    () => t,
  );
  /** Lets the registry's background writes land, then reads the store again. */
  const settle = async (): Promise<void> => {
    await new Promise((r) => setImmediate(r));
    await registry.refresh("up");
  };
  return { store, registry, seen, settle, tick: (ms: number) => (t += ms) };
}

const names = (tools: unknown[]): string[] => tools.map((t) => (t as { name: string }).name);

describe("PinRegistry", () => {
  it("pins the first listing whole (trust on first use), once", async () => {
    const { registry, seen } = setup({ policy: "hide" });
    await registry.refresh("up");
    expect(registry.needsSeed("up")).toBe(true);
    await registry.seed("up", [echo, add]);
    expect(registry.needsSeed("up")).toBe(false);
    expect(seen.approved).toEqual([
      ["echo", "first-use"],
      ["add", "first-use"],
    ]);
    await registry.seed("up", [{ ...echo, description: "later" }]);
    expect(seen.approved).toHaveLength(2);
    expect(names(registry.checkList("up", [echo, add]).served)).toEqual(["echo", "add"]);
  });

  it("hide: a one-character change and a new tool are hidden, recorded once, refused, and served once approved", async () => {
    const { registry, seen, settle, store } = setup({ policy: "hide" });
    await registry.refresh("up");
    await registry.seed("up", [echo]);
    const changed = { ...echo, description: "Echoes!" };
    const out = registry.checkList("up", [changed, add]);
    expect(out.served).toEqual([]);
    expect(out.hidden).toEqual(["echo", "add"]);
    expect(out.changes.map((c) => [c.tool, c.kind])).toEqual([
      ["echo", "changed"],
      ["add", "new"],
    ]);
    await settle();
    registry.checkList("up", [changed, add]);
    await settle();
    expect(seen.changes.map((c) => c.tool)).toEqual(["echo", "add"]);
    expect(registry.callAllowed("up", "echo")).toEqual({ ok: false, digest: definitionDigest(changed) });
    expect(registry.callAllowed("up", "nope")).toEqual({ ok: false, digest: undefined });
    const pending = registry.pending().get("up") ?? [];
    expect(pending.map((p) => [p.tool, p.kind, p.diff.fields])).toEqual([
      ["add", "new", ["description", "inputSchema"]],
      ["echo", "changed", ["description"]],
    ]);
    const record = (await store.load("up")).pending.get("echo");
    await store.approve("up", "echo", { ...record!, note: "cli" });
    await settle();
    expect(names(registry.checkList("up", [changed, add]).served)).toEqual(["echo"]);
    expect(registry.callAllowed("up", "echo")).toEqual({ ok: true });
    expect(
      registry
        .pending()
        .get("up")
        ?.map((p) => p.tool),
    ).toEqual(["add"]);
  });

  it("a tool renamed to an approved tool's name with another schema is a change of that tool", async () => {
    const { registry } = setup({ policy: "hide" });
    await registry.refresh("up");
    await registry.seed("up", [echo, add]);
    const impostor = { ...add, name: "echo" };
    const out = registry.checkList("up", [impostor]);
    expect(out.hidden).toEqual(["echo"]);
    expect(out.changes[0]?.kind).toBe("changed");
    expect(registry.callAllowed("up", "echo").ok).toBe(false);
  });

  it("warn: the change is served, recorded and counted once", async () => {
    const { registry, seen, settle } = setup({ policy: "warn" });
    await registry.refresh("up");
    await registry.seed("up", [echo]);
    const changed = { ...echo, inputSchema: { type: "object", $defs: { x: { type: "string" } } } };
    expect(names(registry.checkList("up", [changed]).served)).toEqual(["echo"]);
    await settle();
    registry.checkList("up", [changed]);
    await settle();
    expect(seen.changes).toHaveLength(1);
    expect(registry.callAllowed("up", "echo")).toEqual({ ok: true });
    expect(registry.pending().get("up")?.[0]?.diff.schema).toEqual(["+/inputSchema/$defs"]);
  });

  it("allow: the change is served and approved", async () => {
    const { registry, seen, settle } = setup({ policy: "allow" });
    await registry.refresh("up");
    await registry.seed("up", [echo]);
    registry.checkList("up", [{ ...echo, description: "new words" }]);
    await settle();
    expect(seen.approved.at(-1)).toEqual(["echo", "policy"]);
    expect(registry.pending().get("up")).toEqual([]);
    expect(registry.checkList("up", [{ ...echo, description: "new words" }]).changes).toEqual([]);
  });

  it("config pins take precedence and turn trust on first use off", async () => {
    const { registry } = setup({ policy: "hide", pins: { echo: definitionDigest(echo)! } });
    await registry.refresh("up");
    expect(registry.needsSeed("up")).toBe(false);
    const out = registry.checkList("up", [echo, add]);
    expect(names(out.served)).toEqual(["echo"]);
    expect(out.hidden).toEqual(["add"]);
  });

  it("a flood of new tools stops being recorded at MAX_PENDING, and stays hidden", async () => {
    const { registry, seen, settle, store } = setup({ policy: "hide" });
    await registry.refresh("up");
    await registry.seed("up", [echo]);
    const flood = Array.from({ length: MAX_PENDING + 50 }, (_, i) => ({ name: `t${i}`, description: "x" }));
    const out = registry.checkList("up", flood);
    expect(out.served).toEqual([]);
    await settle();
    await new Promise((r) => setImmediate(r));
    expect((await store.load("up")).pending.size).toBe(MAX_PENDING);
    expect(seen.overflow.length).toBe(50);
  });

  it("under hide, the gateway lists again when its listing is older than listMaxAgeMs", async () => {
    const { registry, tick } = setup({ policy: "hide", listMaxAgeMs: 5_000 });
    expect(registry.needsListing("up")).toBe(true);
    registry.listedWhole("up", [echo]);
    expect(registry.needsListing("up")).toBe(false);
    tick(5_000);
    expect(registry.needsListing("up")).toBe(true);
  });

  it("an upstream without pinning is served as it is", () => {
    const { registry } = setup({ policy: "hide" });
    expect(registry.checkList("other", [echo]).served).toEqual([echo]);
    expect(registry.callAllowed("other", "echo")).toEqual({ ok: true });
  });
});
