// LegacyFront (legacy sessions in front of a modern-only upstream) against a
// scripted upstream: what a real modern server does not do on purpose.
import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { upstreamSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log/logger.js";
import { LegacyFront } from "../../src/bridge-to-modern/front.js";
import { UpstreamClient } from "../../src/upstream/client.js";
import { startScriptedUpstream, type ScriptedHandler, type ScriptedUpstream } from "../helpers/scripted-upstream.js";
import { testCaller } from "../helpers/caller.js";
import type { Caller } from "../../src/calls/caller.js";

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/**
 * A modern-only upstream: server/discover answered with `capabilities`, every other request with the JSON-RPC
 * body `otherwise` gives (for its id).
 */
function modernOnly(capabilities: Record<string, unknown>, otherwise: (id: string) => unknown): ScriptedHandler {
  return (_req, res, rec) => {
    const msg = JSON.parse(rec.body) as { id: string; method: string };
    if (msg.method !== "server/discover") return json(res, 200, otherwise(msg.id));
    json(res, 200, {
      jsonrpc: "2.0",
      id: msg.id,
      result: { supportedVersions: ["2026-07-28"], capabilities, serverInfo: { name: "up", version: "1" } },
    });
  };
}

describe("LegacyFront GET stream", () => {
  let up: ScriptedUpstream;
  let upstream: UpstreamClient;

  beforeEach(async () => {
    // The listen always fails at once.
    up = await startScriptedUpstream(
      modernOnly({ tools: { listChanged: true } }, (id) => ({
        jsonrpc: "2.0",
        id,
        error: { code: -32603, message: "listen unavailable" },
      })),
    );
    upstream = new UpstreamClient(upstreamSchema.parse({ url: up.url }));
  });

  afterEach(async () => {
    vi.useRealTimers();
    await upstream.close();
    await up.close();
  });

  it("a listen the upstream keeps failing is retried with a growing pause, not at a fixed rate", async () => {
    const front = new LegacyFront({
      upstream,
      keepAliveMs: 0,
      inputTimeoutMs: 1_000,
      idleMs: 60_000,
      maxSessions: 10,
      now: Date.now,
      log: createLogger("silent"),
      relistenDelayMs: 20,
    });
    const client = new AbortController();
    const who = testCaller({ caller: "a", signal: client.signal });
    const init = await front.initialize(
      1,
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      who,
    );
    const sessionId = init.headers.get("mcp-session-id") as string;
    const get = front.openGet(sessionId, who);
    expect(get.status).toBe(200);
    await new Promise((r) => setTimeout(r, 700));
    const listens = up.requests.filter((r) => r.body.includes("subscriptions/listen")).length;
    front.closeAll();
    client.abort();
    // A fixed 20 ms pause would have asked ~30 times; doubling pauses (20, 40, 80, 160, 320 ms) ask about 5.
    expect(listens).toBeGreaterThanOrEqual(3);
    expect(listens).toBeLessThanOrEqual(8);
  });

  it("is the gateway's one kind of event stream: its headers, keep-alive comments, and an end when the session ends", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const front = new LegacyFront({
      upstream,
      keepAliveMs: 1_000,
      inputTimeoutMs: 1_000,
      idleMs: 60_000,
      maxSessions: 10,
      now: Date.now,
      log: createLogger("silent"),
      relistenDelayMs: 60_000,
    });
    const who = testCaller({ caller: "a" });
    const init = await front.initialize(
      1,
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      who,
    );
    const sessionId = init.headers.get("mcp-session-id") as string;
    const get = front.openGet(sessionId, who);
    expect(get.status).toBe(200);
    expect(Object.fromEntries(get.headers)).toEqual({
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    });
    vi.advanceTimersByTime(2_000);
    expect(front.close(sessionId, "a").status).toBe(200);
    expect(await get.text()).toBe(": keepalive\n\n: keepalive\n\n");
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("LegacyFront sessions at capacity", () => {
  let up: ScriptedUpstream;
  let upstream: UpstreamClient;

  /** A modern-only upstream that answers discover and an empty tools/list (and anything else like it) at once. */
  const answerAtOnce = modernOnly({ tools: {} }, (id) => ({
    jsonrpc: "2.0",
    id,
    result: { resultType: "complete", tools: [] },
  }));

  beforeEach(async () => {
    up = await startScriptedUpstream(answerAtOnce);
    upstream = new UpstreamClient(upstreamSchema.parse({ url: up.url }));
  });

  afterEach(async () => {
    await upstream.close();
    await up.close();
  });

  it("the least recently used session goes, not the oldest", async () => {
    const front = new LegacyFront({
      upstream,
      keepAliveMs: 0,
      inputTimeoutMs: 1_000,
      idleMs: 60_000,
      maxSessions: 2,
      now: Date.now,
      log: createLogger("silent"),
    });
    const who = testCaller({ caller: "a" });
    const open = async (): Promise<string> => {
      const init = await front.initialize(
        1,
        { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        who,
      );
      return init.headers.get("mcp-session-id") as string;
    };
    const first = await open();
    const second = await open();
    // The first is used again: the second is now the idlest.
    expect(
      (await front.post(first, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, who, undefined)).status,
    ).toBe(200);
    const third = await open();
    expect([front.owns(first), front.owns(second), front.owns(third)]).toEqual([true, false, true]);
    front.closeAll();
  });

  // The injected clock starts here: lru-cache reads a start of 0 as "no time to live".
  const T0 = 1_000_000;
  const options = { keepAliveMs: 0, inputTimeoutMs: 1_000, log: createLogger("silent") };
  const openOn = async (front: LegacyFront, who: Caller): Promise<string> => {
    const init = await front.initialize(
      1,
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      who,
    );
    return init.headers.get("mcp-session-id") as string;
  };
  const listTools = (front: LegacyFront, sessionId: string, who: Caller): Promise<Response> =>
    front.post(sessionId, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, who, undefined);

  it("a session unused for idleMs is forgotten; a use starts its idle time again", async () => {
    let t = T0;
    const front = new LegacyFront({ upstream, ...options, idleMs: 1_000, maxSessions: 10, now: () => t });
    const who = testCaller({ caller: "a" });
    const used = await openOn(front, who);
    const idle = await openOn(front, who);
    t = T0 + 600;
    // A use ends with its answer: idle time counts from then (the request's own end runs after its body's).
    expect(await (await listTools(front, used, who)).text()).toContain('"result"');
    await new Promise((r) => setImmediate(r));
    t = T0 + 1_200;
    expect([front.owns(used), front.owns(idle)]).toEqual([true, false]);
    expect((await listTools(front, idle, who)).status).toBe(404);
    t = T0 + 1_700;
    expect(front.owns(used)).toBe(false);
    front.closeAll();
  });

  it("another caller presenting a session's id neither gets it nor keeps it alive", async () => {
    let t = T0;
    const front = new LegacyFront({ upstream, ...options, idleMs: 1_000, maxSessions: 10, now: () => t });
    const id = await openOn(front, testCaller({ caller: "a" }));
    t = T0 + 600;
    expect((await listTools(front, id, testCaller({ caller: "b" }))).status).toBe(404);
    t = T0 + 1_200;
    expect(front.owns(id)).toBe(false);
    front.closeAll();
  });

  it("a session with a request in progress never goes idle; once the request ends it may", async () => {
    let t = T0;
    const front = new LegacyFront({ upstream, ...options, idleMs: 1_000, maxSessions: 10, now: () => t });
    const who = testCaller({ caller: "a" });
    const id = await openOn(front, who);
    let answer: (() => void) | undefined;
    up.setHandler((req, res, rec) => {
      const msg = JSON.parse(rec.body) as { id: string; method: string };
      if (msg.method !== "tools/call") return answerAtOnce(req, res, rec);
      answer = () => json(res, 200, { jsonrpc: "2.0", id: msg.id, result: { resultType: "complete", content: [] } });
    });
    const call = front.post(
      id,
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "slow", arguments: {} } },
      who,
      undefined,
    );
    while (answer === undefined) await new Promise((r) => setImmediate(r));
    t = T0 + 5_000;
    // A new session is when idle ones are forgotten: this one is in use.
    await openOn(front, testCaller({ caller: "b" }));
    expect(front.owns(id)).toBe(true);
    answer();
    expect(await (await call).text()).toContain('"result"');
    await new Promise((r) => setImmediate(r));
    // The request's end starts the idle time (from T0 + 5 s): alive at 5.6 s, gone once 6 s have passed.
    t = T0 + 5_600;
    expect(front.owns(id)).toBe(true);
    t = T0 + 6_100;
    expect(front.owns(id)).toBe(false);
    front.closeAll();
  });

  it("a session whose GET stream is open never goes idle; once the stream ends it may", async () => {
    let t = T0;
    const front = new LegacyFront({ upstream, ...options, idleMs: 1_000, maxSessions: 10, now: () => t });
    const client = new AbortController();
    const who = testCaller({ caller: "a", signal: client.signal });
    const id = await openOn(front, who);
    const get = front.openGet(id, who);
    t = T0 + 5_000;
    // A new session is when idle ones are forgotten: this one is in use.
    await openOn(front, testCaller({ caller: "b" }));
    expect(front.owns(id)).toBe(true);
    // The GET stream ends with its client; the session's idle time starts then.
    client.abort();
    expect(await get.text()).toBe("");
    t = T0 + 5_600;
    expect(front.owns(id)).toBe(true);
    t = T0 + 6_100;
    expect(front.owns(id)).toBe(false);
    front.closeAll();
  });

  it("a session that leaves ends what it holds: at capacity, on DELETE, and at shutdown its GET stream ends", async () => {
    const front = new LegacyFront({ upstream, ...options, idleMs: 60_000, maxSessions: 1, now: Date.now });
    const who = testCaller({ caller: "a" });
    const first = await openOn(front, who);
    const evicted = front.openGet(first, who);
    const second = await openOn(front, who);
    expect([front.owns(first), front.owns(second)]).toEqual([false, true]);
    expect(await evicted.text()).toBe("");

    const deleted = front.openGet(second, who);
    expect(front.close(second, "a").status).toBe(200);
    expect(front.owns(second)).toBe(false);
    expect(await deleted.text()).toBe("");

    const third = await openOn(front, who);
    const shutDown = front.openGet(third, who);
    front.closeAll();
    expect([front.size, front.owns(third)]).toEqual([0, false]);
    expect(await shutDown.text()).toBe("");
  });
});
