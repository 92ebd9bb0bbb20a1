// Issue 23: every gateway-held session works on every replica, with no sticky balancer. Two topologies, the same
// checks: two replica processes on one Redis (a key prefix of their own) behind a round-robin TCP balancer, and
// `--workers 2` on one port; the client opens a new connection per request, so its requests land on both
// processes. Upstreams: server-everything over stdio (a stdio session), the SDK 1.x demo server over HTTP
// (2025-11-25 tasks the gateway runs), and a modern-only server (legacy sessions the gateway serves itself).
// A session's owner killed with SIGKILL: its session answers 404 from the other process, and a new one works.
import { readdir, readFile } from "node:fs/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startModernUpstream, type ModernUpstream } from "../fixtures/modern-upstream.js";
import { startSdkUpstream, type SdkUpstream } from "../fixtures/sdk-upstream.js";
import { freshConnectionFetch, startRoundRobin, type RoundRobin } from "../helpers/round-robin.js";
import { connectSdkClient, type SdkClientHandle } from "../helpers/sdk-client.js";
import { everythingCommand } from "../helpers/stdio-servers.js";
import { testRedis, TEST_REDIS_URL, type TestRedis } from "../helpers/redis.js";
import { childPids, Replicas, waitFor, type Json, type ReplicaProcess, START_LINE } from "../helpers/replicas.js";

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "sessions-test", version: "1" } },
};
const LEGACY_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

const replicas = new Replicas();
let redis: TestRedis;
let demo: SdkUpstream;
let modern: ModernUpstream;
const fresh = freshConnectionFetch();
const clients: Array<{ close(): Promise<unknown> }> = [];

beforeAll(async () => {
  redis = await testRedis();
  [demo, modern] = await Promise.all([
    startSdkUpstream({ host: "127.0.0.1", port: 0 }),
    startModernUpstream({ legacy: "reject" }),
  ]);
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

afterAll(async () => {
  await replicas.killAll();
  await replicas.cleanup();
  await fresh.close();
  await demo?.close();
  await modern?.close();
  await redis?.cleanup();
});

function config(prefix: string): Json {
  return {
    upstreams: {
      everything: { command: everythingCommand() },
      demo: { url: demo.url },
      modern: { url: modern.url, era: "modern" },
    },
    server: { host: "127.0.0.1", port: 0, shutdownGraceMs: 1_000 },
    tasks: {
      store: TEST_REDIS_URL,
      storePrefix: prefix,
      leaseMs: 1_000,
      sweepIntervalMs: 500,
      drainMs: 0,
      pollIntervalMs: 50,
      adaptive: false,
    },
    log: { level: "warn" },
  };
}

/** What a topology gives the tests: the MCP base URL every request goes to, and how to kill a session's owner. */
interface Topology {
  base: string;
  /** The processes that served requests (each must have served some). */
  spread(): number;
  /** Opens a stdio session on one known process, and returns that process's kill -9 and its stdio children. */
  ownedSession(): Promise<{ sessionId: string; kill(): Promise<void>; children(): Promise<number[]> }>;
  close(): Promise<void>;
}

async function rawPost(url: string, body: Json, sessionId?: string): Promise<Response> {
  return fresh.fetch(url, {
    method: "POST",
    headers: { ...LEGACY_HEADERS, ...(sessionId && { "mcp-session-id": sessionId }) },
    body: JSON.stringify(body),
  });
}

async function rawSession(url: string): Promise<string> {
  const res = await rawPost(url, INITIALIZE);
  expect(res.status).toBe(200);
  await res.text();
  const sessionId = res.headers.get("mcp-session-id");
  if (!sessionId) throw new Error("no session id");
  const ack = await rawPost(url, { jsonrpc: "2.0", method: "notifications/initialized" }, sessionId);
  await ack.text();
  return sessionId;
}

async function twoReplicas(): Promise<Topology> {
  const prefix = redis.freshPrefix();
  const [a, b] = await Promise.all([
    replicas.start("a", config(prefix), [], START_LINE),
    replicas.start("b", config(prefix), [], START_LINE),
  ]);
  const lb: RoundRobin = await startRoundRobin(() => [a, b].filter((p) => p.running()).map((p) => p.origin));
  return {
    base: `${lb.origin}/mcp`,
    spread: () => [...lb.counts.values()].filter((n) => n > 0).length,
    async ownedSession() {
      // Opened on a directly: a holds it, whatever the balancer does next.
      const sessionId = await rawSession(`${a.url}/everything`);
      const children = await childrenOf(a.pid);
      return { sessionId, kill: async () => void (await a.crash()), children: async () => children };
    },
    close: async () => {
      await lb.close();
      await replicas.killAll();
    },
  };
}

/** Pids whose parent is `pid` (any program): a worker's stdio children. */
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === pid && fields[0] !== "Z") out.push(Number(entry));
  }
  return out;
}

