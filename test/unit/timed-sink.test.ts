// TimedSink (src/calls/timed-sink.ts): a client leaving a plain call cuts its timing;
// a client leaving a call that became a task does not (the task runs on, and its
// upstream answer is a sample: issue 26).
import { describe, expect, it } from "vitest";
import { TimedSink } from "../../src/calls/timed-sink.js";
import type { CallSink } from "../../src/calls/call-sink.js";
import { LatencyHistory } from "../../src/tasks/latency-history.js";

const DECISION = { thresholdMs: 5_000, pollIntervalMs: 1_000 };

/** A sink whose client can leave (even after it became a task) and which can become a task. */
class FakeSink implements CallSink {
  readonly clientCapabilities = {};
  taskId: string | undefined;
  private readonly gone: Array<() => void> = [];
  onGone(listener: () => void): void {
    this.gone.push(listener);
  }
  leave(): void {
    for (const l of this.gone) l();
  }
  progress(): void {}
  log(): void {}
  inputRequired(): "continue" {
    return "continue";
  }
  result(): void {}
  error(): void {}
}

function setup(): { history: LatencyHistory; inner: FakeSink; sink: TimedSink; advance(ms: number): void } {
  let t = 0;
  const history = new LatencyHistory({
    now: () => t,
    settings: { enabled: true, minPollIntervalMs: 100, maxPollIntervalMs: 10_000 },
  });
  const timing = history.begin("tool", DECISION, false);
  if (!timing) throw new Error("adaptive promotion is off");
  const inner = new FakeSink();
  return { history, inner, sink: new TimedSink(inner, timing), advance: (ms) => (t += ms) };
}

describe("TimedSink", () => {
  it("a client that leaves a plain call early cuts it: no sample", () => {
    const { history, inner, sink, advance } = setup();
    advance(100);
    inner.leave();
    sink.result({});
    expect(history.estimate("tool", DECISION)).toBeUndefined();
  });

  it("a client that leaves a call that became a task does not cut it: the upstream answer is a sample", () => {
    const { history, inner, sink, advance } = setup();
    inner.taskId = "t1";
    advance(50);
    inner.leave();
    advance(30);
    sink.result({});
    expect(history.estimate("tool", DECISION)?.samples).toBe(1);
    expect(history.quantileMs("tool", 0.5)).toBeLessThan(120);
  });
});
