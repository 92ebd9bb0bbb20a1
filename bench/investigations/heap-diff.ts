// What each working task keeps alive: the difference between two V8 heap
// snapshots of the gateway (bench/tasks/working-mem.ts --snapshot), grouped by
// object kind (constructor, closure name, or V8's internal type), divided by
// the number of tasks between them.
//
//   node --import tsx bench/investigations/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot N [--top 40] [--retainers NAME,NAME]
//
// `--retainers` lists, for the objects of those kinds in AFTER, what holds
// them (the kinds of their strong retainers and the edge names), to tell who
// keeps a request-scoped object alive once its call has become a task.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: "string", default: "40" },
    retainers: { type: "string", default: "" },
    path: { type: "string", default: "" },
  },
});

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Heap {
  kinds: string[];
  selfSize: Int32Array | number[];
  snap: Snapshot;
  nodeFields: number;
  firstEdge: Uint32Array;
}

function load(file: string): Heap {
  const snap = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const meta = snap.snapshot.meta;
  const nf = meta.node_fields.length;
  const typeIdx = meta.node_fields.indexOf("type");
  const nameIdx = meta.node_fields.indexOf("name");
  const sizeIdx = meta.node_fields.indexOf("self_size");
  const edgeCountIdx = meta.node_fields.indexOf("edge_count");
  const types = meta.node_types[0];
  const count = snap.nodes.length / nf;
  const kinds: string[] = new Array<string>(count);
  const selfSize: number[] = new Array<number>(count);
  const firstEdge = new Uint32Array(count + 1);
  let edge = 0;
  for (let i = 0; i < count; i++) {
    const base = i * nf;
    const type = types[snap.nodes[base + typeIdx] as number] as string;
    const name = snap.strings[snap.nodes[base + nameIdx] as number] as string;
    kinds[i] = kindOf(type, name);
    selfSize[i] = snap.nodes[base + sizeIdx] as number;
    firstEdge[i] = edge;
    edge += (snap.nodes[base + edgeCountIdx] as number) * meta.edge_fields.length;
  }
  firstEdge[count] = edge;
  return { kinds, selfSize, snap, nodeFields: nf, firstEdge };
}

function kindOf(type: string, name: string): string {
  switch (type) {
    case "object":
      return name;
    case "closure":
      return `closure ${name === "" ? "(anonymous)" : name}`;
    case "string":
    case "concatenated string":
    case "sliced string":
      return "(string)";
    case "number":
      return "(number)";
    case "code":
      return "(code)";
    case "hidden":
    case "array":
    case "object shape":
      return `(${type}) ${name.length > 40 ? `${name.slice(0, 40)}…` : name}`;
    default:
      return `(${type})`;
  }
}

function histogram(heap: Heap): Map<string, { count: number; size: number }> {
  const out = new Map<string, { count: number; size: number }>();
  heap.kinds.forEach((kind, i) => {
    const entry = out.get(kind) ?? { count: 0, size: 0 };
    entry.count += 1;
    entry.size += heap.selfSize[i] as number;
    out.set(kind, entry);
  });
  return out;
}

/** Where an edge's fields sit in the snapshot's flat edge array. */
function edgeLayout(heap: Heap) {
  const { snap } = heap;
  const ef = snap.snapshot.meta.edge_fields;
  return {
    snap,
    efn: ef.length,
    typeIdx: ef.indexOf("type"),
    nameIdx: ef.indexOf("name_or_index"),
    toIdx: ef.indexOf("to_node"),
    edgeTypes: snap.snapshot.meta.edge_types[0],
  };
}

