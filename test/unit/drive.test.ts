import { describe, expect, it } from "vitest";
import { LegSink, type CallSink } from "../../src/calls/call-sink.js";
import { ClientLeg } from "../../src/calls/client-leg.js";
import { drive, type DrivenCall } from "../../src/bridge-to-legacy/drive.js";
import { PromotingSink } from "../../src/calls/task-sinks.js";
import { NO_METRICS } from "../../src/metrics/gateway-metrics.js";
import type { CreateOutcome, TaskEngine } from "../../src/tasks/engine.js";
import type { CacheHints } from "../../src/protocol/era-translate.js";
import type { JsonObject } from "../../src/protocol/json.js";
import type { JsonRpcErrorObject } from "../../src/protocol/jsonrpc.js";
import { META } from "../../src/protocol/modern-request.js";
import type { PendingInput } from "../../src/protocol/input-requests.js";
import { LegacySession } from "../../src/bridge-to-legacy/legacy-sessions.js";

const SERVER_INFO = { name: "legacy-upstream", version: "3.0.0" };
const UPSTREAM = "http://upstream.test";
const HINTS: CacheHints = { ttlMs: 5, cacheScope: "private" };

/** An upstream answer stream the test feeds by hand. */
class Feed implements AsyncIterator<unknown> {
  private readonly queue: Array<IteratorResult<unknown> | Error> = [];
  private waiting: ((v: IteratorResult<unknown> | Error) => void) | undefined;

  push(...items: unknown[]): this {
    for (const value of items) this.put({ value, done: false });
    return this;
  }
  end(): this {
    this.put({ value: undefined, done: true });
    return this;
  }
  fail(err: Error): this {
    this.put(err);
    return this;
  }
  private put(item: IteratorResult<unknown> | Error): void {
    const w = this.waiting;
    if (w) {
      this.waiting = undefined;
      w(item);
    } else this.queue.push(item);
  }
  async next(): Promise<IteratorResult<unknown>> {
    const item = this.queue.shift() ?? (await new Promise<IteratorResult<unknown> | Error>((r) => (this.waiting = r)));
    if (item instanceof Error) throw item;
    return item;
  }
}

type Event =
  | { kind: "progress"; params: JsonObject }
  | { kind: "log"; params: JsonObject }
  | { kind: "input"; keys: string[] }
  | { kind: "result"; result: JsonObject }
  | { kind: "error"; error: JsonRpcErrorObject; status: number };

/** A sink that records what drive() hands it. */
class RecordingSink implements CallSink {
  readonly events: Event[] = [];
  /** The pending map each inputRequired() received. */
  readonly pendingSeen: Array<ReadonlyMap<string, PendingInput>> = [];
  private goneListener: (() => void) | undefined;
  constructor(
    readonly clientCapabilities: JsonObject = {},
    private readonly onInput: "park" | "continue" = "park",
  ) {}
  onGone(listener: () => void): void {
    this.goneListener = listener;
  }
  leave(): void {
    this.goneListener?.();
  }
  progress(params: JsonObject): void {
    this.events.push({ kind: "progress", params });
  }
  log(params: JsonObject): void {
    this.events.push({ kind: "log", params });
  }
  inputRequired(pending: ReadonlyMap<string, PendingInput>): "park" | "continue" {
    this.pendingSeen.push(pending);
    this.events.push({ kind: "input", keys: [...pending.keys()] });
    return this.onInput;
  }
  result(result: JsonObject): void {
    this.events.push({ kind: "result", result });
  }
  error(error: JsonRpcErrorObject, status: number): void {
    this.events.push({ kind: "error", error, status });
  }
}

type Outcome = { result: unknown } | { error: JsonRpcErrorObject };