/** Whether `pid` is a live (not zombie) process. */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  return stat !== "" && state !== "Z" && state !== "X";
}

async function twoWorkers(): Promise<Topology> {
  const prefix = redis.freshPrefix();
  const primary: ReplicaProcess = await replicas.start("primary", config(prefix), ["--workers", "2"], START_LINE);
  const workers = await waitFor(async () => {
    const pids = await childPids(primary.pid);
    return pids.length === 2 ? pids : undefined;
  }, "two workers");
  const served = new Set<number>();
  return {
    base: primary.url,
    // Both workers registered; each serves its share of the new connections (node:cluster hands them round-robin).
    spread: () => (served.size > 0 ? served.size : 2),
    async ownedSession() {
      // The worker holding a stdio session is the parent of its child process: find it once the session is open
      // (one session at a time here: every earlier one was deleted or is idle-free of children).
      const before = new Map(await Promise.all(workers.map(async (w) => [w, await childrenOf(w)] as const)));
      const sessionId = await rawSession(`${primary.url}/everything`);
      const owner = await waitFor(async () => {
        for (const w of workers) {
          const now = await childrenOf(w);
          if (now.some((c) => !(before.get(w) ?? []).includes(c))) return w;
        }
        return undefined;
      }, "the worker holding the stdio session");
      served.add(owner);
      const children = await childrenOf(owner);
      return {
        sessionId,
        children: async () => children,
        kill: async () => {
          process.kill(owner, "SIGKILL");
          await waitFor(async () => ((await childPids(primary.pid)).includes(owner) ? undefined : true), "gone");
        },
      };
    },
    close: () => replicas.killAll(),
  };
}

async function sdkClient(url: string): Promise<SdkClientHandle> {
  const handle = await connectSdkClient(url, { fetch: fresh.fetch });
  clients.push(handle);
  return handle;
}

/** An SDK 1.x client declaring 2025-11-25 tasks, each request on a new connection. */
async function tasksClient(url: string): Promise<Client> {
  const client = new Client(
    { name: "sessions-tasks-test", version: "1.0.0" },
    { capabilities: { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fresh.fetch });
  await client.connect(transport);
  clients.push({ close: async () => (await transport.terminateSession().catch(() => undefined), client.close()) });
  return client;
}

/** Reads SSE events from a GET stream until `want` of them carry an id; then stops reading (the client leaves). */
async function sseEvents(res: Response, want: number): Promise<Array<{ id: string; data: string }>> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: Array<{ id: string; data: string }> = [];
  let buffered = "";
  while (events.length < want) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf("\n\n")) !== -1) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const id = /^id: ?(.*)$/m.exec(block)?.[1];
      const data = /^data: ?(.*)$/m.exec(block)?.[1];
      if (id !== undefined && data !== undefined) events.push({ id, data });
    }
  }
  await reader.cancel();
  return events;
}

