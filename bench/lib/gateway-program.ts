// Which gateway program the benches run: the compiled dist/ by default, as users run it (`npm run build`, plain node),
// or src/ under tsx with BENCH_GATEWAY=src (`npm run bench -- --src`). tsx names every function it compiles, a
// property definition per closure made, which dist/ does not pay; figures from src/ read a little slower.
// dist/ is built here, once per harness, when it is missing or older than a file of src/.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./paths.js";

const COMPILED_ENTRY = join(ROOT, "dist/main.js");
// The process entry point: src/main.ts runs the CLI (src/cli.ts only exports it since the CLI became testable);
// fall back to cli.ts for trees that predate that.
const SOURCE_ENTRIES = [join(ROOT, "src/main.ts"), join(ROOT, "src/cli.ts")];

export function sourceEntry(): string | undefined {
  return SOURCE_ENTRIES.find((file) => existsSync(file));
}

/** True unless BENCH_GATEWAY=src: the benches measure what users run. */
export function fromDist(): boolean {
  return process.env.BENCH_GATEWAY !== "src";
}

/** Why dist/ cannot stand for src/ (missing, or older than a source file), or undefined. */
function staleness(): string | undefined {
  if (!existsSync(COMPILED_ENTRY)) return "dist/main.js does not exist";
  const built = statSync(COMPILED_ENTRY).mtimeMs;
  const stale = readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" }).find(
    (f) => f.endsWith(".ts") && statSync(join(ROOT, "src", f)).mtimeMs > built,
  );
  return stale === undefined ? undefined : `dist/ is older than src/${stale}`;
}

let built = false;

/** Builds dist/ (`npm run build`'s tsc) when it is missing or stale; once per process. Throws when the build fails. */
export function ensureBuilt(): void {
  if (built) return;
  const why = staleness();
  if (why !== undefined) {
    process.stderr.write(`${why}: building it (tsc -p tsconfig.build.json)\n`);
    const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
    const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: ROOT, stdio: "inherit" });
    if (run.status !== 0) throw new Error("could not build dist/ (tsc -p tsconfig.build.json)");
  }
  built = true;
}

/** The gateway CLI's entry file for the program in use (dist/ built first when needed). */
export function gatewayEntry(dist = fromDist()): string | undefined {
  if (!dist) return sourceEntry();
  ensureBuilt();
  return COMPILED_ENTRY;
}

/** The node arguments that run the gateway CLI: dist/ (default: unless BENCH_GATEWAY=src), or src/ under tsx. */
export function gatewayArgs(dist = fromDist()): string[] {
  const entry = gatewayEntry(dist) ?? "src/main.ts";
  return dist ? [entry] : ["--import", "tsx", entry];
}
