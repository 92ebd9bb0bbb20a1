// Preloaded into the gateway process of the memory scenarios only:
//   node --expose-gc --import tsx --import bench/tasks/mem-probe.ts src/main.ts …
// On SIGUSR2 it prints one line on stderr,
//   BENCH_MEM {"seq":N,"before":{…},"afterGc":{…}}
// with process.memoryUsage() before and after a full GC, so the harness can
// tell live memory from garbage and the V8 heap from the rest of the RSS.
// The gateway's own code is not touched; nothing runs until the signal.
let seq = 0;

process.on('SIGUSR2', () => {
  seq += 1;
  const before = process.memoryUsage();
  globalThis.gc?.();
  const afterGc = process.memoryUsage();
  process.stderr.write(`BENCH_MEM ${JSON.stringify({ seq, before, afterGc })}\n`);
});
