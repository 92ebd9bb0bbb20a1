// Import cycles, type-only imports included: `npm run lint` runs this after ESLint. import-x/no-cycle (eslint.config.js)
// does not count `import type` (nor `import { type X }`), and eslint-plugin-import-x has no option that makes it
// (4.18: the rule skips them unconditionally), so a cycle that one side closes with a type import went unseen
// (src/protocol/errors.ts ↔ jsonrpc.ts did). Types are erased at run time, but such a cycle still ties two files
// into one unit that cannot be read, tested or moved apart, and turns into a run-time cycle at the first value
// import. Every file tsconfig.json includes is read with TypeScript's import scanner (static imports and
// re-exports, `import type`, `import()`); each import is resolved as tsc resolves it; files outside the project
// (node_modules) are left out. Exits 1 naming every cycle, with each of its imports (file:line).
//
//   node --import tsx scripts/import-cycles.ts
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "..");

function projectFiles(): { files: string[]; options: ts.CompilerOptions } {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(root, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (!parsed) throw new Error("cannot read tsconfig.json");
  return { files: parsed.fileNames.filter((f) => !f.endsWith(".d.ts")), options: parsed.options };
}

interface Edge {
  to: string;
  line: number;
}

/** Each file's imports of other project files (the first import of each target, with its line). */
function importGraph(): Map<string, Edge[]> {
  const { files, options } = projectFiles();
  const project = new Set(files);
  const graph = new Map<string, Edge[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const edges = new Map<string, Edge>();
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      const resolved = ts.resolveModuleName(ref.fileName, file, options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport || !project.has(resolved.resolvedFileName)) continue;
      const to = resolved.resolvedFileName;
      if (to === file || edges.has(to)) continue;
      edges.set(to, { to, line: text.slice(0, ref.pos).split("\n").length });
    }
    graph.set(file, [...edges.values()]);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan, iterative): each holds at least one cycle. */
function cycles(graph: Map<string, Edge[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = (edges[frame.edge++] as Edge).to;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(to) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) found.push(component.sort());
      }
    }
  }
  return found;
}

const graph = importGraph();
const found = cycles(graph);
if (found.length === 0) {
  process.stdout.write(`import-cycles: no cycle among ${graph.size} files (type-only imports counted)\n`);
} else {
  const rel = (file: string): string => path.relative(root, file);
  for (const component of found) {
    const members = new Set(component);
    process.stderr.write(
      `import-cycles: these ${component.length} files import each other (type-only imports counted):\n`,
    );
    for (const file of component) {
      for (const edge of graph.get(file) ?? []) {
        if (members.has(edge.to)) process.stderr.write(`  ${rel(file)}:${edge.line} imports ${rel(edge.to)}\n`);
      }
    }
  }
  process.exitCode = 1;
}
