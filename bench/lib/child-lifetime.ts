// Helpers for the bench's own child processes (fast upstream, floor proxy).

/**
 * Exit when the harness goes away. The harness spawns us with a stdin pipe and
 * sets BENCH_CHILD=1; the pipe closes when the harness exits for any reason,
 * even SIGKILL, which no cleanup handler can catch. Without the variable (run
 * by hand) stdin may be a terminal or /dev/null, so we do not watch it.
 */
export function exitWithParent(): void {
  process.on("SIGTERM", () => process.exit(0));
  process.on("SIGINT", () => process.exit(0));
  if (process.env["BENCH_CHILD"] !== "1") return;
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}

/** The one line a bench child prints on stdout once it listens. */
export function announcePort(port: number): void {
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}