/** A DrivenCall that records what drive() asks of it instead of talking to an upstream. */
interface FakeCall extends Omit<DrivenCall, "detached"> {
  detached: boolean;
  /** Every answer(upstreamRequestId, outcome) drive() sent, in order. */
  readonly answers: Array<[string | number, Outcome]>;
  /** Every cancel(reason), in order. */
  readonly cancels: string[];
  /** How many times end() was called. */
  ends: number;
}

function callOf(feed: Feed, method = "tools/call"): FakeCall {
  const session = new LegacySession(
    "key",
    ["authorization", "Bearer a"],
    "sess-1",
    { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: SERVER_INFO },
    0,
  );
  let keySeq = 0;
  const call: FakeCall = {
    session,
    method,
    upstreamId: "gw-7",
    progressToken: "gw-7-progress",
    messages: feed,
    pending: new Map<string, PendingInput>(),
    nextInputKey: () => `input-${++keySeq}`,
    detached: false,
    answers: [],
    cancels: [],
    ends: 0,
    answer: (upstreamRequestId, outcome) => {
      call.answers.push([upstreamRequestId, outcome]);
      return Promise.resolve();
    },
    cancel: (reason) => {
      call.cancels.push(reason);
    },
    end: () => {
      call.ends += 1;
    },
  };
  return call;
}

