import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PassThrough } from "node:stream";
import { pumpBody, type Pump, type PumpSink } from "../../src/http/pump.js";
import { SSE_KEEPALIVE } from "../../src/protocol/sse-boundary.js";

type Outcome = "ended" | "failed" | "stopped";

interface Harness {
  body: PassThrough;
  pump: Pump;
  /** Every write the sink received, in order. */
  writes: Buffer[];
  ends: number;
  failures: Error[];
  done: Array<{ outcome: Outcome; err: Error | undefined }>;
  /** What sink.write returns next. */
  accepting: boolean;
  text(): string;
  keepAlives(): number;
}

function harness(keepAliveMs: number, now: () => number = () => Date.now()): Harness {
  const body = new PassThrough();
  const h: Omit<Harness, "pump"> = {
    body,
    writes: [],
    ends: 0,
    failures: [],
    done: [],
    accepting: true,
    text: () => Buffer.concat(h.writes).toString("utf8"),
    keepAlives: () => h.writes.filter((w) => w.equals(SSE_KEEPALIVE)).length,
  };
  const sink: PumpSink = {
    write: (chunk) => {
      h.writes.push(Buffer.from(chunk));
      return h.accepting;
    },
    end: () => {
      h.ends += 1;
    },
    fail: (err) => {
      h.failures.push(err);
    },
  };
  const pump = pumpBody(body, sink, {
    keepAliveMs,
    // Driven by the fake clock unless a test injects its own.
    now,
    onDone: (outcome, err) => h.done.push({ outcome, err }),
  });
  return Object.assign(h, { pump });
}

/** Lets stream events run; setImmediate is left real by the fake-timer config. */
async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("pumpBody: forwarding", () => {
  it("forwards chunks in order, then ends the sink once and reports 'ended'", async () => {
    const h = harness(0);
    const parts = ["alpha ", "beta ", "gamma ", "δέλτα ✓"];
    for (const p of parts) h.body.write(p);
    await flush();
    h.body.end("!");
    await flush();
    expect(h.text()).toBe(`${parts.join("")}!`);
    expect(h.writes.length).toBeGreaterThanOrEqual(2);
    expect(h.ends).toBe(1);
    expect(h.failures).toEqual([]);
    expect(h.done).toEqual([{ outcome: "ended", err: undefined }]);
  });

  it("ends an empty body without writing", async () => {
    const h = harness(0);
    h.body.end();
    await flush();
    expect(h.writes).toEqual([]);
    expect(h.ends).toBe(1);
    expect(h.done.map((d) => d.outcome)).toEqual(["ended"]);
  });

  it("pauses the body when the sink is full and resumes on resume()", async () => {
    const h = harness(0);
    h.accepting = false;
    h.body.write("one");
    await flush();
    expect(h.writes.map(String)).toEqual(["one"]);
    expect(h.body.isPaused()).toBe(true);

    h.body.write("two");
    h.body.write("three");
    await flush();
    // Nothing more is pulled while the sink is full.
    expect(h.writes.map(String)).toEqual(["one"]);

    h.accepting = true;
    h.pump.resume();
    await flush();
    expect(h.body.isPaused()).toBe(false);
    expect(h.text()).toBe("onetwothree");

    h.body.end();
    await flush();
    expect(h.done.map((d) => d.outcome)).toEqual(["ended"]);
  });

  it("pauses again each time the sink says it is full", async () => {
    const h = harness(0);
    h.accepting = false;
    h.body.write("a");
    h.body.write("b");
    await flush();
    expect(h.text()).toBe("a");
    h.pump.resume();
    await flush();
    expect(h.text()).toBe("ab");
    expect(h.body.isPaused()).toBe(true);
  });
});

