// Input requests a legacy upstream sends together become one round (drive.ts):
// the gathering window (an injected timer here), its count bound, a read left
// in flight when a round ends, and the HTTP status of a relayed modern error code.
import { describe, expect, it } from "vitest";
import type { CallSink } from "../../src/calls/call-sink.js";
import { drive, type DrivenCall, type GatherTimer, type InputGathering } from "../../src/bridge-to-legacy/drive.js";
import type { JsonObject } from "../../src/protocol/json.js";
import type { JsonRpcErrorObject } from "../../src/protocol/jsonrpc.js";
import type { PendingInput } from "../../src/protocol/input-requests.js";
import { LegacySession } from "../../src/bridge-to-legacy/legacy-sessions.js";

const HINTS = { ttlMs: 0, cacheScope: "private" as const };
const CAPS = { elicitation: {}, sampling: {}, roots: {} };

class Feed implements AsyncIterator<unknown> {
  private readonly queue: unknown[] = [];
  private waiting: ((v: unknown) => void) | undefined;
  push(...items: unknown[]): this {
    for (const item of items) {
      const w = this.waiting;
      this.waiting = undefined;
      if (w) w(item);
      else this.queue.push(item);
    }
    return this;
  }
  async next(): Promise<IteratorResult<unknown>> {
    const value = this.queue.length > 0 ? this.queue.shift() : await new Promise((r) => (this.waiting = r));
    return { value, done: false };
  }
}

class Sink implements CallSink {
  readonly rounds: string[][] = [];
  readonly results: JsonObject[] = [];
  readonly errors: Array<{ error: JsonRpcErrorObject; status: number }> = [];
  readonly clientCapabilities: JsonObject = CAPS;
  constructor(private readonly next: "park" | "continue" = "park") {}
  onGone(): void {}
  progress(): void {}
  log(): void {}
  inputRequired(pending: ReadonlyMap<string, PendingInput>): "park" | "continue" {
    this.rounds.push([...pending.keys()]);
    return this.next;
  }
  result(result: JsonObject): void {
    this.results.push(result);
  }
  error(error: JsonRpcErrorObject, status: number): void {
    this.errors.push({ error, status });
  }
}

function callOf(feed: Feed): DrivenCall {
  let seq = 0;
  const session = new LegacySession(
    "k",
    [],
    "s-1",
    { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "u", version: "1" } },
    0,
  );
  const call = {
    session,
    method: "tools/call",
    upstreamId: "gw-1",
    progressToken: "gw-1-progress",
    messages: feed,
    pending: new Map<string, PendingInput>(),
    nextInputKey: () => `input-${++seq}`,
    answer: () => Promise.resolve(),
    cancel: () => undefined,
    end: () => undefined,
    detached: false,
  };
  return call;
}