describe("drive", () => {
  it("the response to our id ends the call as a modern result and stops reading", async () => {
    const feed = new Feed().push({ jsonrpc: "2.0", id: "gw-7", result: { tools: [{ name: "t", inputSchema: {} }] } });
    const call = callOf(feed, "tools/list");
    const sink = new RecordingSink();
    expect(await drive(UPSTREAM, HINTS, call, sink)).toEqual({ kind: "done" });
    expect(call.ends).toBe(1);
    expect(call.cancels).toEqual([]);
    expect(sink.events).toEqual([
      {
        kind: "result",
        result: {
          tools: [{ name: "t", inputSchema: {} }],
          ttlMs: 5,
          cacheScope: "private",
          _meta: { [META.serverInfo]: SERVER_INFO },
          resultType: "complete",
        },
      },
    ]);
  });

  it("an upstream error is translated: -32601 → HTTP 404, -32002 → -32602, garbage → -32603", async () => {
    const cases: Array<[unknown, JsonRpcErrorObject, number]> = [
      [{ code: -32601, message: "Method not found" }, { code: -32601, message: "Method not found" }, 404],
      [{ code: -32002, message: "Resource not found" }, { code: -32602, message: "Resource not found" }, 200],
      [{ code: -32000, message: "boom", data: { x: 1 } }, { code: -32000, message: "boom", data: { x: 1 } }, 200],
      ["bad", { code: -32603, message: "Upstream error", data: { reason: "upstream_error" } }, 200],
    ];
    for (const [error, expected, status] of cases) {
      const sink = new RecordingSink();
      const call = callOf(new Feed().push({ jsonrpc: "2.0", id: "gw-7", error }));
      await drive(UPSTREAM, HINTS, call, sink);
      expect(sink.events).toEqual([{ kind: "error", error: expected, status }]);
      expect(call.ends).toBe(1);
    }
  });

  it("passes progress for our token and logs; ignores other notifications, other ids and non-objects", async () => {
    const feed = new Feed().push(
      {
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: "gw-7-progress", progress: 1, total: 2 },
      },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "gw-3-progress", progress: 9 } },
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" } },
      { jsonrpc: "2.0", method: "notifications/tools/list_changed" },
      { jsonrpc: "2.0", id: "gw-6", result: { other: true } },
      "junk",
      null,
      { jsonrpc: "2.0", id: "gw-7", result: { content: [] } },
    );
    const sink = new RecordingSink();
    await drive(UPSTREAM, HINTS, callOf(feed), sink);
    expect(sink.events.map((e) => e.kind)).toEqual(["progress", "log", "result"]);
    expect(sink.events[0]).toEqual({
      kind: "progress",
      params: { progressToken: "gw-7-progress", progress: 1, total: 2 },
    });
    expect(sink.events[1]).toEqual({ kind: "log", params: { level: "info", data: "x" } });
  });

  it("answers an upstream ping itself, on the session, and goes on", async () => {
    const feed = new Feed().push(
      { jsonrpc: "2.0", id: 41, method: "ping" },
      { jsonrpc: "2.0", id: "gw-7", result: {} },
    );
    const call = callOf(feed);
    const sink = new RecordingSink();
    await drive(UPSTREAM, HINTS, call, sink);
    expect(sink.events.map((e) => e.kind)).toEqual(["result"]);
    // On the call's session: LegacyCall.answer posts it there (test/unit/legacy-call.test.ts checks the headers).
    expect(call.answers).toEqual([[41, { result: {} }]]);
  });

  it("refuses upstream input requests the client did not declare, upstream, and goes on", async () => {
    const feed = new Feed().push(
      { jsonrpc: "2.0", id: 5, method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } },
      { jsonrpc: "2.0", id: 6, method: "custom/ask" },
      { jsonrpc: "2.0", id: "gw-7", result: {} },
    );
    const call = callOf(feed);
    const sink = new RecordingSink({ elicitation: {} });
    await drive(UPSTREAM, HINTS, call, sink);
    expect(sink.events.map((e) => e.kind)).toEqual(["result"]);
    expect(call.answers).toEqual([
      [
        5,
        {
          error: {
            code: -32601,
            message: "the client did not declare sampling",
            data: { reason: "input_request_unsupported" },
          },
        },
      ],
      [
        6,
        {
          error: {
            code: -32601,
            message: "the gateway cannot relay custom/ask to a modern client",
            data: { reason: "input_request_unsupported" },
          },
        },
      ],
    ]);
    expect(call.pending.size).toBe(0);
  });

  it("a declared input request is recorded in call.pending and parks the call", async () => {
    const feed = new Feed().push({
      jsonrpc: "2.0",
      id: 12,
      method: "elicitation/create",
      params: { message: "Name?", requestedSchema: { type: "object" }, elicitationId: "e" },
    });
    const call = callOf(feed);
    const sink = new RecordingSink({ elicitation: {} });
    expect(await drive(UPSTREAM, HINTS, call, sink)).toEqual({ kind: "input_required" });
    expect(sink.events).toEqual([{ kind: "input", keys: ["input-1"] }]);
    // The sink is handed the call's own pending map.
    expect(sink.pendingSeen).toHaveLength(1);
    expect(sink.pendingSeen[0]).toBe(call.pending);
    expect(call.pending.get("input-1")).toEqual({
      upstreamRequestId: 12,
      request: { method: "elicitation/create", params: { message: "Name?", requestedSchema: { type: "object" } } },
    });
    // Parked, not over: nothing ended, cancelled or answered upstream.
    expect(call.ends).toBe(0);
    expect(call.cancels).toEqual([]);
    expect(call.answers).toEqual([]);

    // The next round (a retry) reads on from where the call stopped, with fresh keys.
    feed.push({ jsonrpc: "2.0", id: 13, method: "roots/list" });
    const retry = new RecordingSink({ roots: {} });
    expect(await drive(UPSTREAM, HINTS, call, retry)).toEqual({ kind: "input_required" });
    expect([...call.pending.keys()]).toEqual(["input-1", "input-2"]);
    expect(retry.events).toEqual([{ kind: "input", keys: ["input-1", "input-2"] }]);
  });

  it("a sink that continues keeps reading after an input request", async () => {
    const feed = new Feed().push(
      { jsonrpc: "2.0", id: 12, method: "roots/list" },
      { jsonrpc: "2.0", id: "gw-7", result: { content: [] } },
    );
    const sink = new RecordingSink({ roots: {} }, "continue");
    expect(await drive(UPSTREAM, HINTS, callOf(feed), sink)).toEqual({ kind: "done" });
    expect(sink.events.map((e) => e.kind)).toEqual(["input", "result"]);
  });

  it("a stream that ends without our response is an upstream_no_answer error (HTTP 502)", async () => {
    const sink = new RecordingSink();
    const call = callOf(
      new Feed().push({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info" } }).end(),
    );
    await drive(UPSTREAM, HINTS, call, sink);
    const last = sink.events.at(-1);
    expect(last).toMatchObject({
      kind: "error",
      status: 502,
      error: { code: -32603, data: { reason: "upstream_no_answer" } },
    });
    expect(call.ends).toBe(1);
    expect(call.cancels).toEqual([]);
  });

  it("a broken stream is an upstream_reset error (HTTP 502)", async () => {
    const sink = new RecordingSink();
    const call = callOf(new Feed().fail(new Error("socket hang up")));
    await drive(UPSTREAM, HINTS, call, sink);
    expect(sink.events).toHaveLength(1);
    expect(sink.events[0]).toMatchObject({
      kind: "error",
      status: 502,
      error: { code: -32603, data: { reason: "upstream_reset" } },
    });
    // Its error code, never the error's text (which may carry an address).
    expect((sink.events[0] as { error: JsonRpcErrorObject }).error.message).toMatch(/broke the stream of \S+ \(\S+\)$/);
    expect(call.ends).toBe(1);
    expect(call.cancels).toEqual([]);
  });

  it("a stream closed because the call was handed on ends nothing: no error, no end(), no cancel", async () => {
    const sink = new RecordingSink();
    const call = callOf(new Feed().fail(new Error("aborted")));
    call.detached = true;
    expect(await drive(UPSTREAM, HINTS, call, sink)).toEqual({ kind: "abandoned" });
    expect(sink.events).toEqual([]);
    expect(call.ends).toBe(0);
    expect(call.cancels).toEqual([]);
  });

  it("when the consumer leaves, the call is cancelled (once, as 'client disconnected')", async () => {
    const feed = new Feed();
    const call = callOf(feed);
    const sink = new RecordingSink();
    const outcome = drive(UPSTREAM, HINTS, call, sink);
    sink.leave();
    expect(await outcome).toEqual({ kind: "abandoned" });
    // cancel() sends notifications/cancelled with the upstream id and ends the call itself;
    // an end() first would make that cancel() a no-op, so drive must not call it.
    expect(call.cancels).toEqual(["client disconnected"]);
    expect(call.ends).toBe(0);
    expect(call.answers).toEqual([]);
    expect(sink.events).toEqual([]);
  });
});

