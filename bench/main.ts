// The one entry of the benches: `npm run bench -- [SUITE | --suite SUITE] [--src] [options]`.
//
//   npm run bench                         the pass-through table (bench/run.ts): gateway, floor, nginx, direct
//   npm run bench -- --check              the regression guard (bench/run.ts, bench/lib/check.ts)
//   npm run bench -- tasks --only get     a suite, with its own options (`npm run bench -- SUITE --help`)
//   npm run bench -- --src …              the gateway from src/ under tsx instead of the compiled dist/
//
// The gateway runs from dist/ by default, as users run it; dist/ is built first when missing or older than src/
// (bench/lib/gateway-program.ts). A suite runs in this process: its file is imported with process.argv as if it had
// been started itself, so each file also runs alone (`node --import tsx bench/FILE.ts`).
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ensureBuilt, fromDist } from "./lib/gateway-program.js";
import { BENCH_DIR } from "./lib/paths.js";
import { pickSuite, SUITES } from "./lib/suites.js";

const HELP = `Usage: npm run bench -- [SUITE | --suite SUITE] [--src] [options]

Without a suite: the pass-through table, or with --check the regression guard (options below).
--src runs the gateway from src/ under tsx (BENCH_GATEWAY=src) instead of the compiled dist/.

Suites (each takes its own options; npm run bench -- SUITE --help):
${Object.entries(SUITES)
  .map(([name, s]) => `  ${name.padEnd(14)} ${s.about}`)
  .join("\n")}
`;

const { suite, rest, src } = pickSuite(process.argv.slice(2));
if (src) process.env.BENCH_GATEWAY = "src";
if (suite !== undefined && SUITES[suite] === undefined) {
  process.stderr.write(`unknown suite ${suite}\n\n${HELP}`);
  process.exit(2);
}
if (suite === undefined && rest.includes("--help")) process.stdout.write(`${HELP}\nThe table and --check:\n`);
// Built once here (not in each child start) so that the first measured start is not a build.
if (fromDist() && !rest.includes("--help")) ensureBuilt();
process.env.BENCH_GATEWAY ??= "dist";
const file = join(BENCH_DIR, suite === undefined ? "run.ts" : (SUITES[suite]?.file ?? "run.ts"));
process.argv = [process.argv[0] ?? process.execPath, file, ...rest];
await import(pathToFileURL(file).href);