/** A window timer the test closes by hand. */
function manualTimer(): { timer: GatherTimer; close: () => void; opened: () => number; cancelled: () => number } {
  const windows: Array<() => void> = [];
  let cancelled = 0;
  return {
    timer: () => {
      let fire!: () => void;
      const elapsed = new Promise<void>((resolve) => (fire = resolve));
      windows.push(fire);
      return {
        elapsed,
        cancel: () => {
          cancelled += 1;
          windows.splice(windows.indexOf(fire) >>> 0, 1);
        },
      };
    },
    close: () => windows.shift()?.(),
    opened: () => windows.length,
    cancelled: () => cancelled,
  };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

const ELICIT = {
  jsonrpc: "2.0",
  id: 11,
  method: "elicitation/create",
  params: { message: "Name?", requestedSchema: { type: "object", properties: {} } },
};
const SAMPLE = { jsonrpc: "2.0", id: 12, method: "sampling/createMessage", params: { messages: [], maxTokens: 5 } };
const ROOTS = { jsonrpc: "2.0", id: 13, method: "roots/list" };

describe("gathering input requests sent together", () => {
  it("announces every request that arrived within the window as one round", async () => {
    const t = manualTimer();
    const gather: InputGathering = { windowMs: 50, max: 16, timer: t.timer };
    const feed = new Feed().push(ELICIT, SAMPLE, ROOTS);
    const call = callOf(feed);
    const sink = new Sink();
    const outcome = drive("u", HINTS, call, sink, gather);
    await settle();
    expect(sink.rounds).toEqual([]);
    expect(t.opened()).toBe(1);
    t.close();
    expect(await outcome).toEqual({ kind: "input_required" });
    expect(sink.rounds).toEqual([["input-1", "input-2", "input-3"]]);
    expect([...call.pending.values()].map((p) => p.request.method)).toEqual([
      "elicitation/create",
      "sampling/createMessage",
      "roots/list",
    ]);
  });

  it("ends the round at once when the count bound is reached; the rest come in the next round", async () => {
    const t = manualTimer();
    const feed = new Feed().push(ELICIT, SAMPLE, ROOTS);
    const call = callOf(feed);
    const first = new Sink();
    expect(await drive("u", HINTS, call, first, { windowMs: 50, max: 2, timer: t.timer })).toEqual({
      kind: "input_required",
    });
    expect(first.rounds).toEqual([["input-1", "input-2"]]);
    // The window of the round that ended early is closed, not left running.
    expect(t.cancelled()).toBe(1);
    const second = new Sink();
    const outcome = drive("u", HINTS, call, second, { windowMs: 50, max: 2, timer: t.timer });
    await settle();
    t.close();
    expect(await outcome).toEqual({ kind: "input_required" });
    expect(second.rounds).toEqual([["input-1", "input-2", "input-3"]]);
  });

  it("a read in flight when the window closed is taken over by the next round, never lost", async () => {
    const t = manualTimer();
    const feed = new Feed().push(ELICIT);
    const call = callOf(feed);
    const outcome = drive("u", HINTS, call, new Sink(), { windowMs: 50, max: 16, timer: t.timer });
    await settle();
    t.close();
    expect(await outcome).toEqual({ kind: "input_required" });
    // The answer arrives after the round ended; the read drive() left waiting receives it.
    feed.push({ jsonrpc: "2.0", id: "gw-1", result: { content: [] } });
    const next = new Sink();
    expect(await drive("u", HINTS, call, next, { windowMs: 50, max: 16, timer: t.timer })).toEqual({ kind: "done" });
    expect(next.results).toHaveLength(1);
  });

  it("a task's sink gets the gathered requests in one call, and reading goes on", async () => {
    const t = manualTimer();
    const feed = new Feed().push(ELICIT, ROOTS);
    const call = callOf(feed);
    const sink = new Sink("continue");
    const outcome = drive("u", HINTS, call, sink, { windowMs: 50, max: 16, timer: t.timer });
    await settle();
    t.close();
    await settle();
    feed.push({ jsonrpc: "2.0", id: "gw-1", result: { content: [] } });
    expect(await outcome).toEqual({ kind: "done" });
    expect(sink.rounds).toEqual([["input-1", "input-2"]]);
    expect(sink.results).toHaveLength(1);
  });

  it("windowMs 0 announces each request on its own", async () => {
    const feed = new Feed().push(ELICIT, SAMPLE);
    const sink = new Sink();
    expect(await drive("u", HINTS, callOf(feed), sink, { windowMs: 0, max: 16 })).toEqual({ kind: "input_required" });
    expect(sink.rounds).toEqual([["input-1"]]);
  });
});

describe("the HTTP status of an upstream's error on the modern surface", () => {
  it.each([
    [-32021, 400],
    [-32020, 400],
    [-32022, 400],
    [-32601, 404],
    [-32602, 200],
    [-32603, 200],
  ])("%d → %d", async (code, status) => {
    const feed = new Feed().push({
      jsonrpc: "2.0",
      id: "gw-1",
      error: { code, message: "no", data: { requiredCapabilities: { sampling: {} } } },
    });
    const sink = new Sink();
    await drive("u", HINTS, callOf(feed), sink);
    expect(sink.errors).toEqual([
      { error: { code, message: "no", data: { requiredCapabilities: { sampling: {} } } }, status },
    ]);
  });
});