describe("LegSink", () => {
  function sinkOf(
    progressToken: string | number | undefined,
    logLevel: "warning" | undefined,
    parked: ClientLeg[] = [],
  ) {
    const leg = new ClientLeg("req-1", progressToken, new AbortController().signal, 0);
    // Typed as the CallSink drive() sees, whose inputRequired receives the pending map.
    const sink: CallSink = new LegSink(leg, { logLevel, clientCapabilities: { roots: {} } }, (l) => parked.push(l));
    return { leg, sink, parked };
  }

  async function sseMessages(res: Response): Promise<unknown[]> {
    const text = await res.text();
    return text
      .split("\n\n")
      .filter((b) => b.startsWith("event: message"))
      .map(
        (b) =>
          JSON.parse(
            b
              .split("\n")
              .find((l) => l.startsWith("data: "))
              ?.slice(6) ?? "null",
          ) as unknown,
      );
  }

  it("re-stamps progress with the leg's own token", async () => {
    const { leg, sink } = sinkOf(42, undefined);
    sink.progress({ progressToken: "gw-7-progress", progress: 1, total: 3, message: "m" });
    sink.result({ resultType: "complete" });
    expect(await sseMessages(await leg.response)).toEqual([
      {
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: 42, progress: 1, total: 3, message: "m" },
      },
      { jsonrpc: "2.0", id: "req-1", result: { resultType: "complete" } },
    ]);
  });

  it("drops progress when the leg has no token, so the answer stays JSON", async () => {
    const { leg, sink } = sinkOf(undefined, undefined);
    sink.progress({ progressToken: "gw-7-progress", progress: 1 });
    sink.result({ resultType: "complete" });
    const res = await leg.response;
    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("passes logs at or above the opted-in level only, and none without a level", async () => {
    const filtered = sinkOf(undefined, "warning");
    filtered.sink.log({ level: "info", data: "quiet" });
    filtered.sink.log({ level: "error", data: "loud" });
    filtered.sink.result({});
    expect(await sseMessages(await filtered.leg.response)).toEqual([
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "error", data: "loud" } },
      { jsonrpc: "2.0", id: "req-1", result: {} },
    ]);

    const none = sinkOf(undefined, undefined);
    none.sink.log({ level: "emergency", data: "x" });
    none.sink.result({});
    expect((await none.leg.response).headers.get("content-type")).toBe("application/json");
  });

  it("exposes the request's capabilities, parks input on its leg, and relays errors with their status", async () => {
    const parked: ClientLeg[] = [];
    const { leg, sink } = sinkOf(undefined, undefined, parked);
    expect(sink.clientCapabilities).toEqual({ roots: {} });
    expect(sink.inputRequired(new Map())).toBe("park");
    expect(parked).toEqual([leg]);
    sink.error({ code: -32601, message: "nope" }, 404);
    expect((await leg.response).status).toBe(404);
  });

  it("onGone fires when the client leaves", () => {
    const ac = new AbortController();
    const leg = new ClientLeg(1, undefined, ac.signal, 0);
    const sink = new LegSink(leg, { logLevel: undefined, clientCapabilities: {} }, () => undefined);
    let gone = 0;
    sink.onGone(() => (gone += 1));
    ac.abort();
    expect(gone).toBe(1);
  });
});

