// Signals to a test's child process and everything it started: the children are spawned detached, so each
// leads a process group, and a negative pid reaches the whole group (npx, a shell, the server under them).
import type { ChildProcess } from "node:child_process";

/** `signal` to the child's process group, else to the child alone; nothing when it is gone already. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}
