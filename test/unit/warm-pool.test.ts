// WarmPool with fake processes and a hand-driven timer: a command that keeps failing is retried after a
// growing backoff (never in a tight loop), a used process resets it, and room within maxProcesses is respected.
import { setImmediate as turn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import type { ExitInfo, StdioListeners } from "../../src/stdio/child.js";
import { LineTooLongError } from "../../src/stdio/framing.js";
import {
  REFILL_DELAY_MS,
  warmBackoffMs,
  WarmPool,
  type WarmChild,
  type WarmTimers,
} from "../../src/stdio/warm-pool.js";

class FakeChild implements WarmChild {
  private static next = 1_000;
  readonly pid = FakeChild.next++;
  alive = true;
  listeners: StdioListeners;
  readonly sent: unknown[] = [];
  private exit: (info: ExitInfo) => void = () => {};
  readonly exited = new Promise<ExitInfo>((resolve) => (this.exit = resolve));

  constructor(listeners: StdioListeners) {
    this.listeners = listeners;
  }
  send(message: unknown): boolean {
    this.sent.push(message);
    return this.alive;
  }
  listen(listeners: StdioListeners): void {
    this.listeners = listeners;
  }
  /** Answers the ping it was sent. */
  pong(): void {
    const ping = this.sent.find((m) => (m as { method?: string }).method === "ping") as { id: string };
    this.listeners.onMessage({ jsonrpc: "2.0", id: ping.id, result: {} });
  }
  die(code = 1): void {
    if (!this.alive) return;
    this.alive = false;
    this.exit({ code, signal: null });
  }
  kill(): Promise<ExitInfo> {
    this.die(137);
    return this.exited;
  }
  stop(): Promise<ExitInfo> {
    return this.kill();
  }
  stderrTail(): string[] {
    return [];
  }
}

/** Timers run only when the test says so. */
function manualTimers(): WarmTimers & { pending: { fn: () => void; ms: number }[]; fire(): void } {
  const pending: { fn: () => void; ms: number }[] = [];
  return {
    pending,
    set: (fn, ms) => {
      const t = { fn, ms };
      pending.push(t);
      return t;
    },
    clear: (handle) => {
      const i = pending.indexOf(handle as { fn: () => void; ms: number });
      if (i !== -1) pending.splice(i, 1);
    },
    fire() {
      const retry = pending.find((t) => t.ms !== 30_000);
      if (!retry) throw new Error("no retry pending");
      pending.splice(pending.indexOf(retry), 1);
      retry.fn();
    },
  };
}

function pool(opts: { size: number; max?: number; spawn?: (l: StdioListeners) => Promise<FakeChild> }) {
  const children: FakeChild[] = [];
  const timers = manualTimers();
  let spawns = 0;
  const lines: Array<Record<string, unknown>> = [];
  const p: WarmPool<FakeChild> = new WarmPool<FakeChild>({
    size: opts.size,
    spawn:
      opts.spawn ??
      ((listeners) => {
        spawns++;
        // Counted as spawning by the pool until it resolves, then as a live process (the host's procs).
        return turn().then(() => {
          const c = new FakeChild(listeners);
          children.push(c);
          return c;
        });
      }),
    room: () => children.filter((c) => c.alive).length + p.spawning < (opts.max ?? 10),
    readyTimeoutMs: 30_000,
    name: "fake",
    label: "stdio: fake",
    log: createLogger("debug", (l) => void lines.push(JSON.parse(l) as Record<string, unknown>)),
    timers,
  });
  return { pool: p, children, timers, lines, spawns: () => spawns };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await turn();
}

describe("WarmPool", () => {
  it("backs off: the first failure is replaced at once, then 1 s, 2 s, 4 s … up to 60 s", () => {
    expect([1, 2, 3, 4, 5, 8, 20].map(warmBackoffMs)).toEqual([0, 1_000, 2_000, 4_000, 8_000, 60_000, 60_000]);
  });

  it("a command that cannot start is retried on the backoff timer only, never in a loop", async () => {
    let attempts = 0;
    const {
      pool: p,
      timers,
      lines,
    } = pool({
      size: 2,
      spawn: () => {
        attempts++;
        return Promise.reject(new Error("spawn ENOENT"));
      },
    });
    p.fill();
    await settle();
    // Two starts failed (the pool's size); the second failure set a 1 s retry, and nothing runs until it fires.
    expect(attempts).toBe(2);
    expect(timers.pending.map((t) => t.ms)).toEqual([1_000]);
    await settle();
    expect(attempts).toBe(2);
    timers.fire();
    await settle();
    expect(attempts).toBe(4);
    expect(timers.pending.map((t) => t.ms)).toEqual([2_000]);
    // Each failure's line names the upstream by its configured name, the command apart.
    const failed = lines.filter((l) => l.msg === "stdio warm process failed; starting another");
    expect(failed).toHaveLength(4);
    for (const l of failed) expect(l).toMatchObject({ upstream: "fake", command: "stdio: fake" });
    await p.close();
    expect(timers.pending).toEqual([]);
  });

  it("a process that dies while warm is replaced; a taken one is the caller's and resets the backoff", async () => {
    const { pool: p, children, spawns } = pool({ size: 1 });
    p.fill();
    await settle();
    children[0]?.pong();
    await settle();
    expect(p.ready).toBe(1);
    children[0]?.die();
    await settle();
    expect(spawns()).toBe(2);
    children[1]?.pong();
    await settle();
    const taken = p.take();
    expect(taken).toBe(children[1]);
    expect(p.ready).toBe(0);
    await settle();
    // The replacement started; the taken one dying later is no concern of the pool's.
    expect(spawns()).toBe(3);
    taken?.die();
    await settle();
    expect(spawns()).toBe(3);
    await p.close();
  });

  it("a take that leaves a ready process puts its replacement off; one that empties the pool refills at once", async () => {
    const { pool: p, children, timers, spawns } = pool({ size: 2 });
    p.fill();
    await settle();
    children[0]?.pong();
    children[1]?.pong();
    await settle();
    expect(p.ready).toBe(2);
    expect(p.take()).toBe(children[0]);
    await settle();
    // The session that took it starts without a new process booting beside it.
    expect(spawns()).toBe(2);
    expect(timers.pending.map((t) => t.ms)).toEqual([REFILL_DELAY_MS]);
    // A process exiting meanwhile (the session ended) does not start one early either.
    children[0]?.die();
    await settle();
    expect(spawns()).toBe(2);
    timers.fire();
    await settle();
    expect(spawns()).toBe(3);
    children[2]?.pong();
    await settle();
    expect(p.take()).toBe(children[1]);
    expect(p.take()).toBe(children[2]);
    await settle();
    // Emptied: both replacements start now, and the refill the take before put off is dropped.
    expect(spawns()).toBe(5);
    expect(timers.pending.filter((t) => t.ms === REFILL_DELAY_MS)).toEqual([]);
    await p.close();
    expect(timers.pending).toEqual([]);
  });

  it("a warm process that breaks the framing is killed and replaced; one that never answers its ping too", async () => {
    const { pool: p, children, timers, spawns } = pool({ size: 1 });
    p.fill();
    await settle();
    children[0]?.pong();
    await settle();
    children[0]?.listeners.onFramingError(new LineTooLongError(1_024));
    await settle();
    expect(children[0]?.alive).toBe(false);
    expect(spawns()).toBe(2);
    // The new one does not answer: its ping's timer (spawnTimeoutMs) ends it, and the next start waits 1 s.
    const ping = timers.pending.find((t) => t.ms === 30_000);
    ping?.fn();
    await settle();
    expect(children[1]?.alive).toBe(false);
    expect(timers.pending.map((t) => t.ms)).toEqual([1_000]);
    expect(spawns()).toBe(2);
    await p.close();
  });

  it("starts nothing beyond maxProcesses, and evicts a process still answering its ping to make room", async () => {
    const { pool: p, children } = pool({ size: 3, max: 2 });
    p.fill();
    await settle();
    expect(children).toHaveLength(2);
    children[0]?.pong();
    await settle();
    expect(p.ready).toBe(1);
    expect(await p.evict()).toBe(true);
    expect(children[1]?.alive).toBe(false);
    expect(children[0]?.alive).toBe(true);
    // Only the ready one is left: evict never takes a ready process (take() hands it out instead).
    expect(await p.evict()).toBe(false);
    await p.close();
    expect(children.every((c) => !c.alive)).toBe(true);
  });
});
