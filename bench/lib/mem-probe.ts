// A probe preloaded into the gateway process of the memory scenarios only, as
// a data: URL (node --expose-gc --import data:text/javascript,…), so that it
// needs no TypeScript loader and works with the compiled gateway too.
//
// On SIGUSR2 it prints one line on stderr,
//   BENCH_MEM {"seq":N,"before":{…},"afterGc":{…}}
// with process.memoryUsage() before and after a full GC, so the harness can
// tell live memory from garbage and the V8 heap from the rest of the RSS.
// The gateway's own code is not touched; nothing runs until the signal.
const SOURCE = `
let seq = 0;
process.on('SIGUSR2', () => {
  seq += 1;
  const before = process.memoryUsage();
  globalThis.gc?.();
  const afterGc = process.memoryUsage();
  process.stderr.write('BENCH_MEM ' + JSON.stringify({ seq, before, afterGc }) + '\\n');
});
`;

/** Node arguments that load the probe and let it force a GC. */
export const MEM_PROBE_ARGS: readonly string[] = [
  "--expose-gc",
  `--import=data:text/javascript,${encodeURIComponent(SOURCE)}`,
];