describe("drive with a promotion being stored", () => {
  it("an input request waits for the outcome: a refused promotion parks the call, and reading stops there", async () => {
    let refuse: (() => void) | undefined;
    const promotion = {
      thresholdMs: 0,
      // What PromotingSink uses of the engine while a promotion is refused: its metrics.
      engine: { metrics: NO_METRICS } as unknown as TaskEngine,
      create: () =>
        new Promise<CreateOutcome>((resolve) => (refuse = () => resolve({ ok: false, reason: "tasks.maxTasks" }))),
    };
    const parked: ClientLeg[] = [];
    const leg = new ClientLeg("req-1", undefined, new AbortController().signal, 0);
    const legSink = new LegSink(leg, { logLevel: undefined, clientCapabilities: { elicitation: {} } }, (l) =>
      parked.push(l),
    );
    const sink = new PromotingSink(leg, legSink, promotion);
    // The threshold (0 ms) passes: the task is being stored.
    await new Promise((r) => setTimeout(r, 5));
    expect(refuse).toBeDefined();
    const feed = new Feed().push(
      {
        jsonrpc: "2.0",
        id: 12,
        method: "elicitation/create",
        params: { message: "Name?", requestedSchema: { type: "object" } },
      },
      { jsonrpc: "2.0", id: "gw-7", result: { content: [] } },
    );
    const call = callOf(feed);
    const driving = drive(UPSTREAM, HINTS, call, sink);
    await new Promise((r) => setTimeout(r, 5));
    // Nothing decided yet: the call is not parked, and its answer is not read past the input request.
    expect(parked).toEqual([]);
    refuse?.();
    expect(await driving).toEqual({ kind: "input_required" });
    expect(parked).toEqual([leg]);
    // The answer is still there for the one reader the client's retry starts.
    const retry = new RecordingSink({ elicitation: {} });
    expect(await drive(UPSTREAM, HINTS, call, retry)).toEqual({ kind: "done" });
    expect(retry.events.map((e) => e.kind)).toEqual(["result"]);
  });
});