describe("pumpBody: SSE keep-alive", () => {
  const KEEPALIVE_MS = 1_000;

  it("sends a comment on a stream idle since its start", async () => {
    const h = harness(KEEPALIVE_MS);
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS - 1);
    expect(h.keepAlives()).toBe(0);
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS + 1);
    expect(h.keepAlives()).toBeGreaterThanOrEqual(1);
    expect(h.writes.every((w) => w.equals(SSE_KEEPALIVE))).toBe(true);
  });

  it("never splits an event: no comment while mid-event, one after it completes and time passes", async () => {
    const h = harness(KEEPALIVE_MS);
    h.body.write('event: progress\ndata: {"progress"');
    await flush();

    // Long idle in the middle of an event: inserting a comment would corrupt it.
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 10);
    expect(h.keepAlives()).toBe(0);

    h.body.write(":1}\n");
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 10);
    expect(h.keepAlives()).toBe(0);

    h.body.write("\n");
    await flush();
    // Not before the stream has been idle for the whole interval…
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS - 1);
    expect(h.keepAlives()).toBe(0);
    // …and within at most one more interval after that.
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS + 1);
    expect(h.keepAlives()).toBeGreaterThanOrEqual(1);

    const text = h.text();
    expect(text.startsWith('event: progress\ndata: {"progress":1}\n\n')).toBe(true);
    expect(text.slice('event: progress\ndata: {"progress":1}\n\n'.length)).toMatch(/^(: keepalive\n\n)+$/);
  });

  it("sends no comment while the client is not keeping up, and resumes after resume()", async () => {
    const h = harness(100);
    h.accepting = false;
    h.body.write("event: message\ndata: {}\n\n");
    await flush();
    vi.advanceTimersByTime(500);
    expect(h.keepAlives()).toBe(0);
    h.accepting = true;
    h.pump.resume();
    vi.advanceTimersByTime(200);
    expect(h.keepAlives()).toBeGreaterThan(0);
  });

  it("keeps sending comments while the stream stays idle", async () => {
    const h = harness(KEEPALIVE_MS);
    h.body.write("data: x\n\n");
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 5);
    expect(h.keepAlives()).toBeGreaterThanOrEqual(4);
    expect(h.keepAlives()).toBeLessThanOrEqual(5);
  });

  it("sends no comment while events keep flowing", async () => {
    const h = harness(KEEPALIVE_MS);
    for (let i = 0; i < 20; i++) {
      h.body.write(`data: ${i}\n\n`);
      await flush();
      await vi.advanceTimersByTimeAsync(KEEPALIVE_MS / 2);
    }
    expect(h.keepAlives()).toBe(0);
    expect(h.writes).toHaveLength(20);
  });

  it("recognises CRLF-terminated events as boundaries", async () => {
    const h = harness(KEEPALIVE_MS);
    h.body.write("data: x\r\n");
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 3);
    expect(h.keepAlives()).toBe(0);
    h.body.write("\r\n");
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 2);
    expect(h.keepAlives()).toBeGreaterThanOrEqual(1);
  });

  it("keeps one timer per event stream however many chunks arrive", async () => {
    const h = harness(KEEPALIVE_MS);
    expect(vi.getTimerCount()).toBe(1);
    for (let i = 0; i < 10; i++) h.body.write(`data: ${i}\n\n`);
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS / 2);
    expect(vi.getTimerCount()).toBe(1);
  });

  it("idleness is the injected clock's: timers firing while it stands still send nothing", async () => {
    let clock = 0;
    const h = harness(KEEPALIVE_MS, () => clock);
    h.body.write("data: x\n\n");
    await flush();
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 5);
    expect(h.keepAlives()).toBe(0);
    clock += KEEPALIVE_MS;
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS);
    expect(h.keepAlives()).toBe(1);
  });

  it("keepAliveMs 0 never sends a comment and arms no timer", async () => {
    const h = harness(0);
    expect(vi.getTimerCount()).toBe(0);
    h.body.write("data: x\n\n");
    await flush();
    await vi.advanceTimersByTimeAsync(60 * 60 * 1000);
    expect(h.keepAlives()).toBe(0);
    expect(h.text()).toBe("data: x\n\n");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stops sending comments once the body has ended", async () => {
    const h = harness(KEEPALIVE_MS);
    h.body.end("data: last\n\n");
    await flush();
    expect(h.done.map((d) => d.outcome)).toEqual(["ended"]);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(KEEPALIVE_MS * 5);
    expect(h.keepAlives()).toBe(0);
  });
});

describe("pumpBody: failure and stop", () => {
  it("a body error fails the sink and reports 'failed' with the error", async () => {
    const h = harness(1_000);
    h.body.write("data: partial");
    await flush();
    const boom = new Error("other side closed");
    h.body.destroy(boom);
    await flush();
    expect(h.failures).toEqual([boom]);
    expect(h.ends).toBe(0);
    expect(h.done).toEqual([{ outcome: "failed", err: boom }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stop() reports 'stopped' once, and nothing reaches the sink afterwards", async () => {
    const h = harness(1_000);
    h.body.write("data: 1\n\n");
    await flush();
    const before = h.writes.length;

    h.pump.stop();
    expect(h.done).toEqual([{ outcome: "stopped", err: undefined }]);
    expect(vi.getTimerCount()).toBe(0);

    h.body.write("data: 2\n\n");
    await flush();
    await vi.advanceTimersByTimeAsync(10_000);
    h.body.end();
    await flush();
    expect(h.writes).toHaveLength(before);
    expect(h.ends).toBe(0);

    h.pump.stop();
    expect(h.done).toHaveLength(1);
  });

  it("an error after stop() (the upstream being aborted) is swallowed, not reported twice", async () => {
    const h = harness(0);
    h.pump.stop();
    h.body.destroy(new Error("aborted"));
    await flush();
    expect(h.failures).toEqual([]);
    expect(h.done.map((d) => d.outcome)).toEqual(["stopped"]);
  });

  it("stop() mid-stream while paused for the client: resume() afterwards reads nothing more", async () => {
    const h = harness(1_000);
    h.accepting = false;
    h.body.write("data: 1\n\n");
    h.body.write("data: 2\n\n");
    await flush();
    expect(h.body.isPaused()).toBe(true);
    h.pump.stop();
    h.accepting = true;
    h.pump.resume();
    await flush();
    expect(h.body.isPaused()).toBe(true);
    expect(h.text()).toBe("data: 1\n\n");
    expect(h.done.map((d) => d.outcome)).toEqual(["stopped"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("an upstream error while paused for the client fails the sink once", async () => {
    const h = harness(0);
    h.accepting = false;
    h.body.write("one");
    h.body.write("two");
    await flush();
    const boom = new Error("upstream reset");
    h.body.destroy(boom);
    await flush();
    expect(h.text()).toBe("one");
    expect(h.failures).toEqual([boom]);
    expect(h.ends).toBe(0);
    expect(h.done).toEqual([{ outcome: "failed", err: boom }]);
  });

  it("stop() after the body ended changes nothing", async () => {
    const h = harness(0);
    h.body.end("x");
    await flush();
    h.pump.stop();
    expect(h.done.map((d) => d.outcome)).toEqual(["ended"]);
  });
});
