// The command-line options of the benches that alternate rounds and start gateways several times
// (bench/upstreams.ts, bench/federation.ts): --rounds N (3), --duration S (3), --starts N (3), --skip 1,2,3.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median as checkMedian } from "./check.js";
import { ROOT } from "./paths.js";

export interface RunOptions {
  rounds: number;
  /** Seconds per measured point. */
  duration: number;
  /** Gateway starts per memory figure. */
  starts: number;
  /** Figure numbers to skip ("1", "2", …). */
  skip: ReadonlySet<string>;
}

export function runOptions(): RunOptions {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "3" },
      duration: { type: "string", default: "3" },
      starts: { type: "string", default: "3" },
      skip: { type: "string", default: "" },
    },
  });
  return {
    rounds: Math.max(1, Number(values.rounds)),
    duration: Math.max(1, Number(values.duration)),
    starts: Math.max(1, Number(values.starts)),
    skip: new Set(values.skip.split(",").filter((s) => s !== "")),
  };
}

/** The median of `xs` (NaN when empty). */
export function median(xs: readonly number[]): number {
  return checkMedian(xs) ?? NaN;
}

/** Writes a run's raw figures to bench/out/<name>.json (git ignores it) and says where. */
export function writeRawFigures(name: string, figures: Record<string, unknown>): void {
  mkdirSync(join(ROOT, "bench/out"), { recursive: true });
  const raw = join(ROOT, `bench/out/${name}.json`);
  writeFileSync(raw, `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`\nraw figures: ${raw}`);
}
