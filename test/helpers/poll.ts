// Bounded polling for tests that wait on another connection or process.
import { setTimeout as sleep } from "node:timers/promises";

/** Polls `probe` until `done` holds or `limitMs` passes; returns the last value (the test asserts on it). */
export async function pollUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, limitMs = 5_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  let value = await probe();
  while (!done(value) && Date.now() < deadline) {
    await sleep(20);
    value = await probe();
  }
  return value;
}
