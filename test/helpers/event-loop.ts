// How long the event loop was held while something ran: a timer chain ticks every millisecond, and the longest
// stretch without a tick is measured in this process's CPU time (a busy machine that deschedules the process does not
// count) and in wall-clock time (for messages). For tests that a crafted input cannot stall the gateway: their bounds
// are generous, in tens of ms, and say "linear", not "fast".

export interface Hold {
  cpuMs: number;
  wallMs: number;
}

/** The longest the event loop went without a tick while `during` ran. */
export async function longestHold(during: Promise<unknown>): Promise<Hold> {
  const cpuNow = (): number => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1_000;
  };
  let last = { cpu: cpuNow(), wall: performance.now() };
  const longest: Hold = { cpuMs: 0, wallMs: 0 };
  let running = true;
  const tick = (): void => {
    const now = { cpu: cpuNow(), wall: performance.now() };
    longest.cpuMs = Math.max(longest.cpuMs, now.cpu - last.cpu);
    longest.wallMs = Math.max(longest.wallMs, now.wall - last.wall);
    last = now;
    if (running) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  try {
    await during;
  } finally {
    running = false;
  }
  return longest;
}

/** Runs each step in a macrotask of its own, as events arrive in a server. */
export async function eachInTurn<T>(items: readonly T[], step: (item: T) => void): Promise<void> {
  for (const item of items) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    step(item);
  }
}
