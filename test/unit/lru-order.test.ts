// The memory store's LRU order (src/store/lru-order.ts): finished tasks in order of last use, overall and per
// owner, as lists through the entries. Examples for each operation, then a property: any sequence of adds, uses
// and removals leaves both lists as a reference model of plain arrays has them, read from either end.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LruEnds, LruOrder, type LruLinks } from "../../src/store/lru-order.js";

interface Node extends LruLinks<Node> {
  readonly id: string;
  readonly owner: string;
}

const node = (id: string, owner = "a"): Node => ({
  id,
  owner,
  older: undefined,
  newer: undefined,
  ownerOlder: undefined,
  ownerNewer: undefined,
});

/** The ids of a list from its oldest to its newest, checked against the walk from the other end and its size. */
function overall(ends: LruEnds<Node>): string[] {
  const forward: string[] = [];
  for (let n = ends.oldest; n !== undefined; n = n.newer) forward.push(n.id);
  const backward: string[] = [];
  for (let n = ends.newest; n !== undefined; n = n.older) backward.push(n.id);
  expect(backward.reverse()).toEqual(forward);
  expect(ends.size).toBe(forward.length);
  return forward;
}

/** The same for one owner's list. */
function owners(ends: LruEnds<Node>): string[] {
  const forward: string[] = [];
  for (let n = ends.oldest; n !== undefined; n = n.ownerNewer) forward.push(n.id);
  const backward: string[] = [];
  for (let n = ends.newest; n !== undefined; n = n.ownerOlder) backward.push(n.id);
  expect(backward.reverse()).toEqual(forward);
  expect(ends.size).toBe(forward.length);
  return forward;
}

/** An order with owners a and b, and nodes added in the order given. */
function setUp(...specs: Array<[string, string]>): {
  order: LruOrder<Node>;
  mine: Record<string, LruEnds<Node>>;
  nodes: Record<string, Node>;
} {
  const order = new LruOrder<Node>();
  const mine = { a: new LruEnds<Node>(), b: new LruEnds<Node>() } as Record<string, LruEnds<Node>>;
  const nodes: Record<string, Node> = {};
  for (const [id, owner] of specs) {
    nodes[id] = node(id, owner);
    order.add(nodes[id], mine[owner] as LruEnds<Node>);
  }
  return { order, mine, nodes };
}

