// LegacyCall (src/bridge-to-legacy/legacy-call.ts) for real: a real LegacySessionPool
// and UpstreamClient against a scripted legacy (2025-11-25) upstream that
// issues Mcp-Session-Id on initialize and answers 404 for sessions it does not
// know. Time is injected (`now`), so "idle long enough to be swept" is a
// clock step, not a wait.
import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { upstreamSchema } from "../../src/config/schema.js";
import { createLogger } from "../../src/log/logger.js";
import { UpstreamClient } from "../../src/upstream/client.js";
import { LegacyCall } from "../../src/bridge-to-legacy/legacy-call.js";
import {
  LegacySessionPool,
  UpstreamSessionError,
  type SessionSpec,
} from "../../src/bridge-to-legacy/legacy-sessions.js";
import {
  openSse,
  sseEvent,
  startScriptedUpstream,
  type RecordedRequest,
  type ScriptedUpstream,
} from "../helpers/scripted-upstream.js";

type Json = Record<string, unknown>;

const IDLE_MS = 60_000;
const GATEWAY_INFO = { name: "mcp-task-gateway", version: "0.0.0-test" };
const SESSION_NOT_FOUND = { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } };

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** How the fake answers a request (a message with id and method) on a live session. */
type CallHandler = (res: ServerResponse, body: Json, rec: RecordedRequest, sid: string) => void;

interface FakeLegacy {
  up: ScriptedUpstream;
  live: Set<string>;
  onCall: CallHandler;
  /** POSTed JSON-RPC messages with this method, in arrival order. */
  rpc(method: string): RecordedRequest[];
  /** POSTed JSON-RPC responses (no method) with this id: answers to the upstream's own requests. */
  responses(id: string | number): RecordedRequest[];
  deletes(): RecordedRequest[];
  bodyOf(r: RecordedRequest | undefined): Json;
}

/** Echoes the method back as the result, with the request's id. */
const echo: CallHandler = (res, body) =>
  json(res, 200, { jsonrpc: "2.0", id: body.id, result: { echoed: body.method } });

