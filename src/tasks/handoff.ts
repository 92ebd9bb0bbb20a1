// Graceful shutdown with shared state: the drain (no new tasks, the running ones get a while to finish) and
// the handoff of what is left to another instance (a rolling deploy), which resumes the upstream call with
// the ticket this one leaves in the store. Both halves wait on the engine's injected clock, like the rest of
// the engine; only the pause between two looks is a real timer.
//
// The engine owns the running tasks; this module takes a task out of them while it is offered, puts it back
// when nobody took it, and adds the tasks it takes over from others.
import type { Logger } from "../log/logger.js";
import { runnerLost } from "../protocol/errors.js";
import type { TaskEvents } from "../store/task-events.js";
import type { TaskLeases } from "../store/task-leases.js";
import type { TaskStore } from "../store/task-store.js";
import { TERMINAL, type TaskEvent } from "./task.js";
import type { RunningTask, TaskResumer } from "./task-runtime.js";

/** The pause between two looks at the running tasks while draining. */
const DRAIN_POLL_MS = 100;
/** The pause between two looks at an offered task's lease. */
const OFFER_POLL_MS = 50;

export interface HandoffOptions {
  store: TaskStore;
  leases: TaskLeases;
  events: TaskEvents;
  /** The engine's unfinished tasks: the same Map, not a copy. */
  running: Map<string, RunningTask>;
  /** The engine's apply(): how a task taken over but not resumable is ended, like any owner's final change. */
  apply(taskId: string, event: TaskEvent): Promise<unknown>;
  now: () => number;
  log: Logger;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Handoffs {
  private accepting = true;
  private resumer: TaskResumer | undefined;

  constructor(private readonly opts: HandoffOptions) {}

  /** False once draining: no new tasks, and no offers taken. */
  get acceptsTasks(): boolean {
    return this.accepting;
  }

  /**
   * Graceful shutdown, first half: no new tasks, and the running ones get up to
   * `drainMs` to finish. Resolves with the ids still unfinished.
   */
  async drain(drainMs: number): Promise<string[]> {
    const { running, now } = this.opts;
    this.accepting = false;
    const deadline = now() + drainMs;
    while (running.size > 0 && now() < deadline) await pause(Math.min(DRAIN_POLL_MS, deadline - now()));
    return [...running.keys()];
  }

  /**
   * Takes tasks other instances hand on (a rolling deploy), with `resume` to
   * pick each call up. Only instances that share a store hear offers.
   */
  async accept(resume: TaskResumer): Promise<void> {
    const { events, leases, log } = this.opts;
    this.resumer = resume;
    await events.onHandoff((taskId, from) => {
      if (from === leases.replicaId || !this.accepting) return;
      void this.adopt(taskId, from).catch((err: unknown) =>
        log.warn("could not take over a handed-on task", { cause: (err as Error).message }),
      );
    });
  }

  private async adopt(taskId: string, from: string): Promise<void> {
    const { store, leases, running, log } = this.opts;
    const resume = this.resumer;
    // Every listening instance hears the offer; the lease's compare-and-set picks one.
    if (!resume || !(await leases.adopt(taskId, from))) return;
    const ticket = await leases.takeTicket(taskId);
    const stored = await store.get(taskId);
    if (ticket === undefined || !stored || TERMINAL.has(stored.status)) {
      // Nothing to resume: let the lease lapse, and the task ends failed like any orphan.
      await leases.release([taskId]);
      return;
    }
    try {
      const { runtime, start } = await resume(taskId, JSON.parse(ticket) as unknown, stored.record);
      running.set(taskId, { record: stored.record, runtime, about: undefined });
      start();
      log.info("took over a task from a gateway instance that shut down");
    } catch (err) {
      log.warn("could not resume a handed-on task", { cause: (err as Error).message });
      const error = runnerLost(
        "The gateway instance running this task shut down, and its upstream call could not be resumed elsewhere",
      );
      // Ours now (we hold the lease), so ours to end, like any owner's final change.
      running.set(taskId, {
        record: stored.record,
        runtime: { answer: () => Promise.resolve(), cancel: () => undefined },
        about: undefined,
      });
      await this.opts.apply(taskId, { type: "fail", error, message: error.message });
    }
  }

  /**
   * Hands a task this instance runs to another one (graceful shutdown): its
   * call is detached (it goes on upstream), a ticket is offered, and the first
   * instance to take the lease resumes it. False when the call cannot be
   * resumed or nobody took it within `windowMs`; the task is then still here.
   */
  async handOff(taskId: string, windowMs: number): Promise<boolean> {
    const { leases, events, running, now, log } = this.opts;
    const run = running.get(taskId);
    if (!run?.runtime.detach) return false;
    // Detaching stops reading the call: only worth it when another instance listens for offers.
    if ((await events.handoffPeers().catch(() => 0)) === 0) return false;
    const ticket = run.runtime.detach();
    if (ticket === undefined) return false;
    // From here the call's late events are not ours to apply.
    running.delete(taskId);
    const deadline = now() + windowMs;
    try {
      await leases.offer(taskId, JSON.stringify(ticket), windowMs);
      events.announceHandoff(taskId, leases.replicaId);
      while (now() < deadline) {
        const runner = await leases.runner(taskId);
        if (runner !== leases.replicaId) return true;
        // Our lease must not lapse while the offer waits: a sweep would end the task under the taker.
        await leases.renew([taskId]);
        await pause(OFFER_POLL_MS);
      }
      await leases.withdraw(taskId);
      // A taker may have adopted it at the last moment.
      if ((await leases.runner(taskId)) !== leases.replicaId) return true;
    } catch (err) {
      log.warn("task handoff failed", { cause: (err as Error).message });
    }
    // Nobody took it: it is ours again, to end.
    running.set(taskId, run);
    return false;
  }
}