describe("LruOrder", () => {
  it("adds are the most recently used: the oldest end is the first added", () => {
    const { order, mine } = setUp(["x", "a"], ["y", "a"], ["z", "a"]);
    expect(overall(order.all)).toEqual(["x", "y", "z"]);
    expect(owners(mine.a as LruEnds<Node>)).toEqual(["x", "y", "z"]);
  });

  it("a use moves the entry to the newest end, from the oldest, the middle or the newest place", () => {
    const { order, mine, nodes } = setUp(["x", "a"], ["y", "a"], ["z", "a"]);
    const a = mine.a as LruEnds<Node>;
    order.use(nodes.x as Node, a);
    expect(overall(order.all)).toEqual(["y", "z", "x"]);
    order.use(nodes.z as Node, a);
    expect(overall(order.all)).toEqual(["y", "x", "z"]);
    order.use(nodes.z as Node, a);
    expect(overall(order.all)).toEqual(["y", "x", "z"]);
    expect(owners(a)).toEqual(["y", "x", "z"]);
  });

  it("the least recently used is at the oldest end, so eviction takes it", () => {
    const { order, mine, nodes } = setUp(["x", "a"], ["y", "a"], ["z", "a"]);
    const a = mine.a as LruEnds<Node>;
    order.use(nodes.x as Node, a);
    const oldest = order.all.oldest as Node;
    expect(oldest.id).toBe("y");
    expect(order.remove(oldest, a)).toBe(true);
    expect(overall(order.all)).toEqual(["z", "x"]);
  });

  it("a removal from the middle joins its neighbours; a removed entry is in neither list, and removing it again changes nothing", () => {
    const { order, mine, nodes } = setUp(["x", "a"], ["y", "a"], ["z", "a"]);
    const a = mine.a as LruEnds<Node>;
    expect(order.remove(nodes.y as Node, a)).toBe(true);
    expect(overall(order.all)).toEqual(["x", "z"]);
    expect(owners(a)).toEqual(["x", "z"]);
    expect(order.has(nodes.y as Node)).toBe(false);
    expect(order.remove(nodes.y as Node, a)).toBe(false);
    // A use of an entry in neither list does not put it back.
    order.use(nodes.y as Node, a);
    expect(overall(order.all)).toEqual(["x", "z"]);
    // The last ones out leave both lists empty.
    order.remove(nodes.x as Node, a);
    order.remove(nodes.z as Node, a);
    expect(overall(order.all)).toEqual([]);
    expect(owners(a)).toEqual([]);
    expect([order.all.oldest, order.all.newest, a.oldest, a.newest]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("each owner's list keeps its own entries in the overall order", () => {
    const { order, mine, nodes } = setUp(["a1", "a"], ["b1", "b"], ["a2", "a"], ["b2", "b"], ["a3", "a"]);
    const [a, b] = [mine.a as LruEnds<Node>, mine.b as LruEnds<Node>];
    order.use(nodes.a1 as Node, a);
    order.use(nodes.b1 as Node, b);
    expect(overall(order.all)).toEqual(["a2", "b2", "a3", "a1", "b1"]);
    expect(owners(a)).toEqual(["a2", "a3", "a1"]);
    expect(owners(b)).toEqual(["b2", "b1"]);
    // The owner's oldest is not the overall oldest: b's quota evicts b2, though a2 is older.
    expect(b.oldest?.id).toBe("b2");
    order.remove(b.oldest as Node, b);
    expect(overall(order.all)).toEqual(["a2", "a3", "a1", "b1"]);
    expect(owners(a)).toEqual(["a2", "a3", "a1"]);
  });

  it("any sequence of adds, uses and removals leaves both lists as a model of arrays has them", () => {
    type Op = { kind: "add"; owner: "a" | "b" | "c" } | { kind: "use" | "remove" | "evict"; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant("add" as const),
        owner: fc.constantFrom("a" as const, "b" as const, "c" as const),
      }),
      fc.record({ kind: fc.constantFrom("use" as const, "remove" as const, "evict" as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const order = new LruOrder<Node>();
        const ends: Record<string, LruEnds<Node>> = { a: new LruEnds(), b: new LruEnds(), c: new LruEnds() };
        const made: Node[] = []; // every node ever added, removed ones included
        let model: Node[] = []; // least recently used first
        let next = 0;
        for (const o of ops) {
          if (o.kind === "add") {
            const n = node(`n${next++}`, o.owner);
            made.push(n);
            order.add(n, ends[o.owner] as LruEnds<Node>);
            model.push(n);
          } else if (o.kind === "evict") {
            // Eviction as the store does it: the oldest overall, or (odd picks) the oldest of one owner.
            const owner = ["a", "b", "c"][o.pick % 3] as string;
            const mine = ends[owner] as LruEnds<Node>;
            const victim = o.pick % 2 === 0 ? order.all.oldest : mine.oldest;
            const expected = o.pick % 2 === 0 ? model[0] : model.find((n) => n.owner === owner);
            expect(victim).toBe(expected);
            if (victim !== undefined) {
              expect(order.remove(victim, ends[victim.owner] as LruEnds<Node>)).toBe(true);
              model = model.filter((n) => n !== victim);
            }
          } else if (made.length > 0) {
            // Any node ever made, removed ones too: a use or removal of those must change nothing.
            const n = made[o.pick % made.length] as Node;
            const present = model.includes(n);
            expect(order.has(n)).toBe(present);
            if (o.kind === "use") {
              order.use(n, ends[n.owner] as LruEnds<Node>);
              if (present) model = [...model.filter((m) => m !== n), n];
            } else {
              expect(order.remove(n, ends[n.owner] as LruEnds<Node>)).toBe(present);
              model = model.filter((m) => m !== n);
            }
          }
          expect(overall(order.all)).toEqual(model.map((n) => n.id));
          for (const owner of ["a", "b", "c"])
            expect(owners(ends[owner] as LruEnds<Node>)).toEqual(
              model.filter((n) => n.owner === owner).map((n) => n.id),
            );
        }
      }),
      { numRuns: 300 },
    );
  });
});