async function startFakeLegacy(): Promise<FakeLegacy> {
  let issued = 0;
  const fake: FakeLegacy = {
    up: undefined as unknown as ScriptedUpstream,
    live: new Set(),
    onCall: echo,
    rpc: (method) => fake.up.requests.filter((r) => r.method === "POST" && fake.bodyOf(r).method === method),
    responses: (id) =>
      fake.up.requests.filter((r) => r.method === "POST" && !("method" in fake.bodyOf(r)) && fake.bodyOf(r).id === id),
    deletes: () => fake.up.requests.filter((r) => r.method === "DELETE"),
    bodyOf: (r) => JSON.parse(r?.body ?? "null") as Json,
  };
  fake.up = await startScriptedUpstream((req, res, rec) => {
    const sid = req.headers["mcp-session-id"];
    if (rec.method === "DELETE") {
      if (typeof sid === "string") fake.live.delete(sid);
      res.writeHead(200).end();
      return;
    }
    const body = JSON.parse(rec.body) as Json;
    if (body.method === "initialize") {
      issued += 1;
      const id = `sess-${issued}`;
      fake.live.add(id);
      const result = {
        protocolVersion: "2025-11-25",
        capabilities: { tools: {} },
        serverInfo: { name: "fake-legacy", version: "1.0.0" },
      };
      return json(res, 200, { jsonrpc: "2.0", id: body.id, result }, { "mcp-session-id": id });
    }
    if (typeof sid !== "string" || !fake.live.has(sid)) return json(res, 404, SESSION_NOT_FOUND);
    // Notifications and responses to the upstream's requests.
    if (!("id" in body) || !("method" in body)) {
      res.writeHead(202).end();
      return;
    }
    fake.onCall(res, body, rec, sid);
  });
  return fake;
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("LegacyCall against a legacy upstream", () => {
  let fake: FakeLegacy;
  let upstream: UpstreamClient;
  let pool: LegacySessionPool;
  let now: number;
  const signal = new AbortController().signal;
  const spec: SessionSpec = {
    credentialHeaders: ["authorization", "Bearer a"],
    capabilities: { elicitation: {} },
    clientInfo: undefined,
  };
  const params = (token: string) => ({ name: "echo", arguments: { text: "hi" }, _meta: { progressToken: token } });

  beforeEach(async () => {
    now = 1_000_000;
    fake = await startFakeLegacy();
    upstream = new UpstreamClient(upstreamSchema.parse({ url: fake.up.url }));
    pool = new LegacySessionPool(upstream, {
      idleMs: IDLE_MS,
      maxSessions: 10,
      gatewayInfo: GATEWAY_INFO,
      now: () => now,
      log: createLogger("silent"),
      openTimeoutMs: 30_000,
      controlTimeoutMs: 10_000,
    });
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await pool.close();
    await upstream.close();
    await fake.up.close();
  });

  function newCall(method = "tools/call"): LegacyCall {
    return new LegacyCall(upstream, pool, spec, method);
  }

  /** Records the pool's fire-and-forget sends so a test can wait until they reached the upstream. */
  function watchSends(): { calls: () => unknown[][]; settled: () => Promise<unknown> } {
    const spy = vi.spyOn(pool, "send");
    return {
      calls: () => spy.mock.calls,
      settled: () => Promise.all(spy.mock.results.map((r) => r.value as Promise<void>)),
    };
  }

  /** True when, with the clock past the idle limit, a sweep DELETEs the session (so no lease holds it). */
  async function sweptAfterIdle(sessionId: string | undefined): Promise<boolean> {
    now += IDLE_MS + 1;
    const before = fake.deletes().length;
    await pool.sweep();
    return fake
      .deletes()
      .slice(before)
      .some((r) => r.headers["mcp-session-id"] === sessionId);
  }

  it("send() posts on the session with its headers, a gateway-chosen id, and params built from `${id}-progress`", async () => {
    const call = newCall();
    await call.send(params);
    expect(call.upstreamId).toBe("gw-1");
    expect(call.progressToken).toBe("gw-1-progress");
    expect(call.session.sessionId).toBe("sess-1");

    const [post] = fake.rpc("tools/call");
    expect(fake.rpc("tools/call")).toHaveLength(1);
    expect(fake.bodyOf(post)).toEqual({
      jsonrpc: "2.0",
      id: "gw-1",
      method: "tools/call",
      params: { name: "echo", arguments: { text: "hi" }, _meta: { progressToken: "gw-1-progress" } },
    });
    expect(post?.headers["mcp-session-id"]).toBe("sess-1");
    expect(post?.headers["mcp-protocol-version"]).toBe("2025-11-25");
    expect(post?.headers.authorization).toBe("Bearer a");

    expect(await call.messages.next()).toEqual({
      value: { jsonrpc: "2.0", id: "gw-1", result: { echoed: "tools/call" } },
      done: false,
    });
    call.end();

    // The next call on the same session gets the next id of the session, never a reused one.
    const second = newCall("resources/read");
    await second.send(() => ({ uri: "file:///x" }));
    expect(second.upstreamId).toBe("gw-2");
    expect(fake.bodyOf(fake.rpc("resources/read")[0])).toEqual({
      jsonrpc: "2.0",
      id: "gw-2",
      method: "resources/read",
      params: { uri: "file:///x" },
    });
    expect(fake.rpc("initialize")).toHaveLength(1);
    second.end();
  });

  it("cancel() after send posts exactly one notifications/cancelled with the upstream id and reason, and releases the lease", async () => {
    const closed = deferred<{ aborted: boolean }>();
    fake.onCall = (res, _body, rec) => {
      // A long call: the stream opens and stays open.
      openSse(res);
      res.write(
        sseEvent({
          jsonrpc: "2.0",
          method: "notifications/progress",
          params: { progressToken: "gw-1-progress", progress: 1 },
        }),
      );
      void rec.closed.then(closed.resolve);
    };
    const sends = watchSends();
    const call = newCall();
    await call.send(params);
    const sessionId = call.session.sessionId;

    // While the call runs, its lease keeps the session from being swept.
    expect(await sweptAfterIdle(sessionId)).toBe(false);

    call.cancel("client disconnected");
    call.cancel("second reason");
    call.end();
    await sends.settled();
    expect(sends.calls()).toHaveLength(1);

    const cancels = fake.rpc("notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(fake.bodyOf(cancels[0])).toEqual({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "gw-1", reason: "client disconnected" },
    });
    expect(cancels[0]?.headers["mcp-session-id"]).toBe(sessionId);
    expect(cancels[0]?.headers.authorization).toBe("Bearer a");
    // The gateway stopped reading: the call's stream was closed from our side.
    expect(await closed.promise).toEqual({ aborted: true });

    // The lease is back: the idle session is now swept.
    expect(await sweptAfterIdle(sessionId)).toBe(true);
    expect(fake.rpc("notifications/cancelled")).toHaveLength(1);
  });

  it("end() releases the lease without cancelling", async () => {
    const call = newCall();
    await call.send(params);
    const sessionId = call.session.sessionId;
    call.end();
    call.cancel("too late");
    expect(await sweptAfterIdle(sessionId)).toBe(true);
    expect(fake.rpc("notifications/cancelled")).toHaveLength(0);
  });

  it("cancel() before send() sends nothing upstream, and send() then resolves without posting the call", async () => {
    const sends = watchSends();
    const call = newCall();
    call.cancel("task cancelled");
    await expect(call.send(params)).resolves.toBeUndefined();
    await sends.settled();
    expect(sends.calls()).toHaveLength(0);
    // Not even a session was opened for it.
    expect(fake.up.requests).toHaveLength(0);
    expect(call.upstreamId).toBeUndefined();
    expect(call.progressToken).toBeUndefined();
    expect(() => call.messages).toThrow("the call was not sent");
    expect(pool.size).toBe(0);
  });

  it("cancel() while the POST waits for response headers posts notifications/cancelled with that id; the pending send rejects with AbortError", async () => {
    const arrived = deferred<RecordedRequest>();
    // The upstream holds the call's response (a JSON-answering server sends headers only at the end).
    fake.onCall = (_res, _body, rec) => arrived.resolve(rec);
    const sends = watchSends();
    const call = newCall();
    const sending = call.send(params);
    const held = await arrived.promise;
    expect(fake.bodyOf(held).id).toBe("gw-1");
    expect(call.upstreamId).toBe("gw-1");
    const sessionId = call.session.sessionId;

    call.cancel("client disconnected");
    await expect(sending).rejects.toMatchObject({ name: "AbortError" });
    await sends.settled();

    const cancels = fake.rpc("notifications/cancelled");
    expect(cancels).toHaveLength(1);
    expect(fake.bodyOf(cancels[0])).toEqual({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "gw-1", reason: "client disconnected" },
    });
    expect(cancels[0]?.headers["mcp-session-id"]).toBe(sessionId);
    // The held request was abandoned, not answered.
    expect(await held.closed).toEqual({ aborted: true });
    expect(() => call.messages).toThrow("the call was not sent");
    expect(await sweptAfterIdle(sessionId)).toBe(true);
  });

  it("a 404 on the call re-initializes once and re-sends on the new session", async () => {
    const first = await pool.acquire(spec, signal);
    expect(first.sessionId).toBe("sess-1");
    // The upstream restarted and forgot every session.
    fake.live.clear();

    const call = newCall();
    await call.send(params);
    expect(call.session.sessionId).toBe("sess-2");
    expect(first.lost).toBe(true);
    expect(fake.rpc("initialize")).toHaveLength(2);
    const posts = fake.rpc("tools/call");
    expect(posts.map((r) => r.headers["mcp-session-id"])).toEqual(["sess-1", "sess-2"]);
    expect(fake.bodyOf(posts[1])).toEqual({
      jsonrpc: "2.0",
      id: call.upstreamId,
      method: "tools/call",
      params: params(`${call.upstreamId}-progress`),
    });
    expect(await call.messages.next()).toEqual({
      value: { jsonrpc: "2.0", id: call.upstreamId, result: { echoed: "tools/call" } },
      done: false,
    });
    call.end();
  });

  it("a 400 that names the session (server-everything) re-initializes too", async () => {
    let refused = false;
    fake.onCall = (res, body, rec, sid) => {
      if (refused) return echo(res, body, rec, sid);
      refused = true;
      fake.live.delete(sid);
      json(res, 400, { jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" } });
    };
    const call = newCall();
    await call.send(params);
    expect(call.session.sessionId).toBe("sess-2");
    expect(fake.rpc("tools/call").map((r) => r.headers["mcp-session-id"])).toEqual(["sess-1", "sess-2"]);
    expect(await call.messages.next()).toEqual({
      value: { jsonrpc: "2.0", id: call.upstreamId, result: { echoed: "tools/call" } },
      done: false,
    });
    call.end();
  });

  it("re-initializes only once: a second 404 is the call's answer, under our id", async () => {
    fake.onCall = (res) => json(res, 404, SESSION_NOT_FOUND);
    const call = newCall();
    await call.send(params);
    expect(fake.rpc("initialize")).toHaveLength(2);
    expect(fake.rpc("tools/call")).toHaveLength(2);
    expect(await call.messages.next()).toEqual({
      value: { jsonrpc: "2.0", id: call.upstreamId, error: { code: -32001, message: "Session not found" } },
      done: false,
    });
    expect((await call.messages.next()).done).toBe(true);
    call.end();
  });

  it("401 with WWW-Authenticate throws UpstreamSessionError with status and challenge, and releases the lease", async () => {
    const challenge = 'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource"';
    const refusal = { jsonrpc: "2.0", id: "gw-1", error: { code: -32001, message: "Unauthorized" } };
    fake.onCall = (res) => json(res, 401, refusal, { "www-authenticate": challenge });
    const sends = watchSends();
    const call = newCall();
    const err: unknown = await call.send(params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamSessionError);
    expect(err).toMatchObject({ status: 401, wwwAuthenticate: challenge, body: refusal });
    const sessionId = call.session.sessionId;
    // No re-initialize for a refusal, and the call is over: a cancel now sends nothing.
    expect(fake.rpc("initialize")).toHaveLength(1);
    call.cancel("client disconnected");
    await sends.settled();
    expect(sends.calls()).toHaveLength(0);
    expect(await sweptAfterIdle(sessionId)).toBe(true);
  });

  it("a 400 error body without an id is replayed as the call's answer, with our id", async () => {
    const error = { code: -32602, message: "Invalid params: name is required" };
    fake.onCall = (res) => json(res, 400, { jsonrpc: "2.0", error });
    const call = newCall();
    await call.send(params);
    expect(call.upstreamId).toBe("gw-1");
    expect(await call.messages.next()).toEqual({ value: { jsonrpc: "2.0", error, id: "gw-1" }, done: false });
    expect((await call.messages.next()).done).toBe(true);
    // Not a lost session: no re-initialize, the session stays.
    expect(fake.rpc("initialize")).toHaveLength(1);
    expect(fake.rpc("tools/call")).toHaveLength(1);
    expect(call.session.lost).toBe(false);
    call.end();
  });

  it("answer() posts {jsonrpc, id, result} (or error) on the call's session", async () => {
    const call = newCall();
    await call.send(params);
    await call.answer(41, { result: {} });
    await call.answer("u-2", { error: { code: -32601, message: "the client did not declare sampling" } });

    const [ping] = fake.responses(41);
    expect(fake.responses(41)).toHaveLength(1);
    expect(fake.bodyOf(ping)).toEqual({ jsonrpc: "2.0", id: 41, result: {} });
    expect(ping?.headers["mcp-session-id"]).toBe("sess-1");
    expect(ping?.headers["mcp-protocol-version"]).toBe("2025-11-25");
    expect(ping?.headers.authorization).toBe("Bearer a");
    expect(fake.bodyOf(fake.responses("u-2")[0])).toEqual({
      jsonrpc: "2.0",
      id: "u-2",
      error: { code: -32601, message: "the client did not declare sampling" },
    });
    call.end();
  });

  it("deliver() rejects when the upstream is unreachable, while answer() does not", async () => {
    const call = newCall();
    await call.send(params);
    await fake.up.close();
    await expect(call.deliver(41, { result: { action: "accept" } })).rejects.toBeInstanceOf(Error);
    await expect(call.answer(41, { result: { action: "accept" } })).resolves.toBeUndefined();
    call.end();
  });
});