function retainersOf(heap: Heap, wanted: Set<string>): Map<string, Map<string, number>> {
  const { snap, efn, typeIdx, nameIdx, toIdx, edgeTypes } = edgeLayout(heap);
  const out = new Map<string, Map<string, number>>();
  for (let from = 0; from < heap.kinds.length; from++) {
    for (let e = heap.firstEdge[from] as number; e < (heap.firstEdge[from + 1] as number); e += efn) {
      const edgeType = edgeTypes[snap.edges[e + typeIdx] as number] as string;
      if (edgeType === "weak" || edgeType === "shortcut") continue;
      const to = (snap.edges[e + toIdx] as number) / heap.nodeFields;
      const kind = heap.kinds[to] as string;
      if (!wanted.has(kind)) continue;
      const raw = snap.edges[e + nameIdx] as number;
      const edgeName =
        edgeType === "element" || edgeType === "hidden" ? `[${edgeType}]` : (snap.strings[raw] ?? String(raw));
      const key = `${heap.kinds[from]} .${edgeName}`;
      const m = out.get(kind) ?? new Map<string, number>();
      m.set(key, (m.get(key) ?? 0) + 1);
      out.set(kind, m);
    }
  }
  return out;
}

/** The shortest chain of strong references from the roots to one object of `kind`: who keeps it alive. */
function pathTo(heap: Heap, kind: string): string[] {
  const { snap, efn, typeIdx, nameIdx, toIdx, edgeTypes } = edgeLayout(heap);
  const parent = new Int32Array(heap.kinds.length).fill(-1);
  const via = new Array<string>(heap.kinds.length);
  parent[0] = 0;
  let frontier = [0];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const from of frontier) {
      for (let e = heap.firstEdge[from] as number; e < (heap.firstEdge[from + 1] as number); e += efn) {
        const edgeType = edgeTypes[snap.edges[e + typeIdx] as number] as string;
        if (edgeType === "weak" || edgeType === "shortcut") continue;
        const to = (snap.edges[e + toIdx] as number) / heap.nodeFields;
        if (parent[to] !== -1) continue;
        parent[to] = from;
        const raw = snap.edges[e + nameIdx] as number;
        via[to] = edgeType === "element" || edgeType === "hidden" ? `[${raw}]` : (snap.strings[raw] ?? String(raw));
        if (heap.kinds[to] === kind) {
          const out: string[] = [];
          for (let at = to; at !== 0; at = parent[at] as number) out.push(`${heap.kinds[at]} <- .${via[at]}`);
          return out;
        }
        next.push(to);
      }
    }
    frontier = next;
  }
  return [];
}

const [beforeFile, afterFile, nText] = positionals;
if (beforeFile === undefined || afterFile === undefined || nText === undefined) {
  process.stderr.write("usage: heap-diff.ts BEFORE AFTER N [--top 40] [--retainers NAME,NAME]\n");
  process.exit(2);
}
const n = Number(nText);
const before = histogram(load(beforeFile));
const afterHeap = load(afterFile);
const after = histogram(afterHeap);
const rows = [...after].map(([kind, a]) => {
  const b = before.get(kind) ?? { count: 0, size: 0 };
  return { kind, count: (a.count - b.count) / n, size: (a.size - b.size) / n };
});
rows.sort((x, y) => y.size - x.size);
const total = rows.reduce((s, r) => s + r.size, 0);
process.stdout.write(
  `self size per task, all kinds: ${total.toFixed(0)} B\n\n| kind | objects/task | bytes/task |\n|---|---:|---:|\n`,
);
for (const r of rows.slice(0, Number(values.top)))
  process.stdout.write(`| ${r.kind} | ${r.count.toFixed(2)} | ${r.size.toFixed(0)} |\n`);
if (values.retainers !== "") {
  const wanted = new Set(values.retainers.split(","));
  for (const [kind, holders] of retainersOf(afterHeap, wanted)) {
    process.stdout.write(`\nretainers of ${kind}:\n`);
    for (const [k, c] of [...holders].sort((x, y) => y[1] - x[1]).slice(0, 12)) process.stdout.write(`  ${c}  ${k}\n`);
  }
}
for (const kind of values.path === "" ? [] : values.path.split(",")) {
  process.stdout.write(`\npath to a ${kind} (object <- edge that holds it, up to the root):\n`);
  for (const step of pathTo(afterHeap, kind)) process.stdout.write(`  ${step}\n`);
}
