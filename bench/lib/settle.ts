// Waiting for a shared machine to go quiet before a point. Other work on the
// two cores (a test run, a compiler) distorts every figure; waiting a little
// for it to pass is cheaper than re-running the bench.
import { machineCpu } from "./cpu.js";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Cores' worth of process CPU used on the machine over `ms` (our idle children use ~0). */
async function loadOver(ms: number): Promise<number> {
  const before = machineCpu().tasks;
  await sleep(ms);
  return (machineCpu().tasks - before) / (ms / 1000);
}

/**
 * Waits up to `maxSec` until the machine uses less than `threshold` cores while
 * the bench is idle. Returns the load seen last, so the caller can report it.
 */
export async function settle(maxSec: number, threshold = 0.2): Promise<number> {
  const deadline = performance.now() + maxSec * 1000;
  let load = await loadOver(300);
  while (load > threshold && performance.now() < deadline) load = await loadOver(500);
  return load;
}