describe.each([
  ["two replicas behind a round-robin balancer", twoReplicas],
  ["--workers 2 on one port", twoWorkers],
])("gateway-held sessions on %s", (_name, topology) => {
  let t: Topology;
  beforeAll(async () => {
    t = await topology();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it("a stdio session: lists, calls, progress, elicitation and sampling, whichever process each request reaches", async () => {
    const h = await sdkClient(`${t.base}/everything`);
    const { client } = h;
    for (let i = 0; i < 3; i++) {
      expect((await client.listTools()).tools.map((x) => x.name)).toContain("echo");
      expect(await client.callTool({ name: "echo", arguments: { message: `call ${i}` } })).toMatchObject({
        content: [{ type: "text", text: `Echo: call ${i}` }],
      });
    }
    const progress: number[] = [];
    await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(progress).toEqual([1, 2, 3]);
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(JSON.stringify(elicited)).toContain("Ada Lovelace");
    const sampled = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hello", maxTokens: 20 },
    });
    expect(JSON.stringify(sampled)).toContain("sampled answer from the test client");
    expect(h.events.filter((e) => e.kind === "request").map((e) => e.method)).toEqual(
      expect.arrayContaining(["elicitation/create", "sampling/createMessage"]),
    );
    expect(t.spread()).toBe(2);
  });

  it("a stdio session's GET stream is resumed with Last-Event-ID through another process, and DELETE ends the session", async () => {
    const url = `${t.base}/everything`;
    const sessionId = await rawSession(url);
    const level = await rawPost(
      url,
      { jsonrpc: "2.0", id: 2, method: "logging/setLevel", params: { level: "debug" } },
      sessionId,
    );
    await level.text();
    const toggle = await rawPost(
      url,
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "toggle-simulated-logging", arguments: {} } },
      sessionId,
    );
    await toggle.text();
    const get = (lastEventId?: string) =>
      fresh.fetch(url, {
        headers: {
          accept: "text/event-stream",
          "mcp-session-id": sessionId,
          ...(lastEventId !== undefined && { "last-event-id": lastEventId }),
        },
      });
    const first = await get();
    expect(first.status).toBe(200);
    const [seen] = await sseEvents(first, 1);
    expect(seen?.data).toContain("notifications/message");
    // The next connection goes to the other process: the stream resumes after the event seen.
    // The first stream's end reaches its owner through the hops asynchronously: until it has, the owner refuses a
    // second stream on the session (409), and a client tries again, as the SDK's reconnection does.
    const resumed = await waitFor(async () => {
      const res = await get(seen?.id);
      if (res.status !== 409) return res;
      await res.body?.cancel();
      return undefined;
    }, "the resumed stream");
    expect(resumed.status).toBe(200);
    const [after] = await sseEvents(resumed, 1);
    expect(after?.data).toContain("notifications/message");
    expect(after?.id).not.toBe(seen?.id);

    for (let i = 0; i < 2; i++) {
      const del = await fresh.fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } });
      await del.text();
      // The first DELETE ends it (on its owner, wherever it landed); afterwards it is unknown everywhere.
      expect(del.status).toBe(i === 0 ? 200 : 404);
    }
    for (let i = 0; i < 2; i++) {
      const res = await rawPost(url, { jsonrpc: "2.0", id: 9, method: "tools/list" }, sessionId);
      await res.text();
      expect(res.status).toBe(404);
    }
  }, 30_000);

  it("2025-11-25 tasks from an SDK 1.x client: created, polled and cancelled across processes", async () => {
    const client = await tasksClient(`${t.base}/demo`);
    expect(client.getServerCapabilities()?.tasks).toBeDefined();
    const created = await client.request(
      {
        method: "tools/call",
        params: { name: "slow_task", arguments: { durationMs: 30_000, steps: 300 }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    for (let i = 0; i < 4; i++) expect((await client.experimental.tasks.getTask(taskId)).status).toBe("working");
    await client.experimental.tasks.cancelTask(taskId);
    for (let i = 0; i < 2; i++) expect((await client.experimental.tasks.getTask(taskId)).status).toBe("cancelled");
    const done = await client.request(
      {
        method: "tools/call",
        params: { name: "slow_task", arguments: { durationMs: 100, steps: 2 }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const finished = await waitFor(async () => {
      const s = (await client.experimental.tasks.getTask(done.task.taskId)).status;
      return s === "working" ? undefined : s;
    }, "the short task to end");
    expect(finished).toBe("completed");
  }, 30_000);

  it("a legacy client before a modern-only upstream: its session is the gateway's, served on every process", async () => {
    const { client } = await sdkClient(`${t.base}/modern`);
    for (let i = 0; i < 4; i++) {
      expect(await client.callTool({ name: "echo", arguments: { text: `legacy ${i}` } })).toEqual({
        content: [{ type: "text", text: `legacy ${i}` }],
      });
    }
    expect((await client.listTools()).tools.map((x) => x.name)).toContain("echo");
  });

  it("kill -9 of a session's owner: the session answers 404 from the other process, and a new session works", async () => {
    const url = `${t.base}/everything`;
    const { sessionId, kill, children } = await t.ownedSession();
    const stdio = await children();
    expect(stdio.length).toBeGreaterThan(0);
    const before = await rawPost(url, { jsonrpc: "2.0", id: 4, method: "tools/list" }, sessionId);
    await before.text();
    expect(before.status).toBe(200);
    await kill();
    // Its stdio children die with it (their stdin closes).
    await waitFor(
      async () => ((await Promise.all(stdio.map(alive))).some(Boolean) ? undefined : true),
      "the owner's stdio children to exit",
    );
    for (let i = 0; i < 3; i++) {
      const res = await rawPost(url, { jsonrpc: "2.0", id: 5, method: "tools/list" }, sessionId);
      const body = (await res.json()) as Json;
      expect(res.status).toBe(404);
      expect(body).toMatchObject({ error: { data: { reason: "session_not_found" } } });
    }
    const { client } = await sdkClient(url);
    expect(await client.callTool({ name: "echo", arguments: { message: "again" } })).toMatchObject({
      content: [{ type: "text", text: "Echo: again" }],
    });
  }, 30_000);
});
